/* SPDX-License-Identifier: MIT */
/*
 * A program that needs no shared library and calls the kernel itself, as a Go program
 * built without cgo as a PIE does: the loader runs it (and would preload syscope), but no
 * call of its goes through the C library. Like Go's runtime, it installs its own handler on
 * SIGSTKFLT (the CPU sampler's signal) with rt_sigaction, and that handler ends it with
 * status 3 (Go throws "SIGSTKFLT: stack fault"). It burns CPU time, prints a line and
 * exits 0 with exit_group. Built with -nostdlib -pie.
 */
#include <signal.h>
#include <stddef.h>
#include <sys/syscall.h>

#define SA_RESTORER_FLAG 0x04000000

struct kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long mask;
};

static long raw(long n, long a, long b, long c, long d)
{
	long ret;
	register long r10 __asm__("r10") = d;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

static void say(const char *text)
{
	size_t n = 0;

	while (text[n])
		n++;
	raw(SYS_write, 1, (long)text, (long)n, 0);
}

void raw_restorer(void);
__asm__(".text\nraw_restorer:\n\tmov $15, %eax\n\tsyscall\n");

static void on_stkflt(int sig)
{
	(void)sig;
	say("raw_syscalls: SIGSTKFLT: stack fault\n");
	raw(SYS_exit_group, 3, 0, 0, 0);
}

static __attribute__((noinline)) double raw_work(long n)
{
	volatile double x = 1;

	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 1e-9;
	return x;
}

__attribute__((force_align_arg_pointer, noreturn)) void _start(void)
{
	struct kernel_sigaction sa = { on_stkflt, SA_RESTORER_FLAG, raw_restorer, 0 };

	raw(SYS_rt_sigaction, SIGSTKFLT, (long)&sa, 0, 8);
	raw_work(50000000);
	say("raw_syscalls: done\n");
	raw(SYS_exit_group, 0, 0, 0, 0);
	__builtin_unreachable();
}
