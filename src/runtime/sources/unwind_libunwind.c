/* SPDX-License-Identifier: MIT */
/*
 * The libunwind unwinder (DWARF CFI): works on any code, with or without frame pointers.
 * Built only where libunwind's headers were found (CMakeLists.txt).
 *
 * libunwind is loaded with dlopen, not linked: libsyscope.so then depends on libc alone, and
 * goes into any program (one without libunwind installed too: a copy shipped next to
 * libsyscope.so is the fallback). The names are libunwind's own (its macros expand unw_step
 * to _ULx86_64_step and so on), taken here as strings.
 */
#include "unwind_backend.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../arch/arch.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

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

static void *handle;

/*
 * libunwind's address-validation pipe, made at its one-time initialization. In a process that
 * syscope did not start, no wrapper of ours sees it made: it is told apart as the one pipe,
 * non-blocking and close-on-exec at both ends, that appeared across that initialization
 * (init_libunwind runs on syscope's own thread). attach's detach closes it once libunwind is
 * unloaded (a fresh copy makes its own at the next attach).
 */
#define FD_SEEN_MAX 4096
static struct {
	int fd[2];
	ino_t ino;
} pipe_made = { { -1, -1 }, 0 };

/* The descriptors open now (below FD_SEEN_MAX), but the listing's own. */
static void fds_open(unsigned char *seen)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	memset(seen, 0, FD_SEEN_MAX);
	while (d && (de = readdir(d))) {
		int fd = atoi(de->d_name);

		if (fd > 0 && fd < FD_SEEN_MAX && fd != dirfd(d))
			seen[fd] = 1;
	}
	if (d)
		closedir(d);
}

static bool is_validation_end(int fd, ino_t *ino)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL), fdfl = fcntl(fd, F_GETFD);

	if (fl < 0 || fdfl < 0 || !(fl & O_NONBLOCK) || !(fdfl & FD_CLOEXEC) || fstat(fd, &st) ||
	    !S_ISFIFO(st.st_mode))
		return false;
	*ino = st.st_ino;
	return true;
}

static void find_pipe_made(const unsigned char *before)
{
	static unsigned char after[FD_SEEN_MAX];
	int ends[3], n = 0;
	ino_t ino[2];

	fds_open(after);
	for (int fd = 0; fd < FD_SEEN_MAX && n < 3; fd++)
		if (after[fd] && !before[fd])
			ends[n++] = fd;
	if (n != 2 || !is_validation_end(ends[0], &ino[0]) ||
	    !is_validation_end(ends[1], &ino[1]) || ino[0] != ino[1])
		return; /* none, or not told apart from the program's: left alone */
	pipe_made.fd[0] = ends[0];
	pipe_made.fd[1] = ends[1];
	pipe_made.ino = ino[0];
}

static void close_pipe_made(void)
{
	for (int i = 0; i < 2; i++) {
		struct stat st;
		int fd = pipe_made.fd[i];

		if (fd >= 0 && !fstat(fd, &st) && S_ISFIFO(st.st_mode) &&
		    st.st_ino == pipe_made.ino)
			close(fd);
		pipe_made.fd[i] = -1;
	}
}

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
	handle = h;
	if (LOAD(init_local, unw_init_local) && LOAD(init_local2, unw_init_local2) &&
	    LOAD(step, unw_step) && LOAD(get_reg, unw_get_reg) &&
	    LOAD(is_signal_frame, unw_is_signal_frame) &&
	    LOAD(set_caching_policy, unw_set_caching_policy) &&
	    LOAD(getcontext, unw_tdep_getcontext) && LOAD(local_addr_space, unw_local_addr_space))
		return true;
	dlclose(h);
	handle = NULL;
	return false;
}

