/* SPDX-License-Identifier: MIT */
/*
 * The user API of include/syscope/syscope.h: regions, marks and counters recorded into the
 * calling thread's stream. Not for signal handlers (it formats numbers and may take the
 * counter-track lock), but allocation-free.
 */
#include "rt.h"
#include "causal/causal.h"
#include "sources/source.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "syscope/syscope.h"

#define MAX_RECORD_TEXT 8192 /* name, category and arguments together */
#define MAX_COUNTER_TRACKS 1024

struct text {
	char buf[MAX_RECORD_TEXT];
	uint32_t len;
	bool full;
};

static void put(struct text *t, const char *s)
{
	size_t n = strlen(s ? s : "") + 1;

	if (t->full || t->len + n > sizeof(t->buf)) {
		t->full = true;
		return;
	}
	memcpy(t->buf + t->len, s ? s : "", n);
	t->len += (uint32_t)n;
}

static void put_arg(struct text *t, const struct syscope_arg *a)
{
	static const char types[] = { [SYSCOPE_ARG_INT] = SC_ARG_INT,
				      [SYSCOPE_ARG_UINT] = SC_ARG_UINT,
				      [SYSCOPE_ARG_DOUBLE] = SC_ARG_DOUBLE,
				      [SYSCOPE_ARG_STRING] = SC_ARG_STRING,
				      [SYSCOPE_ARG_POINTER] = SC_ARG_POINTER };
	char type[2] = { 's', 0 }, value[64];

	if ((unsigned)a->type < sizeof(types))
		type[0] = types[a->type];
	switch (a->type) {
	case SYSCOPE_ARG_INT:
		snprintf(value, sizeof(value), "%lld", a->value.i);
		break;
	case SYSCOPE_ARG_UINT:
		snprintf(value, sizeof(value), "%llu", a->value.u);
		break;
	case SYSCOPE_ARG_DOUBLE:
		snprintf(value, sizeof(value), "%.17g", a->value.d);
		break;
	case SYSCOPE_ARG_POINTER:
		snprintf(value, sizeof(value), "0x%llx", (unsigned long long)(uintptr_t)a->value.p);
		break;
	default:
		put(t, type);
		put(t, a->name);
		put(t, a->value.s);
		return;
	}
	put(t, type);
	put(t, a->name);
	put(t, value);
}

/* Names are short: a loop beats the library's copy, whose dispatch costs more than the
 * copy itself at these sizes. */
static inline void copy_short(char *dst, const char *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i];
}

/* A region or mark without arguments, written in place: most regions are only a name, and
 * the general path's staging buffer and copies were half of their cost. */
static bool record_named(uint16_t type, uint64_t ts, const char *category, const char *name)
{
	size_t name_len = strlen(name) + 1, cat_len = strlen(category) + 1;
	uint32_t used = (uint32_t)(sizeof(struct sc_rec_region) + name_len + cat_len), size;
	struct sc_rec_region *r;
	char *text;

	if (name_len + cat_len > MAX_RECORD_TEXT)
		return false;
	size = sc_record_align(used);
	if (!(r = rt_reserve(size)))
		return true; /* counted as lost */
	r->ts = ts;
	r->name_len = (uint32_t)name_len;
	r->cat_len = (uint32_t)cat_len;
	r->args_len = 0;
	r->nargs = 0;
	r->corr_id = 0;
	text = (char *)(r + 1);
	copy_short(text, name, name_len);
	copy_short(text + name_len, category, cat_len);
	copy_short((char *)r + used, "\0\0\0\0\0\0\0", size - used); /* the padding */
	rt_commit(r, type, 0, size);
	return true;
}

static void record_region(uint16_t type, const char *category, const char *name,
			  const struct syscope_arg *args, unsigned nargs)
{
	struct sc_rec_region r = { .ts = rt_now_ns() };
	struct text t;

	if (!rt_recording())
		return;
	name = name && *name ? name : "(unnamed)";
	category = category && *category ? category : "user";
	if ((!nargs || !args) && record_named(type, r.ts, category, name))
		goto recorded;
	t.len = 0;
	t.full = false;
	put(&t, name);
	r.name_len = t.len;
	put(&t, category);
	r.cat_len = t.len - r.name_len;
	for (unsigned i = 0; i < nargs && args && !t.full; i++) {
		uint32_t before = t.len;

		put_arg(&t, &args[i]);
		if (t.full) {
			t.len = before; /* drop the argument that did not fit, keep the others */
			break;
		}
		r.nargs++;
	}
	r.args_len = t.len - r.name_len - r.cat_len;
	rt_record(type, 0, &r.ts, sizeof(r) - sizeof(r.hdr), t.buf, t.len);
recorded:
	if (type == SC_REC_REGION_BEGIN) /* counts up to here are outside the region */
		rt_counters_read_region(r.ts);
}

RT_EXPORT void syscope_region_begin(const char *name)
{
	record_region(SC_REC_REGION_BEGIN, NULL, name, NULL, 0);
}

RT_EXPORT void syscope_region_begin_args(const char *category, const char *name,
					 const struct syscope_arg *args, unsigned nargs)
{
	record_region(SC_REC_REGION_BEGIN, category, name, args, nargs);
}

