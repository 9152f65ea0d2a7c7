/* SPDX-License-Identifier: MIT */
/*
 * Stack unwinding inside the sampling signal handler, from the interrupted context.
 *
 * libunwind (DWARF CFI) works on any code, with or without frame pointers. The frame-pointer
 * walk is several times faster but only correct through code built with frame pointers; it
 * reads memory only inside the thread's known stack, so a bogus frame pointer ends the walk
 * instead of faulting.
 *
 * frames[0] is the interrupted PC; later frames are return addresses, which the reader moves
 * back by one byte to find the call. A frame interrupted by a nested signal (the one after
 * the kernel's signal trampoline) is an exact PC: it is stored plus one so that the reader's
 * adjustment lands on it.
 */
#include "source.h"

#include <string.h>

#include "../../arch/arch.h"

#ifdef SYSCOPE_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

static bool use_fp;

void rt_unwind_init(void)
{
	use_fp = !strcmp(sc_str(&rt_proc.settings, SC_SET_SAMPLING_UNWINDER), "fp");
#ifdef SYSCOPE_HAVE_LIBUNWIND
	if (!use_fp) {
		/* Per-thread caches keep unw_step lock-free in signal handlers; one local unwind
		 * here runs libunwind's one-time initialization outside any handler. */
		unw_context_t ctx;
		unw_cursor_t cur;

		unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
		unw_getcontext(&ctx);
		unw_init_local(&cur, &ctx);
		unw_step(&cur);
	}
#else
	use_fp = true;
#endif
}

static int unwind_fp(const ucontext_t *uc, const struct rt_thread *t, uint64_t *frames, int max,
		     uint16_t *flags)
{
#ifdef ARCH_NO_FP_UNWIND
	(void)uc;
	(void)t;
	(void)frames;
	(void)max;
	*flags |= SC_SAMPLE_UNWIND_ERR;
	return 0;
#else
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

int rt_unwind(void *ucv, struct rt_thread *t, uint64_t *frames, int max, uint16_t *flags)
{
	const ucontext_t *uc = ucv;

	if (max <= 0)
		return 0;
	if (use_fp)
		return unwind_fp(uc, t, frames, max, flags);
#ifdef SYSCOPE_HAVE_LIBUNWIND
	unw_cursor_t cur;
	int n = 0;
	bool exact = false;

	/* On x86-64 and aarch64 unw_context_t is the ucontext_t the kernel gave the handler. */
	if (unw_init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0) {
		*flags |= SC_SAMPLE_UNWIND_ERR;
		frames[0] = arch_uc_pc(uc);
		return 1;
	}
	for (;;) {
		unw_word_t ip = 0;
		int step;

		unw_get_reg(&cur, UNW_REG_IP, &ip);
		if (!ip)
			break;
		frames[n] = exact && n > 0 ? ip + 1 : ip;
		n++;
		exact = unw_is_signal_frame(&cur) > 0;
		step = unw_step(&cur);
		if (step <= 0) {
			if (step < 0)
				*flags |= SC_SAMPLE_UNWIND_ERR;
			break;
		}
		if (n == max) {
			*flags |= SC_SAMPLE_TRUNCATED;
			break;
		}
	}
	return n;
#else
	return 0;
#endif
}
