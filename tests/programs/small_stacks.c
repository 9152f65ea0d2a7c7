/* SPDX-License-Identifier: MIT */
/*
 * Does what Go's runtime does with stacks and signals: its work runs on a small stack of
 * its own (a goroutine's: a few KiB, here 4 KiB with an inaccessible page below), every
 * thread has an alternate signal stack, and it installs a handler with SA_ONSTACK on every
 * signal, syscope's samplers' included, which insists on running there (Go's throws
 * "signal arrived on a non-Go stack" otherwise). It burns CPU time on the small stack, sends
 * itself SIGSTKFLT (the CPU sampler's signal by default) from there 10 times, and prints how
 * many its handler saw, how many were off the signal stack, and how much of that stack was
 * used (the deepest handler's, ours or the program's). Exits 0 only if all 10 arrived there.
 *
 * usage: small_stacks SECONDS
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "fixture.h"

#define SMALL_STACK 4096
#define ALT_STACK (64 * 1024)

static unsigned char *alt;
static volatile sig_atomic_t received, off_stack;
static double seconds;
static ucontext_t main_ctx, work_ctx;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	unsigned char here;

	(void)si, (void)uc;
	received += sig == SIGSTKFLT;
	if (&here < alt || &here >= alt + ALT_STACK)
		off_stack++;
}

NOINLINE static double small_stack_work(double secs)
{
	double end = fixture_cpu_now() + secs, x = 1;

	while (fixture_cpu_left(end))
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 1e-9;
	return x;
}

static void on_small_stack(void)
{
	fixture_sink = small_stack_work(seconds);
	for (int i = 0; i < 10; i++)
		raise(SIGSTKFLT);
}

static int report(void)
{
	size_t untouched = 0;

	while (untouched < ALT_STACK && alt[untouched] == 0xa5)
		untouched++;
	printf("small_stacks: received %d off the signal stack %d, signal stack used %zu bytes\n",
	       (int)received, (int)off_stack, ALT_STACK - untouched);
	return received == 10 && !off_stack ? 0 : 1;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	struct sigaction sa;
	stack_t ss;
	unsigned char *small;

	seconds = fixture_seconds(argc, argv, 1, 0.5);
	alt = mmap(NULL, ALT_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	small = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		     -1, 0);
	if (alt == MAP_FAILED || small == MAP_FAILED || mprotect(small, (size_t)page, PROT_NONE))
		return 2;
	memset(alt, 0xa5, ALT_STACK);
	ss.ss_sp = alt;
	ss.ss_size = ALT_STACK;
	ss.ss_flags = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaltstack(&ss, NULL))
		return 2;
	for (int sig = 1; sig < NSIG; sig++) /* as Go's runtime: every one it may install on */
		if (sig != SIGSEGV && sig != SIGBUS && sig != SIGCHLD)
			sigaction(sig, &sa, NULL);
	if (raise(SIGSTKFLT))
		return 2;
	received = 0;
	/* The work's stack: 4 KiB right above the guard page, as a goroutine's first stack. The
	 * calls made there are bound first: the dynamic linker's resolver needs more. */
	fixture_sink = fixture_cpu_now();
	getcontext(&work_ctx);
	work_ctx.uc_stack.ss_sp = small + page;
	work_ctx.uc_stack.ss_size = SMALL_STACK;
	work_ctx.uc_link = &main_ctx;
	makecontext(&work_ctx, on_small_stack, 0);
	if (swapcontext(&main_ctx, &work_ctx))
		return 2;
	return report();
}
