/* SPDX-License-Identifier: MIT */
/* OpenMP regions into the calling thread's stream (omp_record.h), and the "openmp" source. */
#include "omp_record.h"

#include <stdatomic.h>

#include "../sources/source.h"

#define OMP_DEPTH 48 /* open OpenMP regions a thread can have; deeper ones are counted */
/* Regions this deep and deeper end with a REGION_END: where their records are is not kept
 * (initial-exec TLS must fit the surplus glibc keeps for `syscope attach`'s dlopen). */
#define OMP_AMEND_DEPTH 16
#define OMP_TEXT 512 /* name, category and arguments of one region */
#define OMP_CATEGORY "openmp"

bool omp_ompt_active;
static bool tracing_on, writer_asked;

/* Where a region's end goes (see omp_record.h): its OMP_REGION record, or one of these. */
#define END_RECORD ((struct sc_rec_omp_region *)0)  /* a REGION_END (after a REGION_BEGIN) */
#define END_NOTHING ((struct sc_rec_omp_region *)8) /* its begin was lost: no end */
#define END_PARENT ((struct sc_rec_omp_region *)16) /* held by its parallel's (format.h) */

/* What this thread has open (see omp_record.h); `over` counts begins past OMP_DEPTH. */
static RT_TLS struct {
	uint8_t depth;
	uint8_t kind[OMP_DEPTH];
	uint32_t over;
	struct sc_rec_omp_region *end[OMP_AMEND_DEPTH];
	uint64_t start[OMP_AMEND_DEPTH]; /* kept here: the record may be unmapped by its end */
	/* The last PARALLEL_TEAM record begun: its depth + 1 (0: none) and `requested`, for the
	 * implicit task that it can hold. */
	uint8_t team_at;
	uint16_t team_requested;
} open_regions;

static atomic_ulong too_deep, unmatched;

bool omp_tracing(void)
{
	return tracing_on && rt_recording();
}

/* Each kind's name and the category, as the record holds them ("omp barrier\0openmp\0"). */
static const struct {
	const char *text;
	uint32_t name_len, len;
} prefixes[OMP_NKINDS] = {
#define SC_OMP_KIND(e, id, name) \
	[id] = { name "\0" OMP_CATEGORY, sizeof(name), sizeof(name "\0" OMP_CATEGORY) },
#include "../../store/omp_events.def"
#undef SC_OMP_KIND
};

#define OMP_MAX_ARGS 4
#define VALUE_MAX 64 /* a number's text, or a string argument's (longer ones are cut) */

/* Short copies: a loop beats the library's call at these sizes (see user_api.c). */
static inline void copy_short(char *dst, const char *src, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		dst[i] = src[i];
}

/* An argument's value as the record holds it, NUL included; returns its length. */
static uint32_t format_value(const struct omp_arg *a, char *out)
{
	char digits[24];
	uint32_t n = 0, at = 0;
	bool hex = a->head[0] == SC_ARG_POINTER;
	uint64_t v = a->value;

	if (a->text) {
		while (a->text[n] && n < VALUE_MAX - 1)
			out[n] = a->text[n], n++;
		out[n] = '\0';
		return n + 1;
	}
	do {
		digits[n++] = "0123456789abcdef"[hex ? v & 15 : v % 10];
		v = hex ? v >> 4 : v / 10;
	} while (v);
	if (hex) {
		out[at++] = '0';
		out[at++] = 'x';
	}
	while (n)
		out[at++] = digits[--n];
	out[at++] = '\0';
	return at;
}

/* The record is written in place: measured, reserved, filled, committed. Returns where its
 * end goes. */
static struct sc_rec_omp_region *write_begin(enum omp_kind kind, uint64_t ts,
					     const struct omp_arg *args, unsigned nargs)
{
	char values[OMP_MAX_ARGS][VALUE_MAX];
	uint32_t value_len[OMP_MAX_ARGS], args_len = 0, used, size;
	struct sc_rec_region *r;
	char *text;

	nargs = nargs < OMP_MAX_ARGS ? nargs : OMP_MAX_ARGS;
	for (unsigned i = 0; i < nargs; i++) {
		value_len[i] = format_value(&args[i], values[i]);
		args_len += args[i].head_len + value_len[i];
	}
	used = (uint32_t)sizeof(*r) + prefixes[kind].len + args_len;
	size = sc_record_align(used);
	if (!(r = rt_reserve(size)))
		return END_NOTHING; /* counted as lost */
	r->ts = ts;
	r->name_len = prefixes[kind].name_len;
	r->cat_len = prefixes[kind].len - prefixes[kind].name_len;
	r->args_len = args_len;
	r->nargs = nargs;
	r->corr_id = 0;
	text = (char *)(r + 1);
	copy_short(text, prefixes[kind].text, prefixes[kind].len);
	text += prefixes[kind].len;
	for (unsigned i = 0; i < nargs; i++) {
		copy_short(text, args[i].head, args[i].head_len);
		text += args[i].head_len;
		copy_short(text, values[i], value_len[i]);
		text += value_len[i];
	}
	copy_short(text, "\0\0\0\0\0\0\0", size - used); /* the padding */
	rt_commit(r, SC_REC_REGION_BEGIN, 0, size);
	rt_counters_read_region(ts);
	return END_RECORD;
}

