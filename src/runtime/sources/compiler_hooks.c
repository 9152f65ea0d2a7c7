/* SPDX-License-Identifier: MIT */
/*
 * Compiler hooks: a program built with -finstrument-functions calls
 * __cyg_profile_func_enter/exit at every entry and exit of its functions. glibc has no-op
 * versions; libsyscope.so, preloaded, defines them first, so the program's calls come here
 * (a program that defines them itself keeps its own). Each call is one FUNC_CALL record,
 * written when it returns, with the function's id (func_table.h) and its start time kept
 * here meanwhile; the reader names the function. No locks, no allocation after a thread's
 * first call. Calls still open when the thread or process ends are written then
 * (rt_hooks_end_open_calls).
 *
 * A call left by longjmp or siglongjmp never calls its exit hook. Each thread keeps the
 * calls in progress (function, and where the hook was called from on the machine stack):
 * an entry at or above a call's place on the same stack means that call is over, and its
 * exit is recorded then, so the records stay nested however often the program jumps. Calls
 * on stacks syscope does not know (coroutines) are never taken for over (rt_frame_left).
 */
#include <sys/mman.h>

#include "../counted_calls.h"
#include "../func_table.h"
#include "source.h"

#define HOOK_FRAMES 65536u
#define SP_WRITING UINT64_MAX /* frame reserved, not written yet */

struct hook_frame {
	uint64_t sp; /* the hook's frame address: below the function's own frame */
	uint64_t fn;
	uint64_t start;
	uint32_t id;	  /* rt_func_id */
	uint16_t ended;	  /* written already (an end path): its return writes nothing */
	uint16_t untimed; /* entered throttled: only counted, no clock read for it */
};

struct hook_stack {
	struct hook_frame *f;
	uint32_t depth;
	bool failed; /* the mmap failed: calls are recorded, not followed */
};

static bool hooks_on; /* set once at start, read on every call */
static RT_TLS struct hook_stack calls;

#define barrier() __asm__ __volatile__("" ::: "memory") /* order stores for signal handlers */

static struct hook_frame *frames(void)
{
	void *p;

	if (calls.f || calls.failed)
		return calls.f;
	p = mmap(NULL, HOOK_FRAMES * sizeof(struct hook_frame), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		calls.failed = true;
		return NULL;
	}
	calls.f = p;
	return p;
}

/* Whether the call in `fr` is over, seen from a hook called at `sp` after it. */
static bool left(const struct hook_frame *fr, uint64_t sp, struct rt_alt_stack *alt)
{
	return fr->sp != SP_WRITING && rt_frame_left(fr->sp, sp, alt);
}

static void end_call(const struct hook_frame *fr, uint64_t ts)
{
	if (fr->ended)
		return;
	if (fr->untimed)
		rt_counted_hook_call(fr->id); /* this thread's table: no locked add */
	else
		rt_func_call_record(rt_stack_context(fr->sp), fr->id, fr->fn, fr->start, ts);
}

/* The calls on top that are over (jumped out of): their exits, now. */
static void end_left_calls(uint64_t sp, uint64_t ts)
{
	struct rt_alt_stack alt = { 0 };

	while (calls.depth && left(&calls.f[calls.depth - 1], sp, &alt)) {
		end_call(&calls.f[calls.depth - 1], ts);
		barrier();
		calls.depth--;
	}
}

/* A throttled function's call keeps its frame (its exit must find it) but reads no clock,
 * unless calls on top may have been jumped out of: their ends need a time. */
static uint64_t entry_time(bool untimed, uint64_t sp)
{
	const struct hook_frame *top = calls.depth ? &calls.f[calls.depth - 1] : NULL;

	if (untimed && (!top || top->sp == SP_WRITING || top->sp > sp))
		return 0;
	return rt_now_ns();
}

static void enter(uint64_t fn, uint64_t sp)
{
	struct hook_frame *f;
	uint64_t ts;
	uint32_t d, id;
	bool untimed;

	if (!hooks_on || !rt_recording())
		return;
	id = rt_func_id(fn, 0);
	/* Untimed only under an instrumented caller, whose self time then holds the call's. */
	untimed = rt_func_throttle_native && calls.depth && rt_func_throttled(id);
	ts = entry_time(untimed, sp);
	f = frames();
	if (f) {
		if (ts)
			end_left_calls(sp, ts);
		d = calls.depth;
		if (d < HOOK_FRAMES) {
			/* Reserve, then fill: a signal handler in between skips the frame. */
			f[d].sp = SP_WRITING;
			barrier();
			calls.depth = d + 1;
			barrier();
			f[d].fn = fn;
			f[d].start = ts;
			f[d].id = id;
			f[d].ended = 0;
			f[d].untimed = untimed;
			barrier();
			f[d].sp = sp;
			if (!untimed)
				rt_func_entered(ts);
			return;
		}
	}
	if (!ts)
		ts = rt_now_ns();
	/* Not followed (no shadow of calls here): the entry, and its exit will pair. */
	rt_func_record_flags(SC_REC_FUNC_ENTER, rt_stack_context(sp), fn, ts);
}

