/* SPDX-License-Identifier: MIT */
/*
 * Progress points of causal profiling. Coz's macros (coz.h) look up `_coz_get_counter`
 * (`__coz_get_counter` in later versions) with dlsym once per call site and then add 1 to
 * the count of the counter it returned; syscope_progress(name) counts into the same
 * table, and a --progress function or line counts the samples that land in it. Each point
 * is written once as a CAUSAL_POINT record; experiments carry the counts' deltas.
 */
#include "causal.h"

#include <string.h>

struct point {
	struct rt_coz_counter counter;
	atomic_int ready; /* name and kind are set */
	int kind;
	_Atomic int partner; /* a latency point's other end (BEGIN <-> END of one name), or -1 */
	_Atomic uint64_t delayed; /* BEGIN: sum of delay inserted x number in flight then, ns */
	char name[120];
};

static struct point table[RT_CAUSAL_MAX_POINTS];
static atomic_uint npoints;
static atomic_flag adding = ATOMIC_FLAG_INIT;

static struct point *lookup(int kind, const char *name)
{
	unsigned n = atomic_load(&npoints);

	for (unsigned i = 0; i < n; i++)
		if (atomic_load(&table[i].ready) && table[i].kind == kind &&
		    !strncmp(table[i].name, name, sizeof(table[i].name) - 1))
			return &table[i];
	return NULL;
}

static void record_point(unsigned id, int kind, const char *name)
{
	struct sc_rec_causal_point r = {
		.ts = rt_now_ns(),
		.id = id,
		.kind = (uint16_t)kind,
		.name_len = (uint16_t)(strlen(name) + 1),
	};

	rt_record(SC_REC_CAUSAL_POINT, 0, &r.ts, sizeof(r) - sizeof(r.hdr), name, r.name_len);
}

/* A new BEGIN or END point meets the other end of its name, if that exists already. */
static void pair(unsigned id)
{
	struct point *p = &table[id];
	int other = p->kind == SC_CAUSAL_BEGIN ? SC_CAUSAL_END
		    : p->kind == SC_CAUSAL_END ? SC_CAUSAL_BEGIN
					       : 0;
	struct point *q = other ? lookup(other, p->name) : NULL;

	atomic_store(&p->partner, q ? (int)(q - table) : -1);
	if (q)
		atomic_store(&q->partner, (int)id);
}

struct rt_coz_counter *rt_causal_counter(int kind, const char *name)
{
	struct point *p;
	unsigned id;

	if (!atomic_load(&rt_causal.on) && kind != SC_CAUSAL_SAMPLED)
		return NULL;
	if (!name)
		name = "";
	if ((p = lookup(kind, name)))
		return &p->counter;
	while (atomic_flag_test_and_set(&adding))
		;
	if (!(p = lookup(kind, name)) && (id = atomic_load(&npoints)) < RT_CAUSAL_MAX_POINTS) {
		p = &table[id];
		p->kind = kind;
		strncpy(p->name, name, sizeof(p->name) - 1);
		pair(id);
		atomic_store(&p->ready, 1);
		atomic_store(&npoints, id + 1);
		record_point(id, kind, p->name);
	}
	atomic_flag_clear(&adding);
	if (!p) {
		static atomic_int noted;

		if (!atomic_exchange(&noted, 1))
			rt_note(SC_NOTE_WARN,
				"causal: more than %d progress points; '%s' and later ones are "
				"not counted",
				RT_CAUSAL_MAX_POINTS, name);
		return NULL;
	}
	return &p->counter;
}

/* Sampled points are added first (at start, from the scope file), so their ids are the
 * scope file's numbers. */
void rt_causal_sampled_point(int64_t id)
{
	if (id >= 0 && id < (int64_t)atomic_load(&npoints))
		__atomic_fetch_add(&table[id].counter.count, 1, __ATOMIC_RELAXED);
}

unsigned rt_causal_read_points(uint64_t *counts, unsigned max)
{
	unsigned n = atomic_load(&npoints);

	n = n < max ? n : max;
	for (unsigned i = 0; i < n; i++)
		counts[i] = __atomic_load_n(&table[i].counter.count, __ATOMIC_RELAXED);
	return n;
}

static inline size_t in_flight_of(const struct point *begin, int end)
{
	size_t ended = __atomic_load_n(&table[end].counter.count, __ATOMIC_RELAXED);
	size_t began = __atomic_load_n(&begin->counter.count, __ATOMIC_RELAXED);

	return began > ended ? began - ended : 0;
}

bool rt_causal_add_in_flight(uint64_t *sums, unsigned max)
{
	unsigned n = atomic_load(&npoints);
	bool any = false;

	for (unsigned i = 0; i < n && i < max; i++) {
		int end = atomic_load(&table[i].partner);

		if (table[i].kind != SC_CAUSAL_BEGIN || end < 0)
			continue;
		sums[i] += in_flight_of(&table[i], end);
		any = true;
	}
	return any;
}

void rt_causal_delay_in_flight(uint64_t delay)
{
	unsigned n = atomic_load(&npoints);

	for (unsigned i = 0; i < n; i++) {
		int end = atomic_load(&table[i].partner);

		if (table[i].kind == SC_CAUSAL_BEGIN && end >= 0)
			atomic_fetch_add_explicit(&table[i].delayed,
						  delay * in_flight_of(&table[i], end),
						  memory_order_relaxed);
	}
}

void rt_causal_read_delayed(uint64_t *sums, unsigned max)
{
	unsigned n = atomic_load(&npoints);

	for (unsigned i = 0; i < n && i < max; i++)
		sums[i] = atomic_load_explicit(&table[i].delayed, memory_order_relaxed);
}

void rt_causal_points_fork_child(void)
{
	unsigned n = atomic_load(&npoints);

	for (unsigned i = 0; i < n; i++)
		if (atomic_load(&table[i].ready))
			record_point(i, table[i].kind, table[i].name);
}

/* Coz's entry points, same signature and counter layout as coz.h expects. */
RT_EXPORT void *_coz_get_counter(int type, const char *name);
RT_EXPORT void *__coz_get_counter(int type, const char *name);

RT_EXPORT void *_coz_get_counter(int type, const char *name)
{
	if (type < SC_CAUSAL_THROUGHPUT || type > SC_CAUSAL_END)
		return NULL;
	return rt_causal_counter(type, name);
}

RT_EXPORT void *__coz_get_counter(int type, const char *name)
{
	return _coz_get_counter(type, name);
}
