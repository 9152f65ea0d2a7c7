/* SPDX-License-Identifier: MIT */
/*
 * Runtime binary instrumentation (x86-64): a patched function's first bytes jump to its
 * trampoline, which pushes the function's id and calls the entry stub (stubs_x86_64.S). The
 * stub saves the argument registers and calls rt_patch_enter, which records the entry, keeps
 * the caller's return address on this thread's shadow stack and puts the exit stub's
 * address in its place; the function's `ret` then lands in the exit stub, which calls
 * rt_patch_exit for the exit record and the original return address. The trampoline then
 * runs the displaced instructions and jumps back into the function.
 *
 * apply.c reads the plan and patches; shadow.c is the shadow stack and the hooks that keep
 * it true when frames go away without returning (longjmp, exceptions, pthread_exit).
 */
#ifndef SYSCOPE_RUNTIME_PATCH_PATCH_H
#define SYSCOPE_RUNTIME_PATCH_PATCH_H

#include <stdint.h>

#include "../sources/source.h"

/* stubs_x86_64.S */
void rt_patch_entry_stub(void);
extern const char rt_patch_entry_stub_end[];
void rt_patch_exit_stub(void);
void rt_patch_coverage_stub(void); /* coverage mode: counts calls in rt_patch_calls[id] */
extern uint64_t *rt_patch_calls;
/* By id: 0 while the function is recorded call by call; once it is throttled, 1 + the calls
 * the entry stub counted since in no thread's table (counted.c, counted_calls.h). */
extern uint64_t *rt_patch_counted;
/* Called by the entry stub for a throttled function's call on a thread without a table of
 * counts yet (counted_calls.h): claims one, or counts in rt_patch_counted[id]. */
void rt_patch_count_slow(uint32_t id);
#define RT_PATCH_MAX_IDS (1u << 22) /* patch ids of one process image */
void rt_patch_loop_stub(void);	    /* loop probes: saves everything, flags too; calls: */
void rt_patch_loop(uint32_t probe_id);
void rt_patch_loader_event(void); /* loader.c: the list of loaded objects changed */

/* shadow.c: called by the stubs. */
void rt_patch_enter(uint32_t id, uint64_t *ret_slot);
uint64_t rt_patch_exit(uint64_t sp);

/* Loops recorded as regions (-l): their code [lo, hi) at run time. */
struct rt_loop {
	uint64_t lo, hi;
};
/* A loop probe: where it is, in which function, which loops start there. */
struct rt_probe {
	uint64_t addr;
	uint32_t func_id;
	uint32_t first_loop; /* bit i of enters: loop first_loop + i */
	uint32_t enters;
	uint32_t reserved;
};
extern struct rt_loop *rt_patch_loops;
extern struct rt_probe *rt_patch_probes;

/* The function addresses (at run time) by id, set by apply.c before any patch is live. */
extern const uint64_t *rt_patch_func_addr;
/* Enable the exception hooks (only when something was patched). */
void rt_patch_shadow_start(void);
/* A thread's end: give its shadow stack back. */
void rt_patch_shadow_thread_stop(void);
/* embedded.c: the plan a rewritten file carries (malloc'd, `size` set), or NULL. */
char *rt_patch_read_embedded(const char *path, size_t *size);
/* Calls deeper than the shadow stack, not recorded (reported at the end). */
uint64_t rt_patch_shadow_overflows(void);
/* apply.c: how many ids were given out (every id below is a function's, patched or not). */
uint32_t rt_patch_nids(void);
/* counted.c: from now on the entry stub only counts the calls of `id` (func_table.c
 * throttled its function). */
void rt_patch_count_only(uint32_t id);

extern const struct rt_source rt_source_patching;

/*
 * What code outside patching calls (lifecycle.c, the unwinders): real functions here, and
 * no-op stubs in a build without patching, so that the callers carry no #ifdef.
 */
#ifdef SYSCOPE_HAVE_PATCHING
/* Whether this build has patching: a constant, so code that needs it alone folds away. */
static inline bool rt_patch_built(void)
{
	return true;
}
/* For the sampler's unwinders: whether `addr` is the exit stub (a swapped return address). */
static inline bool rt_patch_is_exit_stub(uint64_t addr)
{
	return addr == (uint64_t)(uintptr_t)rt_patch_exit_stub;
}
/* For the sampler's unwinders: whether `addr` is inside the entry stub. */
static inline bool rt_patch_in_entry_stub(uint64_t addr)
{
	return addr >= (uint64_t)(uintptr_t)rt_patch_entry_stub &&
	       addr < (uint64_t)(uintptr_t)rt_patch_entry_stub_end;
}
/* For the sampler's unwinders: `ret` is where the entry stub returns to, in a function's
 * trampoline (`push $id; call *stub` just before it; the trampolines have no unwind
 * information); the function's patch id into `id`, or false when the bytes before `ret` are
 * not that (a loop probe's trampoline, say). Async-signal-safe: the trampoline was just run. */
static inline bool rt_patch_trampoline_id(uint64_t ret, uint32_t *id)
{
	const uint8_t *p = (const uint8_t *)(uintptr_t)(ret - 11);

	if (p[0] != 0x68 || p[5] != 0xff || p[6] != 0x15)
		return false;
	__builtin_memcpy(id, p + 1, 4);
	return true;
}
/* stubs_x86_64.S: (end of a stretch of the entry stub, offset from it; where the return into
 * the trampoline is then: bytes above rsp, or -1 above rbp), ending with 0, 0. */
