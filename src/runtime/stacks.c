/* SPDX-License-Identifier: MIT */
/*
 * The machine stacks a thread's calls run on, for the tracers of calls (patching's shadow
 * stack, the compiler hooks): the thread's own stack, its signal stack, and the stacks of
 * contexts made by makecontext (coroutines, user-level threads), learnt by the makecontext
 * wrapper here. Built in every build, with or without patching.
 */
#include "rt.h"

#include <signal.h>
#include <stdarg.h>
#include <ucontext.h>

static bool on_thread_stack(uint64_t a)
{
	return rt_self.stack_lo && a >= rt_self.stack_lo && a < rt_self.stack_hi;
}

static bool on_alt_stack(struct rt_alt_stack *alt, uint64_t a)
{
	if (!alt->asked) {
		stack_t ss;

		alt->asked = true;
		if (!sigaltstack(NULL, &ss) && !(ss.ss_flags & SS_DISABLE)) {
			alt->lo = (uint64_t)(uintptr_t)ss.ss_sp;
			alt->hi = alt->lo + ss.ss_size;
		}
	}
	return a >= alt->lo && a < alt->hi;
}

/*
 * Whether a call whose frame is at `frame` on the machine stack is over, seen from code at
 * `here` that runs after it (an entry, or an exit below it). On the same stack, when the
 * code is at or above it: the stack went back past it (longjmp). A frame on the signal
 * stack with the code elsewhere: its handler was left (siglongjmp). Any other frame, on a
 * stack syscope does not know (a coroutine's, a user-level thread's), may only be
 * suspended: it stays, and its own return finds it.
 */
bool rt_frame_left(uint64_t frame, uint64_t here, struct rt_alt_stack *alt)
{
	if (on_thread_stack(frame) && on_thread_stack(here))
		return frame <= here;
	if (on_alt_stack(alt, frame))
		return !on_alt_stack(alt, here) || frame <= here;
	return false;
}

/*
 * The stacks of contexts made by makecontext (coroutines, user-level threads), learnt by
 * the makecontext wrapper: a call on one of them gets that stack's number as its context,
 * so that the reader pairs and nests calls per stack. Numbers are reused round-robin past
 * MADE_STACKS; a stack made again (the same memory) keeps its number.
 */
#define MADE_STACKS 254u

static struct {
	_Atomic uint64_t lo, hi;
} made[MADE_STACKS];
static atomic_uint nmade;

uint16_t rt_stack_context(uint64_t frame)
{
	unsigned n;

	if (on_thread_stack(frame))
		return 0;
	n = atomic_load_explicit(&nmade, memory_order_acquire);
	for (unsigned i = 0; i < n && i < MADE_STACKS; i++)
		if (frame >= atomic_load_explicit(&made[i].lo, memory_order_relaxed) &&
		    frame < atomic_load_explicit(&made[i].hi, memory_order_relaxed))
			return (uint16_t)((i + 1) << SC_FUNC_CONTEXT_SHIFT);
	return 0;
}

static void remember_stack(const stack_t *ss)
{
	uint64_t lo = (uint64_t)(uintptr_t)ss->ss_sp, hi = lo + ss->ss_size;
	unsigned n = atomic_load_explicit(&nmade, memory_order_acquire), i;

	if (!ss->ss_sp || !ss->ss_size)
		return;
	for (i = 0; i < n && i < MADE_STACKS; i++)
		if (atomic_load_explicit(&made[i].lo, memory_order_relaxed) == lo) {
			atomic_store_explicit(&made[i].hi, hi, memory_order_relaxed);
			return;
		}
	i = atomic_fetch_add_explicit(&nmade, 1, memory_order_acq_rel) % MADE_STACKS;
	atomic_store_explicit(&made[i].hi, 0, memory_order_relaxed); /* no match meanwhile */
	atomic_store_explicit(&made[i].lo, lo, memory_order_relaxed);
	atomic_store_explicit(&made[i].hi, hi, memory_order_release);
	if (atomic_load_explicit(&nmade, memory_order_relaxed) > MADE_STACKS)
		atomic_store_explicit(&nmade, MADE_STACKS, memory_order_relaxed);
}

bool rt_on_known_stack(uint64_t a, struct rt_alt_stack *alt)
{
	return on_thread_stack(a) || on_alt_stack(alt, a);
}

/*
 * makecontext: the new context's stack is remembered (rt_stack_context), then the call goes
 * on as made. Its arguments are the machine words glibc itself reads (va_arg of 64 bits);
 * up to MAKECONTEXT_ARGS of them are passed on, which is more than any program we know.
 */
#define MAKECONTEXT_ARGS 32

RT_EXPORT void makecontext(ucontext_t *ucp, void (*func)(void), int argc, ...)
{
	/* The caller's scope: a makecontext of another C library loaded RTLD_LOCAL. */
	static struct rt_real_cache real_makecontext;
	__typeof__(&makecontext) fn = (__typeof__(&makecontext))rt_real_find(
		"makecontext", &real_makecontext, __builtin_return_address(0));
	long a[MAKECONTEXT_ARGS] = { 0 };
	va_list ap;

	if (!fn)
		rt_real_missing("makecontext");
	if (ucp)
		remember_stack(&ucp->uc_stack);
	if (argc > MAKECONTEXT_ARGS)
		rt_note(SC_NOTE_WARN,
			"makecontext with %d arguments: only the first %d are passed on", argc,
			MAKECONTEXT_ARGS);
	va_start(ap, argc);
	for (int i = 0; i < argc && i < MAKECONTEXT_ARGS; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	fn(ucp, func, argc, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10],
	   a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22],
	   a[23], a[24], a[25], a[26], a[27], a[28], a[29], a[30], a[31]);
}
