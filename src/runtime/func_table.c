/* SPDX-License-Identifier: MIT */
/*
 * The table of function ids (func_table.h). Open addressing over RT_FUNC_IDS slots in
 * zeroed static memory (pages appear as they are first touched); a slot's key is the
 * address with a bit for loops, stored by compare-and-swap, and its index is the id, so a
 * lookup is a hash and, almost always, one load.
 */
#include "func_table.h"

#include <string.h>

#include "counted_calls.h"
#include "patch/patch.h"
#include "python/aggregate.h"

#define KEY_LOOP (1ull << 62) /* loops and functions never share a key */
#define MAX_PROBES 64u

struct func_stat {
	_Atomic uint64_t calls; /* recorded call by call (about: see rt_func_count_call) */
	_Atomic uint64_t ns;
	_Atomic uint64_t extra_calls; /* after throttling: counted only */
	_Atomic uint64_t extra_ns;
	_Atomic uint64_t untimed_calls; /* after throttling: counted by an entry stub, not timed */
	_Atomic bool throttled;
	_Atomic bool outermost; /* a recorded call had no instrumented caller (patching) */
};

static _Atomic uint64_t keys[RT_FUNC_IDS];
static struct func_stat native_stats[RT_FUNC_IDS], python_stats[RT_FUNC_IDS];
static atomic_uint_fast64_t no_id_calls; /* calls that found the table full */
/* Ids given and functions throttled so far: the walks over the table at a fork and at the
 * end are skipped while there are none (its 3 MB of untouched pages, read, cost a process
 * ~800 page faults: 2-3 ms of every short process of a shell script). */
static atomic_uint ids_given, throttled_fns;
static uint64_t throttle_calls, throttle_ns;
/* A throttled function's call of LONG_CALL_FACTOR times --throttle-us or more (1 ms by
 * default) is recorded whole all the same: throttling is for the many quick calls, and a
 * long one (a library call waiting for its workers) belongs on the timeline. Only calls that
 * still come here are timed: those with no instrumented caller (rt_func_count_only). */
#define LONG_CALL_FACTOR 100
static uint64_t long_call_ns = UINT64_MAX;
bool rt_func_throttle_native, rt_func_throttle_python;

static void announce(uint32_t id, uint64_t key)
{
	struct sc_rec_func_id *r = rt_reserve(sizeof(*r));

	if (!r)
		return;
	r->addr = key & ~KEY_LOOP;
	r->id = id;
	r->reserved = 0;
	rt_commit(r, SC_REC_FUNC_ID, key & KEY_LOOP ? SC_FUNC_LOOP : 0, sizeof(*r));
}

uint32_t rt_func_id(uint64_t addr, uint16_t flags)
{
	uint64_t key = (addr & ~KEY_LOOP) | (flags & SC_FUNC_LOOP ? KEY_LOOP : 0);
	uint64_t h = (key * 0x9e3779b97f4a7c15ull) >> 48; /* 16 bits: RT_FUNC_IDS */

	if (!key)
		return RT_FUNC_NO_ID;
	for (uint32_t i = 0; i < MAX_PROBES; i++) {
		uint32_t slot = (uint32_t)(h + i) & (RT_FUNC_IDS - 1);
		uint64_t k = atomic_load_explicit(&keys[slot], memory_order_relaxed), empty = 0;

		if (k == key)
			return slot;
		if (k)
			continue;
		if (atomic_compare_exchange_strong(&keys[slot], &empty, key)) {
			atomic_fetch_add_explicit(&ids_given, 1, memory_order_relaxed);
			announce(slot, key);
			return slot;
		}
		if (empty == key) /* another thread took this slot for the same function */
			return slot;
	}
	/* Counted, said at the end: a signal handler's call may be here, and notes are not
	 * async-signal-safe. */
	atomic_fetch_add_explicit(&no_id_calls, 1, memory_order_relaxed);
	return RT_FUNC_NO_ID;
}

