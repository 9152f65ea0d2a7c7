/* SPDX-License-Identifier: MIT */
/*
 * Stack unwinding inside the sampling signal handler, from the interrupted context, by one
 * of the backends of the table below (unwind_backend.h).
 *
 * libunwind (DWARF CFI, unwind_libunwind.c) works on any code, with or without frame
 * pointers. The frame-pointer walk (unwind_fp.c) is several times faster but only correct
 * through code built with frame pointers; it reads memory only inside the thread's known
 * stack, so a bogus frame pointer ends the walk instead of faulting.
 *
 * frames[0] is the interrupted PC; later frames are return addresses, which the reader moves
 * back by one byte to find the call. A frame interrupted by a nested signal (the one after
 * the kernel's signal trampoline) is an exact PC: it is stored plus one so that the reader's
 * adjustment lands on it.
 */
#include "unwind_backend.h"

#include <string.h>

/* The fallback order: the one SAMPLING_UNWINDER names is tried first, then those after it. */
static const struct rt_unwinder *const unwinders[] = {
#ifdef SYSCOPE_HAVE_LIBUNWIND
	&rt_unwinder_libunwind,
#endif
	&rt_unwinder_fp, /* last: it always starts */
};

#define NUNWINDERS (sizeof(unwinders) / sizeof(unwinders[0]))

/* The chosen backend (frame pointers until rt_unwind_init): one indirect call per sample. */
static const struct rt_unwinder *unwinder = &rt_unwinder_fp;

void rt_unwind_init(void)
{
	const char *want = sc_str(&rt_proc.settings, SC_SET_SAMPLING_UNWINDER);
	size_t i = 0;

	while (i < NUNWINDERS && strcmp(unwinders[i]->name, want))
		i++;
	if (i == NUNWINDERS)
		i = 0; /* one this build lacks: the table's order from the top */
	for (; i < NUNWINDERS; i++)
		if (unwinders[i]->init()) {
			unwinder = unwinders[i];
			return;
		}
}

void rt_unwind_release(void)
{
	const struct rt_unwinder *was = unwinder;

	unwinder = &rt_unwinder_fp;
	if (was->release)
		was->release();
}

int rt_unwind(void *ucontext, struct rt_thread *t, uint64_t *frames, int max, uint16_t *flags)
{
	if (max <= 0)
		return 0;
	return unwinder->unwind(ucontext, t, frames, max, flags);
}