static bool init_libunwind(void)
{
	static unsigned char before[FD_SEEN_MAX];
	unw_context_t ctx;
	unw_cursor_t cur;
	const char *why;
	int lib;

	if (!load_libunwind()) {
		why = dlerror();
		rt_note(SC_NOTE_WARN,
			"libunwind.so.8 could not be loaded (%s): call stacks are walked with "
			"frame pointers, so frames of code built without them are missing",
			why ? why : "a function is missing from it");
		return false; /* the next backend: frame pointers */
	}
	/* Per-thread caches keep unw_step lock-free in signal handlers; one local unwind here
	 * runs libunwind's one-time initialization outside any handler. */
	fds_open(before);
	lib = rt_fd_enter_library(); /* its address-validation pipe is made here */
	unw.set_caching_policy(*unw.local_addr_space, UNW_CACHE_PER_THREAD);
	unw.getcontext(&ctx);
	unw.init_local(&cur, &ctx);
	unw.step(&cur);
	rt_fd_leave_library(lib);
	find_pipe_made(before);
	return true;
}

/* Unloaded, and its pipe closed, unless the program has libunwind loaded too (then it stays,
 * initialized, and keeps using that pipe). */
static void release_libunwind(void)
{
	void *still;

	if (!handle)
		return;
	dlclose(handle);
	handle = NULL;
	memset(&unw, 0, sizeof(unw));
	still = dlopen("libunwind.so.8", RTLD_NOW | RTLD_NOLOAD);
	if (still) {
		dlclose(still);
		pipe_made.fd[0] = pipe_made.fd[1] = -1;
		return;
	}
	close_pipe_made();
}

#ifdef SYSCOPE_HAVE_PATCHING /* x86-64 only, as its registers below */
/*
 * Restart the walk at `pc` with stack pointer `sp` and the callee-saved registers libunwind
 * recovered so far (the stubs and trampolines keep them); `flag` UNW_INIT_SIGNAL_FRAME when
 * `pc` is the next instruction to run rather than a return address. Returns 0, or -1.
 */
static int restart_with(unw_cursor_t *cur, ucontext_t *ctx, unw_word_t sp, uint64_t pc, int flag)
{
	static const struct {
		int unw, greg;
	} regs[] = {
		{ UNW_X86_64_RBX, REG_RBX }, { UNW_X86_64_RBP, REG_RBP },
		{ UNW_X86_64_R12, REG_R12 }, { UNW_X86_64_R13, REG_R13 },
		{ UNW_X86_64_R14, REG_R14 }, { UNW_X86_64_R15, REG_R15 },
	};
	unw_word_t v;

	memset(ctx, 0, sizeof(*ctx));
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		if (unw.get_reg(cur, regs[i].unw, &v) >= 0)
			ctx->uc_mcontext.gregs[regs[i].greg] = (greg_t)v;
	ctx->uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
	ctx->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
	return unw.init_local2(cur, (unw_context_t *)ctx, flag) < 0 ? -1 : 0;
}

static int restart_at(unw_cursor_t *cur, ucontext_t *ctx, unw_word_t sp, uint64_t pc)
{
	return restart_with(cur, ctx, sp, pc, 0);
}

/*
 * The cursor's pc is one of a trampoline's own instructions (tramp_map.c): restart the walk
 * at the original instruction whose state it runs in, with the stack pointer that state had,
 * under the function's own unwind information. Returns 0 (`ip` is that instruction), or -1.
 */
static int restart_in_function(unw_cursor_t *cur, ucontext_t *ctx, unw_word_t *ip)
{
	uint64_t orig;
	unsigned adjust;
	unw_word_t sp;

	if (rt_patch_tramp_origin(*ip, &orig, &adjust) == RT_TRAMP_NONE ||
	    unw.get_reg(cur, UNW_REG_SP, &sp) < 0 ||
	    restart_with(cur, ctx, sp + adjust, orig, UNW_INIT_SIGNAL_FRAME))
		return -1;
	*ip = orig;
	return 0;
}