RT_EXPORT void syscope_region_end(void)
{
	uint64_t ts = rt_now_ns();
	struct sc_rec_region_end *r;

	if (!rt_active())
		return;
	if ((r = rt_reserve(sizeof(*r)))) {
		r->ts = ts;
		rt_commit(r, SC_REC_REGION_END, 0, sizeof(*r));
	}
	rt_counters_read_region(ts);
}

RT_EXPORT void syscope_mark(const char *name)
{
	record_region(SC_REC_MARK, NULL, name, NULL, 0);
}

RT_EXPORT void syscope_mark_args(const char *category, const char *name,
				 const struct syscope_arg *args, unsigned nargs)
{
	record_region(SC_REC_MARK, category, name, args, nargs);
}

/* Counter tracks of this process, by (name, unit); defined once in the stream each. The
 * host telemetry source shares them (rt.h). */
static struct {
	pthread_mutex_t lock;
	unsigned n;
	char names[MAX_COUNTER_TRACKS][64];
	char units[MAX_COUNTER_TRACKS][16];
} tracks = { .lock = PTHREAD_MUTEX_INITIALIZER };

int rt_counter_track(const char *name, const char *unit)
{
	int id = -1;

	pthread_mutex_lock(&tracks.lock);
	for (unsigned i = 0; i < tracks.n; i++)
		if (!strncmp(tracks.names[i], name, sizeof(tracks.names[i]) - 1) &&
		    !strncmp(tracks.units[i], unit, sizeof(tracks.units[i]) - 1))
			id = (int)i;
	if (id < 0 && tracks.n < MAX_COUNTER_TRACKS) {
		struct sc_rec_counter_track r = { .ts = rt_now_ns(), .id = tracks.n };

		id = (int)tracks.n++;
		snprintf(tracks.names[id], sizeof(tracks.names[id]), "%s", name);
		snprintf(tracks.units[id], sizeof(tracks.units[id]), "%s", unit);
		{
			char buf[sizeof(tracks.names[0]) + sizeof(tracks.units[0])];

			r.name_len = (uint32_t)strlen(tracks.names[id]) + 1;
			r.unit_len = (uint32_t)strlen(tracks.units[id]) + 1;
			memcpy(buf, tracks.names[id], r.name_len);
			memcpy(buf + r.name_len, tracks.units[id], r.unit_len);
			rt_record(SC_REC_COUNTER_TRACK, 0, &r.ts, sizeof(r) - sizeof(r.hdr), buf,
				  r.name_len + r.unit_len);
		}
	}
	pthread_mutex_unlock(&tracks.lock);
	return id;
}

RT_EXPORT void syscope_counter(const char *name, const char *unit, double value)
{
	struct sc_rec_counter r = { .ts = rt_now_ns(), .value = value };
	int id;

	if (!rt_recording())
		return;
	id = rt_counter_track(name && *name ? name : "(unnamed)", unit ? unit : "");
	if (id < 0)
		return;
	r.track = (uint32_t)id;
	rt_record(SC_REC_COUNTER, 0, &r.ts, sizeof(r) - sizeof(r.hdr), NULL, 0);
}

/* Also while the process stops: telemetry's last reading is taken then. */
void rt_counter_value(int track, uint64_t ts, double value)
{
	struct sc_rec_counter r = { .ts = ts, .track = (uint32_t)track, .value = value };

	if (track >= 0 && atomic_load_explicit(&rt_proc.active, memory_order_relaxed))
		rt_record(SC_REC_COUNTER, 0, &r.ts, sizeof(r) - sizeof(r.hdr), NULL, 0);
}

/* A fork child records into a file of its own: its tracks must be defined there again. */
void rt_counters_fork_child(void)
{
	tracks.n = 0;
	pthread_mutex_init(&tracks.lock, NULL); /* the parent may have held it */
}

/* Pause and resume recording: a mark on the timeline at each edge, so the gap is visible. Only
 * new things stop: a region's end is still recorded (its begin may predate the pause). */
RT_EXPORT void syscope_pause(void)
{
	if (!rt_active())
		return;
	if (atomic_load(&rt_proc.paused) <= 0) /* the mark before recording stops */
		record_region(SC_REC_MARK, "syscope", "recording paused", NULL, 0);
	atomic_fetch_add(&rt_proc.paused, 1);
}

RT_EXPORT void syscope_resume(void)
{
	int before;

	if (!rt_active())
		return;
	before = atomic_fetch_sub(&rt_proc.paused, 1);
	if (before <= 0) /* resume without pause: undo, nothing to resume */
		atomic_fetch_add(&rt_proc.paused, 1);
	else if (before == 1)
		record_region(SC_REC_MARK, "syscope", "recording resumed", NULL, 0);
}

RT_EXPORT void syscope_progress(const char *name)
{
	record_region(SC_REC_MARK, "progress", name, NULL, 0);
	if (atomic_load_explicit(&rt_causal.on, memory_order_relaxed)) {
		struct rt_coz_counter *c = rt_causal_counter(SC_CAUSAL_THROUGHPUT, name);

		if (c) /* a causal progress point too */
			__atomic_fetch_add(&c->count, 1, __ATOMIC_RELAXED);
	}
}
