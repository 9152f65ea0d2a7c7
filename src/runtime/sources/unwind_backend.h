/* SPDX-License-Identifier: MIT */
/*
 * The sampled-stack unwinders behind rt_unwind (unwind.c): one descriptor each, in the
 * table of unwind.c, whose order is the fallback order. SAMPLING_UNWINDER names the first
 * one tried; a backend whose init fails passes to the next, and the last (frame pointers)
 * always starts.
 *
 * unwind runs in the sampling signal handler: async-signal-safe and lock-free, called with
 * max > 0, filling frames as unwind.c describes. rt_unwind calls it once per sample, so a
 * backend keeps its per-frame work free of indirect calls of its own making.
 */
#ifndef SYSCOPE_RUNTIME_SOURCES_UNWIND_BACKEND_H
#define SYSCOPE_RUNTIME_SOURCES_UNWIND_BACKEND_H

#include "source.h"

#include "../patch/patch.h"

struct rt_unwinder {
	const char *name; /* its token in SAMPLING_UNWINDER */
	/* Once, in normal context; false: this backend is off, the next one is tried. */
	bool (*init)(void);
	int (*unwind)(void *ucontext, struct rt_thread *t, uint64_t *frames, int max,
		      uint16_t *flags);
	/* attach's detach, no sample in progress or to come: give back what init took
	 * (NULL: nothing); init runs again at the next attach. */
	void (*release)(void);
};

#ifdef SYSCOPE_HAVE_LIBUNWIND
extern const struct rt_unwinder rt_unwinder_libunwind; /* unwind_libunwind.c */
#endif
extern const struct rt_unwinder rt_unwinder_fp; /* unwind_fp.c */

/* Shared by the backends: a return address that is the exit stub of runtime patching stands
 * for the one the shadow stack keeps for that stack slot. */
static inline uintptr_t rt_unwind_real_return(uintptr_t ret, uintptr_t slot)
{
	if (rt_patch_is_exit_stub(ret)) {
		uint64_t real = rt_patch_real_return(slot);

		return real ? (uintptr_t)real : ret;
	}
	return ret;
}

#endif /* SYSCOPE_RUNTIME_SOURCES_UNWIND_BACKEND_H */