static void write_end(uint64_t ts)
{
	struct sc_rec_region_end *r = rt_reserve(sizeof(*r));

	if (r) {
		r->ts = ts;
		rt_commit(r, SC_REC_REGION_END, 0, sizeof(*r));
	}
}

/* A construct whose arguments are all numbers as OMP_REGION (format.h), its end to come;
 * returns where its end goes. The record's spare half word takes a first argument that fits
 * 32 bits, or two that fit 16 (an implicit task's member id and team size): 8 or 16 bytes
 * fewer. */
static struct sc_rec_omp_region *write_numbers(uint32_t flags, uint64_t ts, uint64_t first,
					       uint64_t second)
{
	unsigned nargs = SC_OMP_NARGS(flags), narrow = nargs && first <= UINT32_MAX;
	bool pair = nargs == 2 && SC_OMP_PAIR_FITS(first, second) &&
		    SC_OMP_KIND_OF(flags) != SC_OMP_PARALLEL_TEAM;
	uint32_t size = (uint32_t)sizeof(struct sc_rec_omp_region) + 8 * (nargs - narrow - pair);
	struct sc_rec_omp_region *r = rt_reserve(size);
	uint64_t *wide;

	if (!r) {
		rt_counters_read_region(ts);
		return END_NOTHING; /* counted as lost */
	}
	wide = (uint64_t *)(r + 1);
	r->ts = ts;
	r->dur = 0;
	if (pair) {
		r->first = (uint32_t)(first | second << 16);
	} else if (narrow) {
		r->first = (uint32_t)first;
		if (nargs > 1)
			wide[0] = second;
	} else {
		r->first = 0;
		if (nargs)
			wide[0] = first;
		if (nargs > 1)
			wide[1] = second;
	}
	rt_commit(r, SC_REC_OMP_REGION, (uint16_t)flags, size);
	rt_counters_read_region(ts);
	return r;
}

/*
 * A team's implicit task on the thread that began its parallel region (the master's; every
 * serialized region's) takes the region's begin time and ends with the region: two clock
 * reads fewer a region. What this loses: on that thread, the runtime's work between the
 * region's begin and the task's (forking the team) and between their ends (after the team
 * joined) counts in the task as well as the region.
 */
static bool task_of_own_region(unsigned kind, unsigned at)
{
	return kind == OMP_IMPLICIT_TASK && at && at - 1 < OMP_AMEND_DEPTH &&
	       open_regions.kind[at - 1] == OMP_PARALLEL;
}

/* A region of `kind` opens at this thread's depth `at`: its begin time into `*ts`. False
 * when it is not recorded (too deep: counted). */
static inline bool open_region(unsigned kind, unsigned at, uint64_t *ts)
{
	/* The chunks' writes off the program's threads, once the runtime runs a thread of its
	 * own (a team of one, OMP_NUM_THREADS=1, stays a single-threaded process). */
	if (__builtin_expect(!writer_asked, 0) && rt_self.tid != rt_proc.pid) {
		writer_asked = true;
		rt_writer_start();
	}
	if (__builtin_expect(at >= OMP_DEPTH, 0)) {
		open_regions.over++;
		atomic_fetch_add_explicit(&too_deep, 1, memory_order_relaxed);
		return false;
	}
	*ts = task_of_own_region(kind, at) ? open_regions.start[at - 1] : rt_now_ns();
	open_regions.kind[at] = (uint8_t)kind;
	open_regions.depth = (uint8_t)(at + 1);
	return true;
}

/* Where the end of the region opened at depth `at` goes (deeper: a REGION_END, even after a
 * lost begin). */
static inline void keep_end(unsigned at, uint64_t ts, struct sc_rec_omp_region *record)
{
	if (at < OMP_AMEND_DEPTH) {
		open_regions.start[at] = ts;
		open_regions.end[at] = record;
	}
}

/* The implicit task (member `thread` of `team`) that opens at depth `at` into its parallel
 * region's record, when that record is a PARALLEL_TEAM one still in the thread's chunk
 * (format.h): one record, one reservation and one end fewer a region. */
