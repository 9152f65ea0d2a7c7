/* SPDX-License-Identifier: MIT */
/*
 * The frame-pointer unwinder: a walk of the frame-pointer chain, reading memory only inside
 * the thread's known stack, so that a bogus frame pointer ends the walk instead of faulting.
 * Correct only through code built with frame pointers; several times faster than libunwind.
 */
#include "unwind_backend.h"

#include "../../arch/arch.h"

static bool init_fp(void)
{
	return true;
}

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
	int n = 0;

	frames[n++] = arch_uc_pc(uc);
	if (!hi || lo < t->stack_lo || lo >= hi)
		return n; /* unknown stack, or running on another one (sigaltstack, coroutine) */
	while (fp >= lo && fp + 16 <= hi && !(fp & 7)) {
		uintptr_t next = *(const uintptr_t *)(fp + ARCH_FP_NEXT_OFFSET);
		uintptr_t ret = *(const uintptr_t *)(fp + ARCH_FP_RET_OFFSET);

		if (!ret)
			break;
		ret = rt_unwind_real_return(ret, fp + ARCH_FP_RET_OFFSET);
		if (n == max) {
			*flags |= SC_SAMPLE_TRUNCATED;
			break;
		}
		frames[n++] = ret;
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
