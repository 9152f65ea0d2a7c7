/* SPDX-License-Identifier: MIT */
/* OpenMP regions into the calling thread's stream (omp_record.h), and the "openmp" source. */
#include "omp_record.h"

#include <stdatomic.h>
#include <string.h>

#include "../sources/source.h"

#define OMP_DEPTH 48 /* open OpenMP regions a thread can have; deeper ones are counted */
#define OMP_TEXT 512 /* name, category and arguments of one region */
#define OMP_CATEGORY "openmp"

static const char *const kind_names[OMP_NKINDS] = {
	[OMP_PARALLEL] = "omp parallel",
	[OMP_IMPLICIT_TASK] = "omp implicit task",
	[OMP_TASK] = "omp task",
	[OMP_BARRIER] = "omp barrier",
	[OMP_IMPLICIT_BARRIER] = "omp implicit barrier",
	[OMP_TASKWAIT] = "omp taskwait",
	[OMP_TASKGROUP] = "omp taskgroup",
	[OMP_REDUCTION] = "omp reduction",
	[OMP_LOOP] = "omp loop",
	[OMP_SECTIONS] = "omp sections",
	[OMP_SINGLE] = "omp single",
	[OMP_WORKSHARE] = "omp workshare",
	[OMP_DISTRIBUTE] = "omp distribute",
	[OMP_TASKLOOP] = "omp taskloop",
	[OMP_CRITICAL] = "omp critical",
	[OMP_CRITICAL_WAIT] = "omp critical wait",
	[OMP_LOCK] = "omp lock",
	[OMP_LOCK_WAIT] = "omp lock wait",
	[OMP_ORDERED] = "omp ordered",
	[OMP_ORDERED_WAIT] = "omp ordered wait",
	[OMP_TARGET] = "omp target",
	[OMP_TARGET_DATA] = "omp target data",
};

bool omp_ompt_active;
static bool tracing_on;

/* What this thread has open (see omp_record.h); `over` counts begins past OMP_DEPTH. */
static RT_TLS struct {
	uint8_t depth;
	uint8_t kind[OMP_DEPTH];
	uint32_t over;
} open_regions;

static atomic_ulong too_deep, unmatched;

bool omp_tracing(void)
{
	return tracing_on && rt_recording();
}

const char *omp_kind_name(enum omp_kind kind)
{
	return kind > 0 && kind < OMP_NKINDS ? kind_names[kind] : "omp";
}

static uint32_t put_text(char *buf, uint32_t at, const char *s)
{
	size_t n = strlen(s) + 1;

	if (at + n > OMP_TEXT)
		return OMP_TEXT + 1;
	memcpy(buf + at, s, n);
	return at + (uint32_t)n;
}

/* A number as decimal text (or 0x-hex for an address): snprintf costs more than the region. */
static uint32_t put_number(char *buf, uint32_t at, uint64_t v, bool hex)
{
	char digits[24];
	unsigned n = 0, base = hex ? 16 : 10;

	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (at + n + 3 > OMP_TEXT)
		return OMP_TEXT + 1;
	if (hex) {
		buf[at++] = '0';
		buf[at++] = 'x';
	}
	while (n)
		buf[at++] = digits[--n];
	buf[at++] = '\0';
	return at;
}

static uint32_t put_arg(char *buf, uint32_t at, const struct omp_arg *a)
{
	char type[2] = { a->text ? SC_ARG_STRING : a->pointer ? SC_ARG_POINTER : SC_ARG_UINT, 0 };

	at = put_text(buf, at, type);
	if (at <= OMP_TEXT)
		at = put_text(buf, at, a->name);
	if (at > OMP_TEXT)
		return at;
	return a->text ? put_text(buf, at, a->text) : put_number(buf, at, a->value, a->pointer);
}

static void write_begin(enum omp_kind kind, uint64_t ts, const struct omp_arg *args, unsigned nargs)
{
	struct sc_rec_region r = { .ts = ts };
	char buf[OMP_TEXT];
	uint32_t len = put_text(buf, 0, kind_names[kind]);

	r.name_len = len;
	len = put_text(buf, len, OMP_CATEGORY);
	r.cat_len = len - r.name_len;
	for (unsigned i = 0; i < nargs; i++) {
		uint32_t next = put_arg(buf, len, &args[i]);

		if (next > OMP_TEXT)
			break; /* cannot happen with our names; keep the arguments that fit */
		len = next;
		r.nargs++;
	}
	r.args_len = len - r.name_len - r.cat_len;
	rt_record(SC_REC_REGION_BEGIN, 0, &r.ts, sizeof(r) - sizeof(r.hdr), buf, len);
	rt_counters_read_region(ts);
}

static void write_end(uint64_t ts)
{
	struct sc_rec_region_end *r = rt_reserve(sizeof(*r));

	if (r) {
		r->ts = ts;
		rt_commit(r, SC_REC_REGION_END, 0, sizeof(*r));
	}
}

void omp_begin(enum omp_kind kind, const struct omp_arg *args, unsigned nargs)
{
	if (!omp_tracing() || kind <= 0 || kind >= OMP_NKINDS)
		return;
	if (open_regions.depth >= OMP_DEPTH) {
		open_regions.over++;
		atomic_fetch_add_explicit(&too_deep, 1, memory_order_relaxed);
		return;
	}
	open_regions.kind[open_regions.depth++] = (uint8_t)kind;
	write_begin(kind, rt_now_ns(), args, nargs);
}

void omp_end(enum omp_kind kind)
{
	int i = open_regions.depth - 1;
	uint64_t ts;

	if (!tracing_on || !rt_active())
		return;
	if (open_regions.over) {
		open_regions.over--;
		return;
	}
	while (i >= 0 && open_regions.kind[i] != kind)
		i--;
	if (i < 0) {
		if (open_regions.depth)
			atomic_fetch_add_explicit(&unmatched, 1, memory_order_relaxed);
		return;
	}
	ts = rt_now_ns();
	/* Regions a runtime left open inside this one end with it. */
	for (int k = open_regions.depth - 1; k >= i; k--)
		write_end(ts);
	open_regions.depth = (uint8_t)i;
	rt_counters_read_region(ts);
}

/* ---- the source ---- */

static bool enabled(const struct sc_settings *s)
{
	return sc_bool(s, SC_SET_USE_OPENMP);
}

static int process_start(void)
{
	tracing_on = true;
	return 0;
}

/* The child of a fork inside a region begins with no region open in its own file. */
static void fork_child(void)
{
	open_regions.depth = 0;
	open_regions.over = 0;
}

static void process_stop(void)
{
	unsigned long deep = atomic_load(&too_deep), odd = atomic_load(&unmatched);

	if (deep)
		rt_note(SC_NOTE_WARN,
			"openmp: %lu regions nested deeper than %d OpenMP regions were not recorded",
			deep, OMP_DEPTH);
	if (odd)
		rt_note(SC_NOTE_INFO,
			"openmp: %lu region ends came without their begin and were left out", odd);
}

const struct rt_source rt_source_openmp = {
	.name = "openmp",
	.enabled = enabled,
	.process_start = process_start,
	.fork_child = fork_child,
	.process_stop = process_stop,
};
