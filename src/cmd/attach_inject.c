/* SPDX-License-Identifier: MIT */
/*
 * syscope attach: a function call inside another process, through ptrace, on one of its
 * threads only (the others never stop).
 *
 * PTRACE_SEIZE + PTRACE_INTERRUPT stop the thread; its registers are saved. Each call is
 * made on the thread's own stack, below its red zone, with a return address of 0: the
 * function's return faults there (a SIGSEGV stop, the signal then discarded) and the result
 * is in rax. dlopen's path is written below that. At the end the saved registers go back
 * and the thread is let go.
 *
 * A thread stopped inside a system call: the kernel has either prepared a restart (rax
 * -ERESTART*, orig_rax the call) that it performs when the restored registers resume, or
 * the call already returned -EINTR because the stop interrupted it (epoll_wait and others
 * that never restart). Then the thread goes back onto the `syscall` instruction with the
 * call's number, so the program never sees EINTR. During the calls orig_rax is -1, so the
 * kernel restarts nothing under them.
 *
 * x86-64 only (the register names); other architectures say so.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"

#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516
#define RED_ZONE 128
/* Stops in the loader's code are never kept; stops in the C library are kept after a few
 * (its string functions hold no lock, and malloc's internals cannot be told by address). */
#define STOP_TRIES 100
#define LIBC_TRIES 5

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The thread's time on a CPU and waiting for one, in ms (/proc/PID/task/TID/schedstat). */
static bool sched_times(pid_t pid, pid_t tid, double *run_ms, double *wait_ms)
{
	char path[64];
	unsigned long long run, wait;
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	f = fopen(path, "re");
	ok = f && fscanf(f, "%llu %llu", &run, &wait) == 2;
	if (f)
		fclose(f);
	if (ok) {
		*run_ms = (double)run / 1e6;
		*wait_ms = (double)wait / 1e6;
	}
	return ok;
}

#if defined(__x86_64__)

