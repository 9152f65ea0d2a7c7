/* SPDX-License-Identifier: MIT */
/*
 * The frame-pointer unwinder: a walk of the frame-pointer chain, reading memory only inside
 * the thread's known stack, so that a bogus frame pointer ends the walk instead of faulting.
 * Correct only through code built with frame pointers; several times faster than libunwind.
 */
#include "unwind_backend.h"

#include "../../arch/arch.h"
#include "../patch/patch.h"

static bool init_fp(void)
{
	return true;
}

#ifndef ARCH_NO_FP_UNWIND
/*
 * The entry stub of runtime patching returns into a function's trampoline (`push $id; call
 * *stub`), which has no frame: the function has not begun, and the caller's return address
 * lies above the id. Given `slot`, where the return into the trampoline is, the function
 * (read as a return address: in it) and that return address go into `frames`. Returns how
 * many frames were added: 0 when the bytes before the return are no trampoline's.
 */
static int through_trampoline(uintptr_t slot, uintptr_t hi, uint64_t *frames, int n, int max,
			      uint16_t *flags)
{
	uint32_t id;
	uint64_t func;

	if (slot + 24 > hi || !rt_patch_trampoline_id(*(const uintptr_t *)slot, &id) ||
	    !(func = rt_patch_func_of(id)))
		return 0;
	if (n + 2 > max) {
		*flags |= SC_SAMPLE_TRUNCATED;
		return 0;
	}
	frames[n] = func + 1;
	frames[n + 1] = rt_unwind_real_return(*(const uintptr_t *)(slot + 16), slot + 16);
	return 2;
}
#endif

static int unwind_fp(void *ucv, struct rt_thread *t, uint64_t *frames, int max, uint16_t *flags)
{
#ifdef ARCH_NO_FP_UNWIND
	(void)ucv;
	(void)t;
	(void)frames;
	(void)max;
	*flags |= SC_SAMPLE_UNWIND_ERR;
	return 0;
#else
	const ucontext_t *uc = ucv;
	uintptr_t fp = arch_uc_fp(uc), lo = arch_uc_sp(uc), hi = t->stack_hi;
	int n = 0, k;
	/* The frame at fp is the entry stub's: its return goes into a trampoline. */
	bool stub_frame;
	uint64_t orig;
	unsigned adjust;
	enum rt_tramp_where where;

	frames[n++] = arch_uc_pc(uc);
	/* In a trampoline's own instructions: the function's code it stands for (tramp_map.c);
	 * the frame pointer is the function's or its caller's, as at that code. */
	where = rt_patch_tramp_origin(frames[0], &orig, &adjust);
	if (where)
		frames[0] = orig;
	if (!hi || lo < t->stack_lo || lo >= hi)
		return n; /* unknown stack, or running on another one (sigaltstack, coroutine) */
	/* Before the function began, fp is its caller's: the return into the caller is on top
	 * of the stack (a walk from fp alone would skip the caller). */
	if (where == RT_TRAMP_AT_ENTRY && lo + adjust + 8 <= hi && n < max)
		frames[n++] = rt_unwind_real_return(*(const uintptr_t *)(lo + adjust), lo + adjust);
	/* In the entry stub before its frame is made (a throttled function's counted call):
	 * fp is still the caller's, the return into the trampoline at a known place. */
	k = rt_patch_entry_stub_slot(frames[0]);
	if (k >= 0)
		n += through_trampoline(lo + (uintptr_t)k, hi, frames, n, max, flags);
	stub_frame = k == -1;
	while (fp >= lo && fp + 16 <= hi && !(fp & 7)) {
		uintptr_t next = *(const uintptr_t *)(fp + ARCH_FP_NEXT_OFFSET);
		uintptr_t ret = *(const uintptr_t *)(fp + ARCH_FP_RET_OFFSET);
		int added;

		if (!ret)
			break;
		if (stub_frame && (added = through_trampoline(fp + ARCH_FP_RET_OFFSET, hi, frames,
							      n, max, flags))) {
			n += added; /* the function and its caller, not the trampoline */
		} else {
			ret = rt_unwind_real_return(ret, fp + ARCH_FP_RET_OFFSET);
			if (n == max) {
				*flags |= SC_SAMPLE_TRUNCATED;
				break;
			}
			frames[n++] = ret;
		}
		stub_frame = rt_patch_in_entry_stub(frames[n - 1]);
		if (next <= fp)
			break;
		lo = fp + 16;
		fp = next;
	}
	return n;
#endif
}

const struct rt_unwinder rt_unwinder_fp = {
	.name = "fp",
	.init = init_fp,
	.unwind = unwind_fp,
};
