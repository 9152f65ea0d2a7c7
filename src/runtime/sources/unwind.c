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

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../../arch/arch.h"
#ifdef SYSCOPE_HAVE_PATCHING
#include "../patch/patch.h"
#endif

#ifdef SYSCOPE_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>

/*
 * libunwind is loaded with dlopen, not linked: libsyscope.so then depends on libc alone, and
 * goes into any program (one without libunwind installed too: a copy shipped next to
 * libsyscope.so is the fallback). The names are libunwind's own (its macros expand unw_step
 * to _ULx86_64_step and so on), taken here as strings.
 */
#define UNW_NAME_(x) #x
#define UNW_NAME(x) UNW_NAME_(x)

static struct {
	int (*init_local)(unw_cursor_t *, unw_context_t *);
	int (*init_local2)(unw_cursor_t *, unw_context_t *, int);
	int (*step)(unw_cursor_t *);
	int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
	int (*is_signal_frame)(unw_cursor_t *);
	int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
	int (*getcontext)(unw_context_t *);
	unw_addr_space_t *local_addr_space;
} unw;

static void *open_libunwind(void)
{
	char path[PATH_MAX], *slash;
	Dl_info self;
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);

	if (h || !dladdr((void *)open_libunwind, &self) || !self.dli_fname)
		return h;
	snprintf(path, sizeof(path), "%s", self.dli_fname);
	slash = strrchr(path, '/');
	if (!slash)
		return NULL;
	snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path), "libunwind.so.8");
	return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

#define LOAD(field, sym) (*(void **)&unw.field = dlsym(h, UNW_NAME(sym)))

static bool load_libunwind(void)
{
	void *h = open_libunwind();

	if (!h)
		return false;
	if (LOAD(init_local, unw_init_local) && LOAD(init_local2, unw_init_local2) &&
	    LOAD(step, unw_step) && LOAD(get_reg, unw_get_reg) &&
	    LOAD(is_signal_frame, unw_is_signal_frame) &&
	    LOAD(set_caching_policy, unw_set_caching_policy) &&
	    LOAD(getcontext, unw_tdep_getcontext) && LOAD(local_addr_space, unw_local_addr_space))
		return true;
	dlclose(h);
	return false;
}
#endif

static bool use_fp;

void rt_unwind_init(void)
{
	use_fp = !strcmp(sc_str(&rt_proc.settings, SC_SET_SAMPLING_UNWINDER), "fp");
	if (use_fp)
		return;
#ifdef SYSCOPE_HAVE_LIBUNWIND
	if (load_libunwind()) {
		/* Per-thread caches keep unw_step lock-free in signal handlers; one local unwind
		 * here runs libunwind's one-time initialization outside any handler. */
		unw_context_t ctx;
		unw_cursor_t cur;
		int lib = rt_fd_enter_library(); /* its address-validation pipe is made here */

		unw.set_caching_policy(*unw.local_addr_space, UNW_CACHE_PER_THREAD);
		unw.getcontext(&ctx);
		unw.init_local(&cur, &ctx);
		unw.step(&cur);
		rt_fd_leave_library(lib);
		return;
	}
	{
		const char *why = dlerror();

		rt_note(SC_NOTE_WARN,
			"libunwind.so.8 could not be loaded (%s): call stacks are walked with "
			"frame pointers, so frames of code built without them are missing",
			why ? why : "a function is missing from it");
	}
#endif
	use_fp = true;
}

/* A return address that is the exit stub of runtime patching stands for the one the shadow
 * stack keeps for that stack slot. */