extern const int16_t rt_patch_entry_stub_slots[];
/* For the frame-pointer unwinder: `pc` in the entry stub with its frame not made (or undone
 * already): how many bytes above the stack pointer the return into the trampoline is; -1
 * inside the stub's own frame (the return is above rbp, as in any frame); -2 when `pc` is
 * not in the entry stub. Async-signal-safe. */
static inline int rt_patch_entry_stub_slot(uint64_t pc)
{
	uint64_t off = pc - (uint64_t)(uintptr_t)rt_patch_entry_stub;

	if (!rt_patch_in_entry_stub(pc))
		return -2;
	for (const int16_t *e = rt_patch_entry_stub_slots; e[0]; e += 2)
		if (off < (uint16_t)e[0])
			return e[1];
	return -2;
}
/* tramp_map.c, for the sampler's unwinders: whether `pc` is one of a trampoline's own
 * instructions; if so the address of the function's code whose state it runs in goes into
 * `orig`, and how many bytes below that state's stack pointer the stack pointer is into
 * `adjust_bytes`. Async-signal-safe. */
enum rt_tramp_where {
	RT_TRAMP_NONE = 0,
	RT_TRAMP_IN_BODY,  /* a loop probe's, or a displaced instruction after the first */
	RT_TRAMP_AT_ENTRY, /* the function has not begun: its return address at sp + adjust */
};
enum rt_tramp_where rt_patch_tramp_origin(uint64_t pc, uint64_t *orig, unsigned *adjust_bytes);
/* For the sampler's unwinders: the function of patch id `id`, or 0. Async-signal-safe. */
static inline uint64_t rt_patch_func_of(uint32_t id)
{
	return rt_patch_func_addr && id < rt_patch_nids() ? rt_patch_func_addr[id] : 0;
}
/* For the sampler's unwinders: the return address the exit stub stands for in the slot at
 * `slot` on this thread's stack, or 0 when no frame of the shadow stack has that slot.
 * Async-signal-safe. */
uint64_t rt_patch_real_return(uint64_t slot);
/* embedded.c: a rewritten program started without syscope re-runs itself under it. */
void rt_patch_self_launch(const char *self_path);
/* shadow.c, for func_table.c: the open calls written at an end; a fork child's inherited. */
void rt_patch_shadow_end_open_calls(uint64_t ts);
void rt_patch_shadow_fork_child(void);
/* counted.c, for func_table.c: the calls the entry stubs counted so far move to their
 * functions' untimed counts (rt_func_count_untimed). Async-signal-safe. */
void rt_patch_flush_counted(void);
/* counted.c: a fork child records its functions call by call again, as func_table.c
 * starts their counts over. */
void rt_patch_counted_fork_child(void);
/* counted.c, for counted_calls.c: how many patch ids have slots in a table of counts, and
 * `calls` counted calls of patch id `id` into its function's untimed count. */
uint32_t rt_patch_counted_ids(void);
void rt_patch_add_counted(uint32_t id, uint64_t calls);
/* apply.c, for syscope attach's detach: the id tables (256 MiB of address space) unmapped
 * when nothing was patched, so that a detached process keeps none of them and the next
 * attach maps them anew; an image with patches keeps them (its trampolines' stubs read them)
 * and the next attach uses them again. After the recording stopped (rt_active() false). */
void rt_patch_release(void);
#else
static inline void rt_patch_release(void)
{
}
static inline uint32_t rt_patch_counted_ids(void)
{
	return 0;
}
static inline void rt_patch_add_counted(uint32_t id, uint64_t calls)
{
	(void)id;
	(void)calls;
}
static inline void rt_patch_flush_counted(void)
{
}
static inline void rt_patch_counted_fork_child(void)
{
}
static inline void rt_patch_shadow_end_open_calls(uint64_t ts)
{
	(void)ts;
}
static inline void rt_patch_shadow_fork_child(void)
{
}
static inline bool rt_patch_built(void)
{
	return false;
}
static inline bool rt_patch_is_exit_stub(uint64_t addr)
{
	(void)addr;
	return false;
}
static inline bool rt_patch_in_entry_stub(uint64_t addr)
{
	(void)addr;
	return false;
}
static inline bool rt_patch_trampoline_id(uint64_t ret, uint32_t *id)
{
	(void)ret, (void)id;
	return false;
}
static inline int rt_patch_entry_stub_slot(uint64_t pc)
{
	(void)pc;
	return -2;
}
enum rt_tramp_where {
	RT_TRAMP_NONE = 0,
	RT_TRAMP_IN_BODY,
	RT_TRAMP_AT_ENTRY
};
static inline enum rt_tramp_where rt_patch_tramp_origin(uint64_t pc, uint64_t *orig,
							unsigned *adjust_bytes)
{
	(void)pc, (void)orig, (void)adjust_bytes;
	return RT_TRAMP_NONE;
}
static inline uint64_t rt_patch_func_of(uint32_t id)
{
	(void)id;
	return 0;
}
static inline uint64_t rt_patch_real_return(uint64_t slot)
{
	(void)slot;
	return 0;
}
static inline void rt_patch_self_launch(const char *self_path)
{
	(void)self_path;
}
#endif

#endif /* SYSCOPE_RUNTIME_PATCH_PATCH_H */
