/* SPDX-License-Identifier: MIT */
/*
 * The per-thread shadow stack of patched functions: for each call in progress, where its
 * return address lives on the machine stack (the slot), the address itself, and the
 * function. Entries and exits are async-signal-safe (instrumented signal handlers nest on
 * the same shadow stack) and allocation-free after the thread's first call (one mmap).
 *
 * Coroutines (ucontext, user-level threads) interleave the calls of several stacks on one
 * shadow stack: a call suspended on another stack stays where it is while calls on this
 * one come and go above it, and its return takes it out from under them
 * (exit_below_others). Only the thread's stack and its signal stack are known, so a frame
 * on any other stack is never taken for dead: at worst it stays after its coroutine was
 * destroyed (and its slot is then only touched while its page is still mapped).
 *
 * A frame can go away without returning:
 *   - longjmp, or a signal handler that does not return: the next exit finds its own
 *     frame by its exact slot, below the dead ones, and ends those too; an entry whose slot
 *     is above frames on the same machine stack ends them right away. Their time stops at
 *     the first longjmp since the last entry or exit (our longjmp wrappers note it), not
 *     at that entry or exit, which may come much later when the functions in between are
 *     throttled;
 *   - C++ exceptions: the unwinder reads return addresses from the stack, and our exit
 *     stub has none to give, so every return address is put back before unwinding starts
 *     (_Unwind_RaiseException, _Unwind_Resume, _Unwind_Resume_or_Rethrow,
 *     _Unwind_ForcedUnwind) and the surviving frames are re-armed when a handler catches
 *     (__cxa_begin_catch); frames below the catch ended;
 *   - pthread_exit: return addresses are put back and every frame ends.
 * A return whose frame is not on the shadow stack cannot happen by construction; were it
 * to, there is no address to return to, and the runtime says so and aborts.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <unwind.h>

#include "../func_table.h"
#include "patch.h"

#define SHADOW_FRAMES 65536u

/* A frame whose slot holds the original address again (unwinding) is "unarmed"; one whose
 * exit was recorded already (it went away) is "ended". */
#define FR_UNARMED 1u
#define FR_ENDED 2u
#define SLOT_WRITING UINT64_MAX /* frame reserved, not written yet (see rt_patch_enter) */

#define FRAME_LOOPS 4 /* loops open at once in one call (deeper ones are not recorded) */

struct frame {
	uint64_t slot; /* address of the return address on the machine stack */
	uint64_t ret;  /* the original return address */
	uint32_t id;
	uint32_t flags;
	uint32_t loops[FRAME_LOOPS]; /* loop ids open in this call, outermost first */
	uint32_t nloops;
	uint32_t fid; /* rt_func_id of the function */
	uint64_t start;
	uint64_t loop_start[FRAME_LOOPS];
};

struct shadow {
	struct frame *f;
	uint32_t depth;
	bool failed; /* the mmap failed: this thread is not traced */
	bool ended;  /* the thread's end dropped the stack: a call now is a lost one */
};

static RT_TLS struct shadow shadow;
/* The first longjmp since this thread's last patched entry or exit (0: none). The calls it
 * left end there, not at the next entry or exit that finds them gone: once the functions in
 * between are throttled, that may be much later (Lua's pcall loop: every lua_error call,
 * left by longjmp, seemed to last until the next one, 80% of the run instead of 2%). */
static RT_TLS uint64_t jumped_at;

/* When the calls found gone now ended: at the first longjmp since the last event, or now. */
static uint64_t left_at(uint64_t now)
{
	uint64_t j = jumped_at;

	jumped_at = 0;
	return j && j <= now ? j : now;
}
static atomic_uint_fast64_t overflows;
static bool hooks_ready;
const uint64_t *rt_patch_func_addr;

#define barrier() __asm__ __volatile__("" ::: "memory") /* order stores for signal handlers */

static struct frame *frames(void)
{
	void *p;

	if (shadow.f || shadow.failed)
		return shadow.f;
	p = mmap(NULL, SHADOW_FRAMES * sizeof(struct frame), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		shadow.failed = true;
		return NULL;
	}
	shadow.f = p;
	return p;
}