bool rt_func_count_call(uint32_t id, uint16_t flags, uint64_t ns)
{
	struct func_stat *s =
		&(flags & SC_FUNC_PYTHON ? python_stats : native_stats)[id & (RT_FUNC_IDS - 1)];
	uint64_t calls;

	if (flags & SC_FUNC_LOOP)
		return false; /* loops are few and long: always recorded */
	if (atomic_load_explicit(&s->throttled, memory_order_relaxed)) {
		if (ns >= long_call_ns)
			return false; /* long enough to be seen on the timeline: recorded whole */
		atomic_fetch_add_explicit(&s->extra_calls, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->extra_ns, ns, memory_order_relaxed);
		return true;
	}
	/* Plain loads and stores, no read-modify-write: these only decide when to throttle
	 * (threads racing may lose a few counts), while every call before is recorded whole,
	 * and the counted ones after are added exactly, above. */
	calls = atomic_load_explicit(&s->calls, memory_order_relaxed) + 1;
	ns += atomic_load_explicit(&s->ns, memory_order_relaxed);
	atomic_store_explicit(&s->calls, calls, memory_order_relaxed);
	atomic_store_explicit(&s->ns, ns, memory_order_relaxed);
	if (calls > throttle_calls && ns < calls * throttle_ns &&
	    !atomic_exchange_explicit(&s->throttled, true, memory_order_relaxed))
		atomic_fetch_add_explicit(&throttled_fns, 1, memory_order_relaxed);
	return false;
}

bool rt_func_throttled(uint32_t id)
{
	return id != RT_FUNC_NO_ID &&
	       atomic_load_explicit(&native_stats[id & (RT_FUNC_IDS - 1)].throttled,
				    memory_order_relaxed);
}

void rt_func_called_outermost(uint32_t id)
{
	struct func_stat *s;

	if (id == RT_FUNC_NO_ID)
		return;
	s = &native_stats[id & (RT_FUNC_IDS - 1)];
	/* A load first: the line is written once, not on every outermost call. */
	if (!atomic_load_explicit(&s->outermost, memory_order_relaxed))
		atomic_store_explicit(&s->outermost, true, memory_order_relaxed);
}

bool rt_func_count_only(uint32_t id)
{
	return rt_func_throttled(id) &&
	       !atomic_load_explicit(&native_stats[id & (RT_FUNC_IDS - 1)].outermost,
				     memory_order_relaxed);
}

void rt_func_count_untimed(uint32_t id, uint64_t calls)
{
	if (id != RT_FUNC_NO_ID)
		atomic_fetch_add_explicit(&native_stats[id & (RT_FUNC_IDS - 1)].untimed_calls,
					  calls, memory_order_relaxed);
}

/* FUNC_COUNT of each throttled function of one kind, and with `say` a note of how many
 * there were (readers name each one). Async-signal-safe without `say`. */
static void record_counts(struct func_stat *stats, uint16_t flags, bool say)
{
	uint32_t n = 0, untimed_fns = 0;

	if (!atomic_load_explicit(&throttled_fns, memory_order_relaxed))
		return;
	for (uint32_t id = 0; id < RT_FUNC_IDS; id++) {
		struct func_stat *s = &stats[id];
		struct sc_rec_func_count *r;
		uint64_t untimed;

		if (!atomic_load_explicit(&s->throttled, memory_order_relaxed))
			continue;
		n++;
		untimed_fns += atomic_load_explicit(&s->untimed_calls, memory_order_relaxed) != 0;
		if (!(r = rt_reserve(sizeof(*r))))
			continue;
		untimed = atomic_exchange_explicit(&s->untimed_calls, 0, memory_order_relaxed);
		r->id = id;
		r->reserved = 0;
		r->calls = atomic_exchange_explicit(&s->extra_calls, 0, memory_order_relaxed) +
			   untimed;
		/* The untimed calls add nothing: their time is in their callers'. */
		r->total_ns = atomic_exchange_explicit(&s->extra_ns, 0, memory_order_relaxed);
		rt_commit(r, SC_REC_FUNC_COUNT, flags | (untimed ? SC_FUNC_UNTIMED : 0),
			  sizeof(*r));
	}
	if (n && say)
		rt_note(SC_NOTE_INFO,
			"throttling: %u %s function%s called more than %llu times at under %llu "
			"us a call on average then only counted (SYSCOPE_THROTTLE, --no-throttle)",
			n, flags & SC_FUNC_PYTHON ? "Python" : "instrumented", n == 1 ? "" : "s",
			(unsigned long long)throttle_calls,
			(unsigned long long)(throttle_ns / 1000));
	if (untimed_fns && say)
		rt_note(SC_NOTE_INFO,
			"throttling: calls of %u function%s counted after throttling, time not "
			"(their entry only counts them): that time stays in their callers' self "
			"time",
			untimed_fns, untimed_fns == 1 ? "" : "s");
}

