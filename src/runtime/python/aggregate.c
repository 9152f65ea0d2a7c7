/* SPDX-License-Identifier: MIT */
/* Python calls aggregated in the process: the slots and their FUNC_STATS (aggregate.h). */
#include "capi.h"
#include "internal.h"

#include <sys/mman.h>

#define TABLE_BYTES (RT_PY_AGG_IDS * sizeof(struct rt_py_agg))
#define FLUSH_NS 1000000000ull

struct rt_py_agg *rt_py_agg_table;
uint64_t rt_py_agg_rule_calls, rt_py_agg_rule_ns;
uint64_t rt_py_agg_flush_at = UINT64_MAX;
bool rt_py_agg_untimed;
static bool any_throttled; /* then every function's statistics are written */

bool rt_py_agg_init(void)
{
	const struct sc_settings *s = &rt_proc.settings;
	void *p;

	if (rt_py_agg_table || !sc_bool(s, SC_SET_PYTHON_THROTTLE))
		return rt_py_agg_table != NULL;
	rt_py_agg_rule_calls = (uint64_t)sc_int(s, SC_SET_PYTHON_THROTTLE_CALLS);
	rt_py_agg_rule_ns = (uint64_t)(sc_double(s, SC_SET_THROTTLE_US) * 1000.0);
	rt_py_agg_untimed = !sc_bool(s, SC_SET_PYTHON_THROTTLE_TIMED);
	/* Zero pages, made real as code ids are used. */
	p = mmap(NULL, TABLE_BYTES, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		rt_note(SC_NOTE_WARN, "Python tracing: no memory to aggregate calls in; every "
				      "call is recorded");
		return false;
	}
	rt_py_agg_table = p;
	rt_py_agg_flush_at = rt_now_ns() + FLUSH_NS;
	return true;
}

static bool has_stats(const struct rt_py_agg *s)
{
	return s->calls || s->hidden_ns || (s->outer_calls && any_throttled);
}

static void record_slot(uint32_t id, struct rt_py_agg *s)
{
	struct sc_rec_func_stats *r = rt_reserve(sizeof(*r));

	if (!r)
		return;
	r->id = id;
	r->throttled = s->throttled != 0;
	r->calls = s->calls;
	r->total_ns = s->total_ns;
	r->self_ns = s->self_ns;
	r->outer_calls = s->outer_calls;
	r->outer_ns = s->outer_ns;
	r->min_ns = s->min_ns;
	r->max_ns = s->max_ns;
	r->outer_sumsq = s->outer_sumsq;
	r->hidden_ns = s->hidden_ns;
	rt_commit(r, SC_REC_FUNC_STATS, SC_FUNC_PYTHON, sizeof(*r));
	/* Written: a second end (exec after exit's, a fatal signal) adds only what came after. */
	s->calls = s->total_ns = s->self_ns = s->hidden_ns = 0;
	s->outer_calls = s->outer_ns = s->min_ns = s->max_ns = 0;
	s->outer_sumsq = 0;
}

/* The calls counted, not timed (FUNC_COUNT, as a native function's after throttling). */
static void record_untimed(uint32_t id, struct rt_py_agg *s)
{
	struct sc_rec_func_count *r = rt_reserve(sizeof(*r));

	if (!r)
		return;
	r->id = id;
	r->reserved = 0;
	r->calls = s->untimed_calls;
	r->total_ns = 0; /* their time is in their callers' */
	rt_commit(r, SC_REC_FUNC_COUNT, SC_FUNC_PYTHON | SC_FUNC_UNTIMED, sizeof(*r));
	s->untimed_calls = 0;
}

void rt_py_agg_record(bool say)
{
	struct rt_py_agg *t = rt_py_agg_table;
	uint32_t throttled = 0, end = rt_py_codes_next_id();

	if (!t)
		return;
	for (uint32_t id = 1; id < RT_PY_AGG_IDS && id < end; id++)
		throttled += t[id].throttled != 0;
	any_throttled = throttled > 0;
	/* Ids are handed out in order from 1: past the last one the pages were never used. */
	for (uint32_t id = 1; id < RT_PY_AGG_IDS && id < end; id++) {
		if (has_stats(&t[id]))
			record_slot(id, &t[id]);
		if (t[id].untimed_calls)
			record_untimed(id, &t[id]);
	}
	if (say && throttled && rt_py_agg_untimed)
		rt_note(SC_NOTE_INFO,
			"Python tracing: %u function%s called more than %llu times at under %g "
			"us a call only counted from then on, not timed (exact calls; their "
			"time is in their callers'; --python-throttle-timed times them, "
			"--no-python-throttle records every call)",
			throttled, throttled == 1 ? "" : "s",
			(unsigned long long)rt_py_agg_rule_calls,
			(double)rt_py_agg_rule_ns / 1000.0);
	else if (say && throttled)
		rt_note(SC_NOTE_INFO,
			"Python tracing: %u function%s called more than %llu times at under %g "
			"us a call aggregated from then on (calls of %g us or longer still "
			"recorded; --no-python-throttle records every call)",
			throttled, throttled == 1 ? "" : "s",
			(unsigned long long)rt_py_agg_rule_calls,
			(double)rt_py_agg_rule_ns / 1000.0, (double)rt_py_agg_rule_ns / 1000.0);
}

void rt_py_agg_flush(uint64_t now)
{
	rt_py_agg_flush_at = now + FLUSH_NS;
	rt_py_agg_record(false);
}

void rt_py_agg_fork_child(void)
{
	if (rt_py_agg_table) /* fresh zero pages in place */
		mmap(rt_py_agg_table, TABLE_BYTES, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}
