/* SPDX-License-Identifier: MIT */
/*
 * Per-thread counts of counted calls: the calls of throttled functions that are only
 * counted (patching's entry stubs, the compiler hooks). A locked increment of one shared
 * word per function made those calls cost what the recorded ones saved (13% of a sqlite3
 * run's samples), so each thread counts into a table of its own, with one unlocked
 * instruction, and the tables are folded into the functions' untimed counts
 * (rt_func_count_untimed) at the thread's end and at the image's end (exit, _exit, exec,
 * fatal signal). Nothing is lost: a table is never unmapped, only handed to a later thread
 * as it is, and every fold takes each slot's growth since the last one exactly once.
 *
 * Slots: [0, RT_FUNC_IDS) the compiler hooks' functions by function id (func_table.h),
 * then RT_PATCH_MAX_IDS slots for patched functions by patch id (in builds with patching),
 * each 0 until this thread first counts the function, then 1 + its calls (patch/counted.c:
 * the entry stub's test of whether to count is the slot it counts in).
 * Everything here is async-signal-safe.
 */
#ifndef SYSCOPE_RUNTIME_COUNTED_CALLS_H
#define SYSCOPE_RUNTIME_COUNTED_CALLS_H

#include "func_table.h"

#define RT_COUNTED_PATCH_BASE RT_FUNC_IDS

/* The calling thread's counts (slot by slot), or NULL before its first counted call and
 * after its end. Read by the entry stub (stubs_x86_64.S). */
extern RT_TLS uint64_t *rt_counted_here;

/* Gives the calling thread a table (a free one, or a new one) and returns it; NULL when it
 * cannot have one (its end has passed, mmap failed, a signal handler interrupted the
 * claim): the caller then counts into a shared word with a locked increment. */
uint64_t *rt_counted_claim(void);

/* One counted call of the compiler hooks' function `id`. */
static inline void rt_counted_hook_call(uint32_t id)
{
	uint64_t *t = rt_counted_here;

	if (id == RT_FUNC_NO_ID)
		return;
	if (__builtin_expect(t != NULL, 1) || (t = rt_counted_claim()))
		arch_local_fetch_add(&t[id & (RT_FUNC_IDS - 1)], 1);
	else
		rt_func_count_untimed(id, 1);
}

/* Every thread's counts into the functions' untimed counts (the image's end). */
void rt_counted_fold_all(void);
/* The calling thread's end: its counts folded, its table handed back for later threads;
 * its later calls (key destructors) are counted in the shared words. */
void rt_counted_thread_end(void);
/* Patch id `id` is given to a module loaded again: what every thread counted for it goes to
 * the function of its old address, and every thread's slot is back to 0 (so the new one is
 * recorded call by call until throttled again). Before the id's address changes. */
void rt_counted_patch_reset(uint32_t id);

/* A fork child: what the parent's threads counted is the parent's (every slot back to 0);
 * the child's other threads are gone, so their tables are free. Called before func_table.c
 * resets its counts (the throttled functions say which hook slots were used). */
void rt_counted_fork_child(void);

#endif /* SYSCOPE_RUNTIME_COUNTED_CALLS_H */