/* The innermost call of `fn` leaves. Calls above it that are over end with it; any other
 * (suspended on another stack) stays, moved down over it. */
static void leave(uint64_t fn, uint64_t sp)
{
	struct rt_alt_stack alt = { 0 };
	uint64_t ts;
	uint32_t k, kept;

	/* While paused, entries are not recorded; exits are (theirs may predate the pause). */
	if (!hooks_on || !rt_active())
		return;
	/* Its own call: the same function, on the same stack (another coroutine may be in
	 * it too). */
	for (k = calls.depth;
	     k > 0 && (calls.f[k - 1].fn != fn || calls.f[k - 1].sp == SP_WRITING ||
		       rt_stack_context(calls.f[k - 1].sp) != rt_stack_context(sp));
	     k--)
		;
	if (!k) { /* entered before recording: the reader pairs what it can */
		rt_func_record_flags(SC_REC_FUNC_EXIT, rt_stack_context(sp), fn, rt_now_ns());
		return;
	}
	k--;
	if (calls.f[k].untimed && calls.depth == k + 1) { /* throttled: counted, no clock */
		end_call(&calls.f[k], 0);
		barrier();
		calls.depth = k;
		return;
	}
	ts = rt_now_ns();
	while (calls.depth > k + 1 && left(&calls.f[calls.depth - 1], sp, &alt)) {
		end_call(&calls.f[calls.depth - 1], ts);
		calls.depth--;
	}
	end_call(&calls.f[k], ts);
	if (calls.depth == k + 1) {
		barrier();
		calls.depth = k;
		return;
	}
	/* Calls of another stack above: they move down (a handler arriving now sees them
	 * twice at worst, and skips none of its own). */
	kept = k;
	for (uint32_t i = k + 1; i < calls.depth; i++)
		calls.f[kept++] = calls.f[i];
	barrier();
	calls.depth = kept;
}

/* The hooks themselves must not be instrumented (syscope is not built with the flag). */
RT_EXPORT void __cyg_profile_func_enter(void *fn, void *call_site);
RT_EXPORT void __cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)call_site;
	enter((uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)__builtin_frame_address(0));
}

RT_EXPORT void __cyg_profile_func_exit(void *fn, void *call_site);
RT_EXPORT void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)call_site;
	leave((uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)__builtin_frame_address(0));
}

static bool enabled(const struct sc_settings *s)
{
	return sc_bool(s, SC_SET_COMPILER_HOOKS);
}

static int process_start(void)
{
	hooks_on = true;
	return 0;
}

void rt_hooks_end_open_calls(uint64_t ts)
{
	for (uint32_t i = calls.depth; calls.f && i > 0; i--) {
		struct hook_frame *fr = &calls.f[i - 1];

		if (fr->sp == SP_WRITING || fr->ended)
			continue;
		if (fr->untimed)
			rt_func_count_untimed(fr->id, 1);
		else
			rt_func_call_record(SC_FUNC_OPEN | rt_stack_context(fr->sp), fr->id, fr->fn,
					    fr->start, ts);
		fr->ended = 1;
	}
}

/* A fork child's calls entered in the parent are the parent's: their returns write nothing
 * here (the parent writes them when they return there). */
static void fork_child(void)
{
	for (uint32_t i = 0; calls.f && i < calls.depth; i++)
		calls.f[i].ended = 1;
}

static void thread_stop(struct rt_thread *t)
{
	(void)t;
	rt_hooks_end_open_calls(rt_now_ns());
	/* The thread's last calls (key destructors): recorded only. Dropped before unmapped: a
	 * signal handler's hooked call arriving now (a timer's) must not write into it. */
	calls.failed = true;
	if (calls.f) {
		struct hook_frame *f = calls.f;

		calls.f = NULL;
		calls.depth = 0;
		barrier();
		munmap(f, HOOK_FRAMES * sizeof(struct hook_frame));
	}
}

static void process_stop(void)
{
	hooks_on = false;
}

const struct rt_source rt_source_compiler_hooks = {
	.name = "compiler hooks",
	.enabled = enabled,
	.process_start = process_start,
	.thread_stop = thread_stop,
	.fork_child = fork_child,
	.process_stop = process_stop,
};