static inline uintptr_t real_return(uintptr_t ret, uintptr_t slot)
{
#ifdef SYSCOPE_HAVE_PATCHING
	if (ret == (uintptr_t)rt_patch_exit_stub) {
		uint64_t real = rt_patch_real_return(slot);

		return real ? (uintptr_t)real : ret;
	}
#else
	(void)slot;
#endif
	return ret;
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
		ret = real_return(ret, fp + ARCH_FP_RET_OFFSET);
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

#if defined(SYSCOPE_HAVE_PATCHING) && defined(SYSCOPE_HAVE_LIBUNWIND)
/*
 * The cursor stands at the exit stub of runtime patching: the frame below it had its return
 * address swapped. Restart the walk at the address the shadow stack keeps for that slot
 * (just below the cursor's stack pointer), with the registers libunwind recovered so far.
 * Returns 0, or -1 when the slot is unknown (the walk stops there, as it would have).
 */
static int restart_past_exit_stub(unw_cursor_t *cur, ucontext_t *ctx, unw_word_t *ip)
{
	static const struct {
		int unw, greg;
	} regs[] = {
		{ UNW_X86_64_RBX, REG_RBX }, { UNW_X86_64_RBP, REG_RBP },
		{ UNW_X86_64_R12, REG_R12 }, { UNW_X86_64_R13, REG_R13 },
		{ UNW_X86_64_R14, REG_R14 }, { UNW_X86_64_R15, REG_R15 },
		{ UNW_X86_64_RSP, REG_RSP },
	};
	unw_word_t sp, v;
	uint64_t real;

	if (unw.get_reg(cur, UNW_REG_SP, &sp) < 0 || !(real = rt_patch_real_return(sp - 8)))
		return -1;
	memset(ctx, 0, sizeof(*ctx));
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		if (unw.get_reg(cur, regs[i].unw, &v) >= 0)
			ctx->uc_mcontext.gregs[regs[i].greg] = (greg_t)v;
	ctx->uc_mcontext.gregs[REG_RIP] = (greg_t)real;
	if (unw.init_local2(cur, (unw_context_t *)ctx, 0) < 0)
		return -1;
	*ip = real;
	return 0;
}
#endif

static int unwind_libunwind(const ucontext_t *uc, struct rt_thread *t, uint64_t *frames, int max,
			    uint16_t *flags);

int rt_unwind(void *ucv, struct rt_thread *t, uint64_t *frames, int max, uint16_t *flags)
{
	const ucontext_t *uc = ucv;
	int lib, n;

	if (max <= 0)
		return 0;
	if (use_fp)
		return unwind_fp(uc, t, frames, max, flags);
	/* libunwind may close and recreate its pipe while it validates addresses. */
	lib = rt_fd_enter_library();
	n = unwind_libunwind(uc, t, frames, max, flags);
	rt_fd_leave_library(lib);
	return n;
}

static int unwind_libunwind(const ucontext_t *uc, struct rt_thread *t, uint64_t *frames, int max,
			    uint16_t *flags)
{
#ifdef SYSCOPE_HAVE_LIBUNWIND
	unw_cursor_t cur;
	int n = 0;
	bool exact = false;
#ifdef SYSCOPE_HAVE_PATCHING
	ucontext_t resume;
#endif

	/* On x86-64 and aarch64 unw_context_t is the ucontext_t the kernel gave the handler. */
	if (unw.init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0) {
		*flags |= SC_SAMPLE_UNWIND_ERR;
		frames[0] = arch_uc_pc(uc);
		return 1;
	}
	for (;;) {
		unw_word_t ip = 0;
		int step;

		unw.get_reg(&cur, UNW_REG_IP, &ip);
		if (!ip)
			break;
#ifdef SYSCOPE_HAVE_PATCHING
		if (ip == (unw_word_t)(uintptr_t)rt_patch_exit_stub &&
		    restart_past_exit_stub(&cur, &resume, &ip) < 0)
			break;
#endif
		frames[n] = exact && n > 0 ? ip + 1 : ip;
		n++;
		exact = unw.is_signal_frame(&cur) > 0;
		step = unw.step(&cur);
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
	(void)uc, (void)t, (void)frames, (void)max, (void)flags;
	return 0;
#endif
}