static int write_mem(pid_t tid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = { (void *)buf, len }, remote = { (void *)addr, len };

	return process_vm_writev(tid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static int read_mem(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };

	return process_vm_readv(tid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* Wait for the thread's next stop; signals of the program's own that stop it meanwhile are
 * delivered (they were meant for it). Returns the stopping signal, or -1. */
static int wait_stop(pid_t tid, char err[SC_ATTACH_ERR])
{
	for (;;) {
		int status, sig;

		if (waitpid(tid, &status, __WALL) != tid) {
			if (errno == EINTR)
				continue;
			snprintf(err, SC_ATTACH_ERR, "waiting for thread %d: %s", (int)tid,
				 strerror(errno));
			return -1;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			snprintf(err, SC_ATTACH_ERR,
				 "the process ended while syscope was attaching");
			return -1;
		}
		sig = WSTOPSIG(status);
		if (status >> 16 == PTRACE_EVENT_STOP || sig == SIGSEGV || sig == SIGTRAP)
			return status >> 16 == PTRACE_EVENT_STOP ? 0 : sig;
		ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig); /* the program's signal */
	}
}

/* Call fn(a0, a1) in the stopped thread, from `base` registers; result in *ret. */
static int remote_call(pid_t tid, const struct user_regs_struct *base, uint64_t fn, uint64_t a0,
		       uint64_t a1, uint64_t sp, long *ret, char err[SC_ATTACH_ERR])
{
	struct user_regs_struct r = *base;
	uint64_t zero = 0;
	int sig;

	sp = (sp & ~(uint64_t)15) - 8; /* at the entry, rsp + 8 is 16-byte aligned */
	if (write_mem(tid, sp, &zero, sizeof(zero))) {
		snprintf(err, SC_ATTACH_ERR, "cannot write the thread's stack: %s",
			 strerror(errno));
		return -1;
	}
	r.rsp = sp;
	r.rip = fn;
	r.rdi = a0;
	r.rsi = a1;
	r.rax = 0;
	r.orig_rax = (uint64_t)-1; /* no system call to restart under the call */
	if (ptrace(PTRACE_SETREGS, tid, NULL, &r) || ptrace(PTRACE_CONT, tid, NULL, NULL)) {
		snprintf(err, SC_ATTACH_ERR, "ptrace: %s", strerror(errno));
		return -1;
	}
	sig = wait_stop(tid, err);
	if (sig < 0)
		return -1;
	if (ptrace(PTRACE_GETREGS, tid, NULL, &r)) {
		snprintf(err, SC_ATTACH_ERR, "ptrace: %s", strerror(errno));
		return -1;
	}
	if (sig != SIGSEGV || r.rip != 0) {
		snprintf(err, SC_ATTACH_ERR,
			 "the call in the process stopped with signal %d at 0x%llx, not at its "
			 "return",
			 sig, (unsigned long long)r.rip);
		return -1;
	}
	*ret = (long)r.rax;
	return 0;
}

/* dlopen failed: dlerror's message, asked in the process. */
static void say_dlerror(pid_t tid, const struct user_regs_struct *saved, uint64_t dlerror_at,
			uint64_t sp, const char *lib, char err[SC_ATTACH_ERR])
{
	char why[300] = "";
	long msg = 0;

	if (dlerror_at && !remote_call(tid, saved, dlerror_at, 0, 0, sp, &msg, err) && msg) {
		for (size_t i = 0; i < sizeof(why) - 1; i++)
			if (read_mem(tid, (uint64_t)msg + i, &why[i], 1) || !why[i])
				break;
		why[sizeof(why) - 1] = '\0';
	}
	snprintf(err, SC_ATTACH_ERR, "dlopen of %.150s failed in the process: %s", lib,
		 why[0] ? why : "no reason given");
}

/* The registers to resume with: those saved, rewound onto the system call when it returned
 * EINTR because of the stop. */
static struct user_regs_struct resume_regs(pid_t tid, const struct user_regs_struct *saved,
					   struct sc_remote *info)
{
	struct user_regs_struct r = *saved;
	long rc = (long)saved->rax;
	unsigned char insn[2];

	info->in_syscall = (long)saved->orig_rax >= 0;
	info->syscall_nr = (long)saved->orig_rax;
	info->restart_how = info->in_syscall ? rc : 0;
	if (info->in_syscall && rc == -EINTR && !read_mem(tid, saved->rip - 2, insn, 2) &&
	    insn[0] == 0x0f && insn[1] == 0x05) {
		r.rax = saved->orig_rax;
		r.rip = saved->rip - 2;
	}
	return r;
}

/*
 * Stop the thread where dlopen is safe to call: in the program's code or inside a system
 * call, not running loader code (it may hold the loader's lock: dlopen would wait for itself
 * forever) and preferably not C library code (malloc's lock). Elsewhere it is let go and
 * stopped again 2 ms later. *t0 is when the kept stop began; earlier stops count in
 * info->held_ms.
 */
static bool in_ranges(const struct sc_code_range *r, int n, uint64_t addr)
{
	for (int i = 0; i < n; i++)
		if (addr >= r[i].lo && addr < r[i].hi)
			return true;
	return false;
}

static int stop_outside_loader(pid_t pid, pid_t tid, struct user_regs_struct *regs, double *t0,
			       struct sc_remote *info, char err[SC_ATTACH_ERR])
{
	struct sc_code_range ld[8], libc[8]; /* read before the thread stops */
	int nld = sc_attach_code_ranges(pid, "/ld-linux-x86-64.so.2", ld, 8);
	int nlibc = sc_attach_code_ranges(pid, "/libc.so.6", libc, 8);

	for (int tries = 0; tries < STOP_TRIES; tries++) {
		*t0 = now_ms();
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) || wait_stop(tid, err) < 0 ||
		    ptrace(PTRACE_GETREGS, tid, NULL, regs)) {
			if (!err[0])
				snprintf(err, SC_ATTACH_ERR, "cannot stop thread %d: %s", (int)tid,
					 strerror(errno));
			return -1;
		}
		if ((long)regs->orig_rax >= 0 ||
		    (!in_ranges(ld, nld, regs->rip) &&
		     (tries >= LIBC_TRIES || !in_ranges(libc, nlibc, regs->rip))))
			return 0;
		info->retries++;
		info->held_ms += now_ms() - *t0;
		if (ptrace(PTRACE_CONT, tid, NULL, NULL)) {
			snprintf(err, SC_ATTACH_ERR, "ptrace: %s", strerror(errno));
			return -1;
		}
		usleep(2000);
	}
	snprintf(err, SC_ATTACH_ERR,
		 "thread %d was running the loader's code each of the %d times it was stopped "
		 "(it may hold the loader's lock, which dlopen needs); choose another thread "
		 "with --tid",
		 (int)tid, STOP_TRIES);
	return -1;
}