/* Close the loops open in `fr` down to `keep` of them (`open`: SC_FUNC_OPEN, the thread or
 * process ends with them). */
static void end_loops(struct frame *fr, uint32_t keep, uint64_t ts, uint16_t open)
{
	while (fr->nloops > keep) {
		uint32_t n = --fr->nloops;
		uint64_t lo = rt_patch_loops[fr->loops[n]].lo;

		rt_func_call_record(open | SC_FUNC_LOOP | rt_stack_context(fr->slot),
				    rt_func_id(lo, SC_FUNC_LOOP), lo, fr->loop_start[n], ts);
	}
}

static void end_frame_as(struct frame *fr, uint64_t ts, uint16_t open)
{
	if (fr->flags & FR_ENDED)
		return;
	fr->flags |= FR_ENDED;
	end_loops(fr, 0, ts, open);
	if (fr == shadow.f)
		rt_func_called_outermost(fr->fid);
	rt_func_call_record(open | rt_stack_context(fr->slot), fr->fid, rt_patch_func_addr[fr->id],
			    fr->start, ts);
	/* Throttled by this call or another: its entry stub only counts from now on, unless its
	 * time would be in no caller's (then its calls stay timed, counted on exit). */
	if (!open && rt_func_throttle_native && rt_func_count_only(fr->fid))
		rt_patch_count_only(fr->id);
}

static void end_frame(struct frame *fr, uint64_t ts)
{
	end_frame_as(fr, ts, 0);
}

static bool frame_is_over(const struct frame *fr, uint64_t slot, struct rt_alt_stack *alt)
{
	return fr->slot != SLOT_WRITING && rt_frame_left(fr->slot, slot, alt);
}

/* Frames on top whose calls are over (above the new call's slot, or at the very slot its
 * return address now overwrites): ended and dropped, down to the first that may still
 * return. `tail`: the new call is a tail call, sharing its caller's slot (which holds our
 * exit stub), and that caller stays. */
static void end_dead_frames(uint64_t slot, bool tail, uint64_t ts)
{
	struct rt_alt_stack alt = { 0 };

	while (shadow.depth) {
		struct frame *fr = &shadow.f[shadow.depth - 1];

		/* The common case: the top frame is the caller's, further up the same stack. */
		if (fr->slot == SLOT_WRITING || fr->slot > slot || (fr->slot == slot && tail))
			return;
		/* The same slot, now holding another return address: that call is over, on
		 * whatever stack (longjmp back to where it was called, and a new call). */
		if (fr->slot != slot && !frame_is_over(fr, slot, &alt))
			return;
		end_frame(fr, ts);
		shadow.depth--;
	}
}

void rt_patch_enter(uint32_t id, uint64_t *ret_slot)
{
	struct frame *f;
	uint32_t d;
	uint64_t ts;

	if (!rt_recording())
		return;
	if (!(f = frames())) {
		/* A signal handler's call on a thread that ended (its stack is gone): said. */
		if (shadow.ended)
			rt_count_lost_record(sizeof(struct sc_rec_func_call), SC_LOST_NO_THREAD);
		return;
	}
	ts = rt_now_ns();
	end_dead_frames((uint64_t)(uintptr_t)ret_slot,
			*ret_slot == (uint64_t)(uintptr_t)rt_patch_exit_stub, left_at(ts));
	d = shadow.depth;
	if (d == SHADOW_FRAMES) {
		atomic_fetch_add_explicit(&overflows, 1, memory_order_relaxed);
		return;
	}
	/* Reserve, then fill: a signal handler arriving in between sees a frame it skips. */
	f[d].slot = SLOT_WRITING;
	barrier();
	shadow.depth = d + 1;
	barrier();
	f[d].ret = *ret_slot;
	f[d].id = id;
	f[d].flags = 0;
	f[d].nloops = 0;
	f[d].start = ts;
	f[d].fid = rt_func_id(rt_patch_func_addr[id], 0);
	barrier();
	f[d].slot = (uint64_t)(uintptr_t)ret_slot;
	barrier();
	*ret_slot = (uint64_t)(uintptr_t)rt_patch_exit_stub;
	rt_func_entered(ts);
}

