/* SPDX-License-Identifier: MIT */
/*
 * Function ids of instrumented calls (FUNC_CALL records): a process-wide table from a
 * function's (or loop's) address to a small id, filled lock-free as calls first reach it.
 * The thread that gives an address its id announces it once with a FUNC_ID record; a fork
 * child announces them all again in its own file. When the table is full, rt_func_id says
 * so (RT_FUNC_NO_ID) and the caller writes the FUNC_ENTER/EXIT pair of old.
 *
 * Throttling (SYSCOPE_THROTTLE): each id counts its recorded calls and their time; a
 * function called more than THROTTLE_CALLS times at under THROTTLE_US a call on average
 * is then only counted (rt_func_throttled), and FUNC_COUNT records give its totals at the
 * end. A patched function's calls after that stop at its entry stub, counted, not timed
 * (patch/counted.c), and a compiler-hooked one's read no clock, where their time is in an
 * instrumented caller's; a function called with no instrumented caller (a library's API
 * under -MI, called by uninstrumented code) keeps its calls timed, or its time would be in
 * no function of the profile. Everything here is async-signal-safe.
 */
#ifndef SYSCOPE_RUNTIME_FUNC_TABLE_H
#define SYSCOPE_RUNTIME_FUNC_TABLE_H

#include "sources/source.h"

#define RT_FUNC_NO_ID UINT32_MAX
#define RT_FUNC_IDS 65536u /* ids of one process image; a power of two */

/* The id of the function at `addr` (`flags`: SC_FUNC_LOOP for a loop), made and announced
 * on first use; RT_FUNC_NO_ID when the table is full (counted; a note at the end). */
uint32_t rt_func_id(uint64_t addr, uint16_t flags);

/* Throttling: the call of `id` (a native id, or with SC_FUNC_PYTHON a code id) that took
 * `ns` ended; returns false while it is recorded call by call, true once throttled, when
 * the caller records nothing for it. */
bool rt_func_count_call(uint32_t id, uint16_t flags, uint64_t ns);

/* Whether the native function `id` is throttled now (its calls only counted). */
bool rt_func_throttled(uint32_t id);
/* A recorded call of the native function `id` had no instrumented caller below it. */
void rt_func_called_outermost(uint32_t id);
/* Whether the native function `id`'s calls may go uncounted in time: throttled, and every
 * call recorded so far had an instrumented caller (whose self time then holds theirs). */
bool rt_func_count_only(uint32_t id);
/* `calls` more calls of the native function `id`, counted without their time (patching's
 * entry stubs, once throttled: rt_patch_flush_counted). Async-signal-safe. */
void rt_func_count_untimed(uint32_t id, uint64_t calls);

/* Whether calls of this kind are throttled at all (settings, read at start). */
extern bool rt_func_throttle_native, rt_func_throttle_python;

/* Every open call of the calling thread, as FUNC_CALL with SC_FUNC_OPEN up to now, for the
 * ends that leave no return to come: thread end, exit, exec, fatal signal. Frames written so
 * are marked ended. Async-signal-safe. */
void rt_func_end_open_calls(void);
/* The image ends without rt_finalize (exec, fatal or ending signal): the open calls, and
 * the throttled functions' totals so far (FUNC_COUNT). Async-signal-safe. */
void rt_func_end_image(void);
void rt_hooks_end_open_calls(uint64_t ts); /* compiler_hooks.c */
void rt_py_end_open_calls(uint64_t ts);	   /* python/trace.c and monitoring.c */
/* python/trace.c: the thread's end, after rt_py_end_open_calls: its record of calls in
 * progress is unmapped; its later calls (key destructors) are recorded as pairs. */
void rt_py_open_release(void);

extern const struct rt_source rt_source_func_table;

#endif /* SYSCOPE_RUNTIME_FUNC_TABLE_H */