/*
 * The cursor stands at the exit stub of runtime patching: the frame below it had its return
 * address swapped. Restart the walk at the address the shadow stack keeps for that slot
 * (just below the cursor's stack pointer). Returns 0, or -1 when the slot is unknown (the
 * walk stops there, as it would have).
 */
static int restart_past_exit_stub(unw_cursor_t *cur, ucontext_t *ctx, unw_word_t *ip)
{
	unw_word_t sp;
	uint64_t real;

	if (unw.get_reg(cur, UNW_REG_SP, &sp) < 0 || !(real = rt_patch_real_return(sp - 8)) ||
	    restart_at(cur, ctx, sp, real))
		return -1;
	*ip = real;
	return 0;
}

/*
 * The cursor stands where the entry stub returns into a function's trampoline, which has no
 * unwind information: the function has not begun (the trampoline runs its first
 * instructions), so its frame is its entry, and its caller's return address lies above the
 * id the trampoline pushed (the cursor's stack pointer points at the id). Restart the walk
 * at the caller. Returns the function's address, or 0 (the walk goes on as it would have).
 */
static uint64_t restart_past_trampoline(unw_cursor_t *cur, ucontext_t *ctx, unw_word_t *ip,
					uint32_t id)
{
	unw_word_t sp;
	uint64_t func, ret;

	if (!(func = rt_patch_func_of(id)) || unw.get_reg(cur, UNW_REG_SP, &sp) < 0)
		return 0;
	ret = *(const uint64_t *)(uintptr_t)(sp + 8);
	if (restart_at(cur, ctx, sp + 16, ret))
		return 0;
	*ip = ret;
	return func;
}
#else /* no patching: no stub or trampoline is ever seen (rt_patch_is_exit_stub) */
static inline int restart_past_exit_stub(unw_cursor_t *cur, ucontext_t *ctx, unw_word_t *ip)
{
	(void)cur, (void)ctx, (void)ip;
	return -1;
}
static inline uint64_t restart_past_trampoline(unw_cursor_t *cur, ucontext_t *ctx, unw_word_t *ip,
					       uint32_t id)
{
	(void)cur, (void)ctx, (void)ip, (void)id;
	return 0;
}
static inline int restart_in_function(unw_cursor_t *cur, ucontext_t *ctx, unw_word_t *ip)
{
	(void)cur, (void)ctx, (void)ip;
	return -1;
}
#endif

static int walk(const ucontext_t *uc, uint64_t *frames, int max, uint16_t *flags)
{
	unw_cursor_t cur;
	int n = 0;
	bool exact = false, from_entry_stub = false;
	ucontext_t resume;

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
		if (from_entry_stub && n > 0) {
			uint32_t id;
			uint64_t func;

			if (rt_patch_trampoline_id(ip, &id) &&
			    (func = restart_past_trampoline(&cur, &resume, &ip, id))) {
				frames[n++] =
					func + 1; /* read as a return address: in the function */
				exact = false;
				if (n == max) {
					*flags |= SC_SAMPLE_TRUNCATED;
					break;
				}
			}
		}
		if (rt_patch_is_exit_stub(ip) && restart_past_exit_stub(&cur, &resume, &ip) < 0)
			break;
		/* A pc (not a return address: none points into a trampoline) in a trampoline. */
		if (n == 0 || exact)
			restart_in_function(&cur, &resume, &ip);
		from_entry_stub = rt_patch_in_entry_stub(ip);
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
}

static int unwind_libunwind(void *ucontext, struct rt_thread *t, uint64_t *frames, int max,
			    uint16_t *flags)
{
	int lib, n;

	(void)t;
	/* libunwind may close and recreate its pipe while it validates addresses. */
	lib = rt_fd_enter_library();
	n = walk(ucontext, frames, max, flags);
	rt_fd_leave_library(lib);
	return n;
}

const struct rt_unwinder rt_unwinder_libunwind = {
	.name = "libunwind",
	.init = init_libunwind,
	.unwind = unwind_libunwind,
	.release = release_libunwind,
};