void rt_patch_loop(uint32_t probe_id)
{
	const struct rt_probe *p = &rt_patch_probes[probe_id];
	struct frame *f;
	uint32_t keep, bits;
	uint64_t ts;

	if (!shadow.depth || !rt_active() || rt_patch_counted[p->func_id])
		return; /* a throttled function's loops are not recorded: its calls have no frame */
	f = &shadow.f[shadow.depth - 1];
	/* The probe's own call: its frame is on top (its callees have returned). */
	if (f->slot == SLOT_WRITING || f->id != p->func_id || (f->flags & FR_ENDED))
		return;
	for (keep = f->nloops; keep > 0; keep--) {
		const struct rt_loop *l = &rt_patch_loops[f->loops[keep - 1]];

		if (p->addr >= l->lo && p->addr < l->hi)
			break;
	}
	if (keep == f->nloops && !p->enters)
		return; /* inside every open loop, entering none: nothing to record */
	ts = rt_now_ns();
	end_loops(f, keep, ts, 0); /* control left these */
	for (bits = 0; bits < 32 && rt_recording(); bits++) {
		uint32_t l = p->first_loop + bits, open = 0;

		if (!(p->enters & (1u << bits)))
			continue;
		for (uint32_t i = 0; i < f->nloops; i++)
			open |= f->loops[i] == l;
		if (open || f->nloops == FRAME_LOOPS)
			continue; /* another iteration, or too deep */
		f->loop_start[f->nloops] = ts;
		f->loops[f->nloops++] = l;
	}
}

static void lost_return(void)
{
	static const char msg[] = "syscope: a patched function returned through a frame the "
				  "shadow stack does not know; no address to return to\n";

	rt_note(SC_NOTE_WARN, "shadow stack: a return without its frame; aborting");
	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	abort();
}

/*
 * The return of frame `k` while frames above it remain: those whose calls are over
 * (longjmp) end; the others belong to calls suspended on another stack (coroutines) and
 * stay, moved down over frame `k`. Signals are blocked while frames move: a handler's
 * probes use the same array.
 */
static uint64_t exit_below_others(uint32_t k, uint64_t slot, uint64_t ts, uint64_t left)
{
	struct rt_alt_stack alt = { 0 };
	uint64_t ret = shadow.f[k].ret;
	sigset_t all, saved;
	uint32_t kept = k;

	sigfillset(&all);
	RT_REAL(pthread_sigmask)(SIG_BLOCK, &all, &saved);
	end_frame(&shadow.f[k], ts);
	for (uint32_t i = k + 1; i < shadow.depth; i++) {
		if (frame_is_over(&shadow.f[i], slot, &alt))
			end_frame(&shadow.f[i], left);
		else
			shadow.f[kept++] = shadow.f[i];
	}
	barrier();
	shadow.depth = kept;
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &saved, NULL);
	return ret;
}

uint64_t rt_patch_exit(uint64_t sp)
{
	uint64_t slot = sp - 8, ts = rt_now_ns(), left = left_at(ts), ret;
	uint32_t d = shadow.depth;

	while (d && shadow.f[d - 1].slot != slot)
		d--;
	if (!d)
		lost_return();
	if (d < shadow.depth)
		return exit_below_others(d - 1, slot, ts, left);
	end_frame(&shadow.f[d - 1], ts);
	ret = shadow.f[d - 1].ret;
	barrier();
	shadow.depth = d - 1;
	return ret;
}

uint64_t rt_patch_real_return(uint64_t slot)
{
	for (uint32_t i = shadow.depth; i > 0; i--) {
		const struct frame *fr = &shadow.f[i - 1];

		/* A tail call shares its caller's slot and keeps the exit stub as its "return
		 * address": the real one is in the caller's frame, further down. */
		if (fr->slot == slot && fr->ret != (uint64_t)(uintptr_t)rt_patch_exit_stub)
			return fr->ret;
	}
	return 0;
}