static bool task_into_region(unsigned at, uint64_t thread, uint64_t team)
{
	unsigned p = at - 1;
	struct sc_rec_omp_region *r = open_regions.end[p];

	if (open_regions.team_at != at || thread || !team || team > 0xffff)
		return false;
	open_regions.team_at = 0;
	return rt_amend_u32(r, open_regions.start[p], &r->first,
			    open_regions.team_requested | (uint32_t)team << 16);
}

void omp_begin_numbers(uint32_t flags, uint64_t first, uint64_t second)
{
	unsigned kind = SC_OMP_KIND_OF(flags), at = open_regions.depth;
	struct sc_rec_omp_region *r;
	uint64_t ts;

	if (!omp_tracing() || kind - 1u >= OMP_NKINDS - 1u || !open_region(kind, at, &ts))
		return;
	if (kind == OMP_IMPLICIT_TASK && task_of_own_region(kind, at) &&
	    task_into_region(at, first, second)) {
		keep_end(at, ts, END_PARENT);
		rt_counters_read_region(ts);
		return;
	}
	open_regions.team_at = 0; /* only the region's next begin can be its task */
	if (kind == OMP_PARALLEL && SC_OMP_NARGS(flags) == 2 && first <= 0xffff &&
	    at < OMP_AMEND_DEPTH) {
		flags = (flags & ~0x3fu) | SC_OMP_PARALLEL_TEAM;
		r = write_numbers(flags, ts, first, second);
		if (r > END_PARENT) {
			open_regions.team_at = (uint8_t)(at + 1);
			open_regions.team_requested = (uint16_t)first;
		}
	} else {
		r = write_numbers(flags, ts, first, second);
	}
	keep_end(at, ts, r);
}

void omp_begin_text(enum omp_kind kind, const struct omp_arg *args, unsigned nargs)
{
	unsigned at = open_regions.depth;
	uint64_t ts;

	if (!omp_tracing() || kind <= 0 || kind >= OMP_NKINDS || !open_region(kind, at, &ts))
		return;
	open_regions.team_at = 0;
	keep_end(at, ts, write_begin(kind, ts, args, nargs));
}

/* Region `k`'s end at `ts`: into its record where it still can be, else a REGION_END (two
 * when `holds_task`: its record holds the task inside it, which readers opened too). */
static void end_region(unsigned k, uint64_t ts, bool holds_task)
{
	struct sc_rec_omp_region *r = k < OMP_AMEND_DEPTH ? open_regions.end[k] : END_RECORD;
	uint64_t dur;

	if (r == END_NOTHING || r == END_PARENT)
		return; /* a task held by its parallel's record ends with it */
	if (r == END_RECORD) {
		write_end(ts);
		return;
	}
	dur = ts > open_regions.start[k] ? ts - open_regions.start[k] : 1;
	if (dur > UINT32_MAX || !rt_amend_u32(r, open_regions.start[k], &r->dur, (uint32_t)dur)) {
		if (holds_task)
			write_end(ts);
		write_end(ts); /* 4.3 s or longer, or the record left the chunk */
	}
}

/* Whether the region at depth `k` is a task held by its parallel's record. */
static inline bool held_task(unsigned k)
{
	return k < OMP_AMEND_DEPTH && open_regions.end[k] == END_PARENT;
}

static __attribute__((noinline)) void end_open(enum omp_kind kind)
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
	if (i == open_regions.depth - 1 && task_of_own_region(kind, (unsigned)i))
		return; /* it ends with its region */
	ts = rt_now_ns();
	/* Regions a runtime left open inside this one end with it. A task held by its parallel's
	 * record stays open under them: it ends with the region. */
	for (int k = open_regions.depth - 1; k >= i; k--) {
		if (k == i && held_task((unsigned)k)) {
			i++;
			break;
		}
		end_region((unsigned)k, ts,
			   k + 1 < open_regions.depth && held_task((unsigned)k + 1));
	}
	open_regions.depth = (uint8_t)i;
	if (open_regions.team_at > i)
		open_regions.team_at = 0;
	rt_counters_read_region(ts);
}

void omp_end(enum omp_kind kind)
{
	int top = open_regions.depth - 1;

	/* The master's implicit task, which ends with its region (end_open's first return), is
	 * half of the ends of a program's regions: no frame for it. */
	if (top >= 0 && open_regions.kind[top] == kind && !open_regions.over &&
	    task_of_own_region(kind, (unsigned)top))
		return;
	end_open(kind);
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
	open_regions.team_at = 0;
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
