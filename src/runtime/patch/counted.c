/* SPDX-License-Identifier: MIT */
/*
 * Throttled patched functions, only counted. Once func_table.c throttles a function, the
 * exit of one of its recorded calls (shadow.c) sets rt_patch_counted[id]; from then on the
 * entry stub sees it set and counts the call in the slot of `id` in its thread's table of
 * counts (counted_calls.h), and nothing else happens for that call: no shadow-stack frame,
 * no clock, no record. The slot holds 1 + the calls counted: the first call of a thread
 * sets it (rt_patch_count_slow), and from then on the stub's first test finds it set and
 * adds one, unlocked, touching no other data. A thread that cannot have a table adds to
 * rt_patch_counted[id] with a locked add. Both move to the function's untimed calls (func_table.c) whenever its
 * FUNC_COUNT is written, so each call is counted once: recorded (FUNC_CALL) before,
 * counted with its time while in flight at the switch, or counted by the stub after.
 * Everything here is async-signal-safe.
 */
#include "../counted_calls.h"
#include "../func_table.h"
#include "patch.h"

/* stubs_x86_64.S adds to this displacement from a table's counts. */
_Static_assert(RT_COUNTED_PATCH_BASE * sizeof(uint64_t) == 524288,
	       "the entry stub's displacement of patch ids in a table of counts");

uint64_t *rt_patch_counted;

void rt_patch_count_only(uint32_t id)
{
	uint64_t zero = 0;

	if (!rt_patch_counted || __atomic_load_n(&rt_patch_counted[id], __ATOMIC_RELAXED))
		return;
	/* Compare-and-swap: another thread may have switched it already, and counted since. */
	__atomic_compare_exchange_n(&rt_patch_counted[id], &zero, 1, false, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
}

void rt_patch_count_slow(uint32_t id)
{
	uint64_t *t = rt_counted_here ? rt_counted_here : rt_counted_claim(), zero = 0;

	if (!t) {
		__atomic_fetch_add(&rt_patch_counted[id], 1, __ATOMIC_RELAXED);
		return;
	}
	/* 1 + the calls counted, as rt_patch_counted: a signal handler may have set it since
	 * the stub looked (hence the compare-and-swap). */
	__atomic_compare_exchange_n(&t[RT_COUNTED_PATCH_BASE + (size_t)id], &zero, 1, false,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	arch_local_fetch_add(&t[RT_COUNTED_PATCH_BASE + (size_t)id], 1);
}

uint32_t rt_patch_counted_ids(void)
{
	return rt_patch_counted ? rt_patch_nids() : 0;
}

void rt_patch_add_counted(uint32_t id, uint64_t calls)
{
	if (rt_patch_func_addr[id])
		rt_func_count_untimed(rt_func_id(rt_patch_func_addr[id], 0), calls);
}

void rt_patch_flush_counted(void)
{
	uint32_t n = rt_patch_nids();

	for (uint32_t id = 0; rt_patch_counted && id < n; id++) {
		uint64_t v = __atomic_load_n(&rt_patch_counted[id], __ATOMIC_RELAXED);

		if (v <= 1 || !rt_patch_func_addr[id])
			continue;
		/* Take exactly what was read: stubs may be adding meanwhile. */
		__atomic_fetch_sub(&rt_patch_counted[id], v - 1, __ATOMIC_RELAXED);
		rt_func_count_untimed(rt_func_id(rt_patch_func_addr[id], 0), v - 1);
	}
}

void rt_patch_counted_fork_child(void)
{
	uint32_t n = rt_patch_nids();

	/* Only the entries in use: the others are untouched zero pages. */
	for (uint32_t id = 0; rt_patch_counted && id < n; id++)
		if (rt_patch_counted[id])
			rt_patch_counted[id] = 0;
}