/* Whether a frame's slot can be read: on a stack syscope knows, yes; elsewhere (a
 * coroutine's stack, which may have been freed while the call was suspended) if its page is
 * still mapped (mincore fails with ENOMEM otherwise). Only exceptions and stack traces ask. */
static bool slot_mapped(const struct frame *fr, struct rt_alt_stack *alt)
{
	static long page;
	unsigned char resident;

	if (rt_on_known_stack(fr->slot, alt))
		return true;
	if (!page)
		page = sysconf(_SC_PAGESIZE);
	return page > 0 &&
	       !mincore((void *)(uintptr_t)(fr->slot & ~(uint64_t)(page - 1)), 1, &resident);
}

/* Put every original return address back (before an unwinder walks the stack). */
static void disarm_all(void)
{
	struct rt_alt_stack alt = { 0 };

	for (uint32_t i = shadow.depth; i > 0; i--) {
		struct frame *fr = &shadow.f[i - 1];
		uint64_t *slot = (uint64_t *)(uintptr_t)fr->slot;

		if (fr->slot == SLOT_WRITING || (fr->flags & FR_UNARMED) || !slot_mapped(fr, &alt))
			continue;
		if (*slot == (uint64_t)(uintptr_t)rt_patch_exit_stub)
			*slot = fr->ret;
		fr->flags |= FR_UNARMED;
	}
}

/* Frames still on the stack get their exit stub back (after an unwinder read it). */
static void rearm_all(uint64_t ts)
{
	struct rt_alt_stack alt = { 0 };

	for (uint32_t i = 0; i < shadow.depth; i++) {
		struct frame *fr = &shadow.f[i];
		uint64_t *slot = (uint64_t *)(uintptr_t)fr->slot;

		if (!(fr->flags & FR_UNARMED) || !slot_mapped(fr, &alt))
			continue;
		fr->flags &= ~FR_UNARMED;
		if (*slot == fr->ret)
			*slot = (uint64_t)(uintptr_t)rt_patch_exit_stub;
		else
			end_frame(fr, ts); /* no longer where we left it: its exit is unknown */
	}
}

/* A handler caught an exception: frames below `limit` (the catching function's stack
 * pointer) are gone; the others get their exit stub back. */
static void rearm_after_catch(uint64_t limit)
{
	uint64_t ts = rt_now_ns();
	struct rt_alt_stack alt = { 0 };

	/* The frames below the catch on its own stack; a coroutine's frames on top, on a
	 * stack syscope does not know, stay (frame_is_over). */
	while (shadow.depth && shadow.f[shadow.depth - 1].slot < limit &&
	       frame_is_over(&shadow.f[shadow.depth - 1], limit, &alt)) {
		end_frame(&shadow.f[shadow.depth - 1], ts);
		shadow.depth--;
	}
	rearm_all(ts);
}

/* ---- unwinding hooks: forward to the real functions after putting addresses back ----
 *
 * These are exported in every process (the loader binds them before any plan is read) and
 * cost a shadow-depth test when nothing is patched. The real function is the one the caller
 * would have reached without us (rt_real_find): the global scope's, or, for a libstdc++
 * loaded RTLD_LOCAL (a Python extension's), the one in its own scope. Were none loaded at
 * all, the hook does what a missing unwinder would: report failure, or abort where the
 * function has no way to fail. */

static struct rt_real_cache real__Unwind_RaiseException, real__Unwind_Resume,
	real__Unwind_Resume_or_Rethrow, real__Unwind_ForcedUnwind, real___cxa_begin_catch,
	real_pthread_exit, real_backtrace, real__Unwind_Backtrace;

