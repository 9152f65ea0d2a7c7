/* SPDX-License-Identifier: MIT */
/*
 * Programs that end or treat descriptors in ways syscope must survive without touching the
 * program's data or losing its own (tests/integration/test_guarantees_data.py):
 *
 *   guard_data close raw|libc|closefrom wronly|rdwr LINES   close every descriptor above 2,
 *       then write LINES lines into a.txt and b.txt (descriptors 3 and 4) between deep stacks
 *   guard_data daemon N        N calls of counted(), daemon(), N more in the daemon
 *   guard_data forkexit N      N calls, fork; the parent returns from main at once, the child
 *                              makes N more calls and leaves with _exit
 *   guard_data pipe COUNTFILE  writes lines to stdout until SIGPIPE kills it; before each write
 *                              the number of counted() calls so far goes into COUNTFILE
 *   guard_data term N          N calls, then SIGTERM to itself
 *   guard_data kill N          N calls 1 ms apart, then SIGKILL to itself (no handler can
 *                              run: only what syscope flushed before, every 20 ms, is kept)
 *   guard_data quick N         N calls, then quick_exit(3), whose handler makes one more
 *   guard_data dlloop LIB N    dlopen and dlclose LIB N times
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fixture.h"

static volatile unsigned long calls;

NOINLINE void counted(void)
{
	calls++;
	for (int i = 0; i < 20000; i++)
		fixture_sink += i * 0.5;
}

/* A deep stack, so that unwinding samples walks many frames. */
NOINLINE static double deep(int depth)
{
	double x = depth;

	if (depth > 0)
		x += deep(depth - 1) * 0.5;
	else
		for (int i = 0; i < 2000000; i++)
			x = x * 1.0000001 + 0.25;
	__asm__ volatile("" : "+x"(x));
	return x;
}

static int close_everything(const char *how)
{
	if (!strcmp(how, "raw"))
		return (int)syscall(SYS_close_range, 3u, ~0u, 0);
	if (!strcmp(how, "libc"))
		return close_range(3, ~0u, 0);
	closefrom(3);
	return 0;
}

static int run_close(const char *how, const char *mode, int lines)
{
	int flags = O_CREAT | O_TRUNC | (!strcmp(mode, "rdwr") ? O_RDWR : O_WRONLY);
	int a, b;

	if (close_everything(how))
		return 2;
	a = open("a.txt", flags, 0644);
	b = open("b.txt", flags, 0644);
	printf("fds %d %d\n", a, b);
	for (int i = 0; i < lines; i++) {
		char line[64];
		int n = snprintf(line, sizeof(line), "line %d of the program's own file\n", i);

		if (write(a, line, (size_t)n) != n || write(b, line, (size_t)n) != n)
			return 3;
		fixture_sink += deep(40 + i % 30);
	}
	return close(a) || close(b) ? 4 : 0;
}

static int run_daemon(int n)
{
	for (int i = 0; i < n; i++)
		counted();
	if (daemon(1, 1))
		return 1;
	for (int i = 0; i < n; i++)
		counted();
	return 0;
}

static int run_forkexit(int n)
{
	for (int i = 0; i < n; i++)
		counted();
	if (fork() != 0)
		return 0; /* the parent ends at once, the child goes on */
	for (int i = 0; i < n; i++)
		counted();
	_exit(0);
}

static int run_pipe(const char *countfile)
{
	int fd = open(countfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	for (;;) {
		char num[32];
		int n;

		counted();
		n = snprintf(num, sizeof(num), "%-20lu\n", calls);
		if (pwrite(fd, num, (size_t)n, 0) != n)
			return 1;
		if (printf("line %lu\n", calls) < 0 || fflush(stdout))
			return 1;
	}
}

static int run_signal(int n, int sig)
{
	for (int i = 0; i < n; i++) {
		counted();
		if (sig == SIGKILL)
			usleep(1000);
	}
	kill(getpid(), sig);
	pause();
	return 1;
}

static void last_call(void)
{
	counted();
}

static int run_quick(int n)
{
	at_quick_exit(last_call);
	for (int i = 0; i < n; i++)
		counted();
	quick_exit(3);
}

static int run_dlloop(const char *lib, int n)
{
	for (int i = 0; i < n; i++) {
		void *h = dlopen(lib, RTLD_NOW);

		if (!h)
			return 1;
		counted();
		dlclose(h);
	}
	printf("dlloop: %d rounds\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	if (!strcmp(what, "close") && argc == 5)
		return run_close(argv[2], argv[3], atoi(argv[4]));
	if (!strcmp(what, "daemon") && argc == 3)
		return run_daemon(atoi(argv[2]));
	if (!strcmp(what, "forkexit") && argc == 3)
		return run_forkexit(atoi(argv[2]));
	if (!strcmp(what, "pipe") && argc == 3)
		return run_pipe(argv[2]);
	if (!strcmp(what, "term") && argc == 3)
		return run_signal(atoi(argv[2]), SIGTERM);
	if (!strcmp(what, "kill") && argc == 3)
		return run_signal(atoi(argv[2]), SIGKILL);
	if (!strcmp(what, "quick") && argc == 3)
		return run_quick(atoi(argv[2]));
	if (!strcmp(what, "dlloop") && argc == 4)
		return run_dlloop(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: see the comment at the top of guard_data.c\n");
	return 64;
}
