/* SPDX-License-Identifier: MIT */
/*
 * Python calls aggregated in the process (syscope python's default, --python-throttle): a
 * traced function called more than --throttle-calls times at under --throttle-us a call on
 * average (of its own time: rt_py_agg_rule in capi.h) is throttled, and from then on its
 * calls shorter than --throttle-us are not
 * written one by one but summed into its slot here (count, inclusive, self, min, max, sum
 * of squares), which a FUNC_STATS record carries at the image's end. Its longer calls, and
 * all calls before, stay FUNC_CALL records: the timeline keeps every call that took time.
 *
 * So that the profile stays exact, each call knows:
 * - whether it is inside a call of the same function on its thread (recursive: the reader
 *   counts a function's inclusive time once, so only outermost calls make min/max/mean).
 *   The reader cannot tell that of a recorded call whose caller of the same function was
 *   aggregated, so the slot keeps the statistics of all outermost calls, recorded or not,
 *   and those replace the reader's own for a throttled function. A slot's open calls
 *   belong to one thread at a time; a call another thread makes meanwhile is recorded
 *   whole and counted as outermost (wrong only if that thread recurses into it then);
 * - its traced children's time (its self time) and, of that, the part the reader will not
 *   see (aggregated children, less the recorded calls inside them): the reader takes that
 *   "hidden" time out of the recorded calls' self time.
 * Slots are indexed by code id and updated by the thread running Python, under the GIL
 * (free-threaded builds are not traced), so with plain loads and stores.
 *
 * Counted, not timed (the default; --python-throttle-timed keeps the above): once throttled,
 * a function's later calls are only counted, with no clock read and no slot update but the
 * count (FUNC_COUNT, SC_FUNC_UNTIMED); their time stays in their callers'. Its calls in
 * progress at that moment still end as timed calls. Under sys.monitoring its exits must then
 * be told apart: a per-thread count of counted calls open above the innermost timed one says
 * whether an exit is a counted call's (rt_py_open.above); once none of its calls is open
 * anywhere, its PY_RETURN and PY_YIELD are turned off (DISABLE), so that CPython no longer
 * calls syscope when it returns: about half of what a call of it cost.
 */
#ifndef SYSCOPE_RUNTIME_PYTHON_AGGREGATE_H
#define SYSCOPE_RUNTIME_PYTHON_AGGREGATE_H

#include <stdbool.h>
#include <stdint.h>

#define RT_PY_AGG_IDS 65536u /* code ids past this are always recorded */

enum rt_py_agg_mode {
	RT_PY_AGG_NONE,	     /* not counted in a slot: recorded */
	RT_PY_AGG_OUTER,     /* its function's outermost open call on its thread */
	RT_PY_AGG_RECURSIVE, /* inside a call of its function on the same thread */
	RT_PY_AGG_FOREIGN,   /* another thread has a call of its function open: recorded */
};

struct rt_py_agg {
	uint32_t active;	    /* calls open, on the owner's thread or (FOREIGN) others */
	uint32_t throttled;	    /* its short calls are aggregated from now on */
	const void *owner;	    /* the rt_py_open of the thread of the outermost open call */
	uint64_t before, before_ns; /* calls before throttling, and their own time: the rule */
	uint64_t outer_start;	    /* when the owner's outermost open call began */
	uint64_t calls, total_ns, self_ns;		/* aggregated calls, recursive ones too */
	uint64_t outer_calls, outer_ns, min_ns, max_ns; /* every outermost call */
	double outer_sumsq;				/* ns^2 */
	uint64_t hidden_ns;	/* in its recorded calls: time of calls the reader does not see */
	uint64_t untimed_calls; /* counted, not timed (enum rt_py_untimed) */
	uint32_t pushed;	/* sys.monitoring: its calls in progress on the threads' stacks */
	uint32_t untimed_open;	/* sys.monitoring: counted calls whose exit is still to come */
	uint8_t untimed;	/* enum rt_py_untimed */
	uint8_t orphans_tried;	/* monitoring.c: its calls in progress looked at, once */
};

enum rt_py_untimed {
	RT_PY_TIMED,	   /* its calls are timed (aggregated when short, once throttled) */
	RT_PY_COUNTED,	   /* throttled: its new calls only counted; exits still reported */
	RT_PY_RETURNS_OFF, /* sys.monitoring: none of its calls open any more, returns off */
};

/* NULL: every call is recorded. */
extern struct rt_py_agg *rt_py_agg_table;
extern uint64_t rt_py_agg_rule_calls, rt_py_agg_rule_ns;
extern bool rt_py_agg_untimed; /* throttled functions' calls counted, not timed */
/* When the slots are next written (every second: a kill -9 loses at most that much of the
 * aggregated calls, as the recorder's last 20 ms of records); UINT64_MAX when off. */
extern uint64_t rt_py_agg_flush_at;
/* Normal context, by the thread running Python: FUNC_STATS of what changed, the slots
 * emptied, the next flush a second after `now`. */
void rt_py_agg_flush(uint64_t now);

/* Map the table (normal context, at install) when the setting asks; false: it stays off. */
bool rt_py_agg_init(void);
/* FUNC_STATS of every slot with something to say, the slots emptied (image end, process
 * end; async-signal-safe). With `say`, a note counts the throttled functions. */
void rt_py_agg_record(bool say);
/* A fork child's code ids start over: so do the slots. */
void rt_py_agg_fork_child(void);

/* A call of code `id` entered at `ts` by the thread whose calls in progress are `open`. */
static inline uint8_t rt_py_agg_enter(const void *open, uint32_t id, uint64_t ts)
{
	struct rt_py_agg *s;
	uint8_t mode;

	if (!rt_py_agg_table || !id || id >= RT_PY_AGG_IDS) /* 0: no id (the table was full) */
		return RT_PY_AGG_NONE;
	s = &rt_py_agg_table[id];
	mode = !s->active	  ? RT_PY_AGG_OUTER
	       : s->owner == open ? RT_PY_AGG_RECURSIVE
				  : RT_PY_AGG_FOREIGN;
	if (mode == RT_PY_AGG_OUTER) {
		s->owner = open;
		s->outer_start = ts;
	}
	s->active++;
	return mode;
}

/* The slot of the code id in FUNC address `addr` when its calls are only counted now. */
static inline struct rt_py_agg *rt_py_agg_counted(uint64_t addr)
{
	uint32_t id = (uint32_t)(addr >> 32) & 0x7fffffffu;

	if (!rt_py_agg_table || !id || id >= RT_PY_AGG_IDS || !rt_py_agg_table[id].untimed)
		return NULL;
	return &rt_py_agg_table[id];
}

/* Of the code id in FUNC address `addr`, a call pushed on (+1) or popped off (-1) a thread's
 * stack of calls in progress (sys.monitoring), so that its returns stay on while one is. */
static inline void rt_py_agg_pushed(uint64_t addr, int by)
{
	uint32_t id = (uint32_t)(addr >> 32) & 0x7fffffffu;

	if (rt_py_agg_table && id < RT_PY_AGG_IDS && (by > 0 || rt_py_agg_table[id].pushed))
		rt_py_agg_table[id].pushed += (uint32_t)by;
}

#endif /* SYSCOPE_RUNTIME_PYTHON_AGGREGATE_H */