#define REAL(name) \
	((__typeof__(&name))rt_real_find(#name, &real_##name, __builtin_return_address(0)))

static void missing_once(const char *name)
{
	static atomic_bool said;

	if (!atomic_exchange(&said, true))
		rt_note(SC_NOTE_WARN, "%s: defined by no loaded object; the call failed", name);
}

RT_EXPORT _Unwind_Reason_Code _Unwind_RaiseException(struct _Unwind_Exception *e)
{
	__typeof__(&_Unwind_RaiseException) fn = REAL(_Unwind_RaiseException);

	if (!fn) {
		missing_once("_Unwind_RaiseException");
		return _URC_FATAL_PHASE1_ERROR; /* the thrower terminates, as without an unwinder */
	}
	if (shadow.depth)
		disarm_all();
	return fn(e);
}

RT_EXPORT void _Unwind_Resume(struct _Unwind_Exception *e)
{
	__typeof__(&_Unwind_Resume) fn = REAL(_Unwind_Resume);

	if (!fn)
		rt_real_missing("_Unwind_Resume");
	if (shadow.depth)
		disarm_all();
	fn(e);
	abort(); /* _Unwind_Resume does not return */
}

RT_EXPORT _Unwind_Reason_Code _Unwind_Resume_or_Rethrow(struct _Unwind_Exception *e)
{
	__typeof__(&_Unwind_Resume_or_Rethrow) fn = REAL(_Unwind_Resume_or_Rethrow);

	if (!fn) {
		missing_once("_Unwind_Resume_or_Rethrow");
		return _URC_FATAL_PHASE1_ERROR;
	}
	if (shadow.depth)
		disarm_all();
	return fn(e);
}

RT_EXPORT _Unwind_Reason_Code _Unwind_ForcedUnwind(struct _Unwind_Exception *e,
						   _Unwind_Stop_Fn stop, void *arg)
{
	__typeof__(&_Unwind_ForcedUnwind) fn = REAL(_Unwind_ForcedUnwind);

	if (!fn) {
		missing_once("_Unwind_ForcedUnwind");
		return _URC_FATAL_PHASE2_ERROR;
	}
	if (shadow.depth)
		disarm_all();
	return fn(e, stop, arg);
}

RT_EXPORT void *__cxa_begin_catch(void *e);
RT_EXPORT void *__cxa_begin_catch(void *e)
{
	__typeof__(&__cxa_begin_catch) fn = REAL(__cxa_begin_catch);
	void *r;

	if (!fn)
		rt_real_missing("__cxa_begin_catch");
	r = fn(e);
	/* Our return address sits just below the catching function's frame. */
	if (shadow.depth && hooks_ready)
		rearm_after_catch((uint64_t)(uintptr_t)__builtin_frame_address(0) + 16);
	return r;
}

/*
 * Stack traces the program takes itself (glibc's backtrace, which loads libgcc_s's
 * _Unwind_Backtrace on its own, and _Unwind_Backtrace called directly): the unwinder stops
 * at the exit stub, which has no caller to give, so the real return addresses are put
 * back while it walks, and the stub again afterwards. `__builtin_return_address` reads the
 * stack directly and still sees the stub.
 */
RT_EXPORT int backtrace(void **buffer, int size)
{
	bool armed = shadow.depth && hooks_ready;
	void *small[257], **frames = small;
	__typeof__(&backtrace) fn = REAL(backtrace);
	int n;

	if (size <= 0 || !fn)
		return 0;
	/* The trace starts at this wrapper, which the program did not call: one frame more,
	 * and that one dropped. */
	if (size > 256 && !(frames = malloc(((size_t)size + 1) * sizeof(*frames))))
		return fn(buffer, size);
	if (armed)
		disarm_all();
	n = fn(frames, size + 1);
	if (armed)
		rearm_all(rt_now_ns());
	n = n > 1 ? n - 1 : 0;
	memcpy(buffer, frames + 1, (size_t)n * sizeof(*frames));
	if (frames != small)
		free(frames);
	return n;
}

struct trace_forward {
	_Unwind_Trace_Fn fn;
	void *arg;
	bool past_wrapper;
};

static _Unwind_Reason_Code skip_wrapper_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct trace_forward *f = arg;

	if (!f->past_wrapper) { /* the first frame is _Unwind_Backtrace's caller: ours */
		f->past_wrapper = true;
		return _URC_NO_REASON;
	}
	return f->fn(ctx, f->arg);
}

RT_EXPORT _Unwind_Reason_Code _Unwind_Backtrace(_Unwind_Trace_Fn fn, void *arg)
{
	struct trace_forward f = { .fn = fn, .arg = arg };
	bool armed = shadow.depth && hooks_ready;
	__typeof__(&_Unwind_Backtrace) real_fn = REAL(_Unwind_Backtrace);
	_Unwind_Reason_Code rc;

	if (!real_fn) {
		missing_once("_Unwind_Backtrace");
		return _URC_END_OF_STACK;
	}
	if (armed)
		disarm_all();
	rc = real_fn(skip_wrapper_frame, &f);
	if (armed)
		rearm_all(rt_now_ns());
	return rc;
}

/* longjmp and its kin: the time of the first since the last entry or exit, for the calls
 * it leaves (left_at). The jump itself is the C library's, from our frame, which it leaves
 * with the rest. */
static struct rt_real_cache real_longjmp, real__longjmp, real_siglongjmp, real___longjmp_chk;

void __longjmp_chk(jmp_buf env, int val) __attribute__((noreturn)); /* _FORTIFY_SOURCE's */

static void jumping(void)
{
	if (shadow.depth && !jumped_at)
		jumped_at = rt_now_ns();
}

RT_EXPORT void longjmp(jmp_buf env, int val)
{
	__typeof__(&longjmp) fn = REAL(longjmp);

	if (!fn)
		rt_real_missing("longjmp");
	jumping();
	fn(env, val);
}

RT_EXPORT void _longjmp(jmp_buf env, int val)
{
	__typeof__(&_longjmp) fn = REAL(_longjmp);

	if (!fn)
		rt_real_missing("_longjmp");
	jumping();
	fn(env, val);
}

RT_EXPORT void siglongjmp(sigjmp_buf env, int val)
{
	__typeof__(&siglongjmp) fn = REAL(siglongjmp);

	if (!fn)
		rt_real_missing("siglongjmp");
	jumping();
	fn(env, val);
}

RT_EXPORT void __longjmp_chk(jmp_buf env, int val)
{
	__typeof__(&__longjmp_chk) fn = REAL(__longjmp_chk);

	if (!fn)
		rt_real_missing("__longjmp_chk");
	jumping();
	fn(env, val);
}

RT_EXPORT void pthread_exit(void *value)
{
	uint64_t ts = rt_now_ns();
	__typeof__(&pthread_exit) fn = REAL(pthread_exit);

	if (!fn)
		rt_real_missing("pthread_exit");
	if (shadow.depth) {
		disarm_all();
		for (uint32_t i = shadow.depth; i > 0; i--)
			end_frame(&shadow.f[i - 1], ts);
		shadow.depth = 0;
	}
	fn(value);
	abort();
}

/* The thread's or process's end with calls still open (func_table.h): each written up to
 * `ts`, innermost first, and marked ended so that a return after all writes nothing. */
void rt_patch_shadow_end_open_calls(uint64_t ts)
{
	for (uint32_t i = shadow.depth; shadow.f && i > 0; i--)
		if (shadow.f[i - 1].slot != SLOT_WRITING)
			end_frame_as(&shadow.f[i - 1], ts, SC_FUNC_OPEN);
}

/* A fork child: calls entered in the parent are the parent's (written when they return
 * there), so their returns here write nothing. */
void rt_patch_shadow_fork_child(void)
{
	for (uint32_t i = 0; shadow.f && i < shadow.depth; i++)
		shadow.f[i].flags |= FR_ENDED;
}

void rt_patch_shadow_start(void)
{
	hooks_ready = true;
}

void rt_patch_shadow_thread_stop(void)
{
	rt_patch_shadow_end_open_calls(rt_now_ns());
	/* A thread whose frames are all gone; one still inside patched code keeps its stack.
	 * Dropped before it is unmapped, and never made again: a signal handler's patched call
	 * arriving now (a timer's, while the thread ends) must not write into it. */
	if (shadow.f && !shadow.depth) {
		struct frame *f = shadow.f;

		shadow.ended = shadow.failed = true;
		shadow.f = NULL;
		barrier();
		munmap(f, SHADOW_FRAMES * sizeof(struct frame));
	}
}

uint64_t rt_patch_shadow_overflows(void)
{
	return atomic_load_explicit(&overflows, memory_order_relaxed);
}