int sc_attach_call(pid_t pid, pid_t tid, const char *lib, const char *entry, const char *arg,
		   long *result, struct sc_remote *info, char err[SC_ATTACH_ERR])
{
	struct user_regs_struct saved, back;
	uint64_t dlopen_at, dlerror_at, entry_off, base, sp, lib_at, arg_at;
	size_t lib_len = strlen(lib) + 1, arg_len = strlen(arg) + 1;
	double t0, run0 = 0, wait0 = 0, run1, wait1;
	bool sched_ok;
	long handle = 0;
	int rc = -1;

	memset(info, 0, sizeof(*info));
	info->tid = tid;
	dlopen_at = sc_attach_symbol(pid, "/libc.so.6", "dlopen", err);
	if (!dlopen_at)
		return -1;
	dlerror_at = sc_attach_symbol(pid, "/libc.so.6", "dlerror", err);
	entry_off = sc_attach_file_symbol(lib, entry, err); /* before the thread stops */
	if (!entry_off)
		return -1;
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL)) {
		snprintf(
			err, SC_ATTACH_ERR,
			errno == EPERM
				? "ptrace refused to attach to process %d (EPERM): with "
				  "kernel.yama.ptrace_scope 1 only a parent may trace (set it to 0, "
				  "run as root, or have the program call prctl(PR_SET_PTRACER)); in a "
				  "container, add CAP_SYS_PTRACE"
				: "ptrace could not attach to process %d: %s",
			(int)pid, strerror(errno));
		return -1;
	}
	sched_ok = sched_times(pid, tid, &run0, &wait0);
	if (stop_outside_loader(pid, tid, &saved, &t0, info, err)) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return -1;
	}
	/* Strings below the red zone, the calls' frames below them. */
	sp = saved.rsp - RED_ZONE;
	lib_at = (sp - lib_len) & ~(uint64_t)15;
	arg_at = (lib_at - arg_len) & ~(uint64_t)15;
	sp = arg_at - 64;
	if (write_mem(tid, lib_at, lib, lib_len) || write_mem(tid, arg_at, arg, arg_len)) {
		snprintf(err, SC_ATTACH_ERR, "cannot write into process %d: %s", (int)pid,
			 strerror(errno));
		goto restore;
	}
	if (remote_call(tid, &saved, dlopen_at, lib_at, 2 /* RTLD_NOW */, sp, &handle, err))
		goto restore;
	if (!handle) {
		say_dlerror(tid, &saved, dlerror_at, sp, lib, err);
		goto restore;
	}
	/* dlopen's handle is the library's link_map, whose first field is its load address. */
	if (read_mem(tid, (uint64_t)handle, &base, sizeof(base))) {
		snprintf(err, SC_ATTACH_ERR, "cannot read the loaded library's address: %s",
			 strerror(errno));
		goto restore;
	}
	if (remote_call(tid, &saved, base + entry_off, arg_at, 0, sp, result, err))
		goto restore;
	rc = 0;
restore:
	back = resume_regs(tid, &saved, info);
	if (ptrace(PTRACE_SETREGS, tid, NULL, &back)) {
		snprintf(err, SC_ATTACH_ERR, "cannot restore thread %d's registers: %s", (int)tid,
			 strerror(errno));
		rc = -1;
	}
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
	info->held_ms += now_ms() - t0;
	if (sched_ok && sched_times(pid, tid, &run1, &wait1)) {
		info->cpu_ms = run1 - run0;
		info->wait_cpu_ms = wait1 - wait0;
	}
	return rc;
}

#else

int sc_attach_call(pid_t pid, pid_t tid, const char *lib, const char *entry, const char *arg,
		   long *result, struct sc_remote *info, char err[SC_ATTACH_ERR])
{
	(void)pid, (void)tid, (void)lib, (void)entry, (void)arg, (void)result, (void)info;
	snprintf(err, SC_ATTACH_ERR, "attach is implemented for x86-64 only in this version");
	return -1;
}

#endif