static bool enabled(const struct sc_settings *s)
{
	(void)s;
	return true;
}

static int process_start(void)
{
	const struct sc_settings *s = &rt_proc.settings;
	throttle_calls = (uint64_t)sc_int(s, SC_SET_THROTTLE_CALLS);
	throttle_ns = (uint64_t)(sc_double(s, SC_SET_THROTTLE_US) * 1000.0);
	long_call_ns = throttle_ns * LONG_CALL_FACTOR;
	rt_func_throttle_native = sc_bool(s, SC_SET_THROTTLE);
	rt_func_throttle_python = false; /* Python's throttling: python/aggregate.c */
	return 0;
}

/* The child's file starts empty: every id known so far is announced again there, and each
 * function's counts start over. */
static void fork_child(void)
{
	rt_counted_fork_child();
	rt_patch_shadow_fork_child();
	rt_patch_counted_fork_child();
	atomic_store_explicit(&throttled_fns, 0, memory_order_relaxed); /* counts start over */
	if (rt_func_throttle_python)
		memset(python_stats, 0, sizeof(python_stats));
	if (!atomic_load_explicit(&ids_given, memory_order_relaxed))
		return; /* no instrumented call yet: nothing to announce or clear */
	for (uint32_t id = 0; id < RT_FUNC_IDS; id++) {
		uint64_t k = atomic_load_explicit(&keys[id], memory_order_relaxed);

		if (k)
			announce(id, k);
	}
	/* Only what was used: the rest is untouched zero pages, which a memset would make
	 * real in every fork child (5 MB each). */
	for (uint32_t id = 0; id < RT_FUNC_IDS; id++)
		if (atomic_load_explicit(&keys[id], memory_order_relaxed))
			memset(&native_stats[id], 0, sizeof(native_stats[id]));
}

void rt_func_end_open_calls(void)
{
	uint64_t ts = rt_now_ns();

	rt_patch_shadow_end_open_calls(ts);
	rt_hooks_end_open_calls(ts);
	rt_py_end_open_calls(ts);
}

static void thread_stop(struct rt_thread *t)
{
	(void)t;
	rt_func_end_open_calls();
	rt_py_open_release();
	rt_counted_thread_end();
}

static void record_all_counts(bool say)
{
	rt_counted_fold_all();
	rt_patch_flush_counted();
	if (rt_func_throttle_native)
		record_counts(native_stats, 0, say);
	if (rt_func_throttle_python)
		record_counts(python_stats, SC_FUNC_PYTHON, say);
}

void rt_func_end_image(void)
{
	rt_func_end_open_calls();
	record_all_counts(false);
	rt_py_agg_record(false);
}

static void process_stop(void)
{
	uint64_t lost = atomic_load_explicit(&no_id_calls, memory_order_relaxed);

	record_all_counts(true);
	if (lost)
		rt_note(SC_NOTE_WARN,
			"instrumented calls: the function id table had no room for %llu calls (more "
			"than %u functions in one place of it); they were recorded as "
			"FUNC_ENTER/EXIT pairs, 48 bytes a call",
			(unsigned long long)lost, MAX_PROBES);
}

const struct rt_source rt_source_func_table = {
	.name = "function ids",
	.enabled = enabled,
	.process_start = process_start,
	.thread_stop = thread_stop,
	.fork_child = fork_child,
	.process_stop = process_stop,
};
