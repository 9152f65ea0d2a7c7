/* SPDX-License-Identifier: MIT */
/*
 * Target of `syscope instrument` (runtime patching), built at -O2, -O0 and with endbr64
 * (-fcf-protection): a call tree with known counts in every situation patching must survive.
 * Every function is big enough to be patched (a 5-byte jump), so the recorded tree must be
 * the real one, function by function:
 *   main -> run_all -> sum_loop -> add x 1000
 *                   -> rdepth: 10 001 calls, 10 001 deep (recursion, not a loop)
 *                   -> jumper -> deep1 -> deep2, which longjmps back to jumper
 *                   -> pick x 8 (a switch: a jump table at -O2)
 *                   -> tail_a -> tail_b (a tail call at -O2)
 *                   -> call_through -> work (through a function pointer)
 *                   -> tiny x 3 (4 bytes at -O2: too short to patch, unless the build
 *                      leaves NOPs at each entry: -fpatchable-function-entry=5)
 *                   -> signaller -> [SIGUSR1] on_usr1 -> work
 *        a thread: thread_main -> work x 5
 *        a fork child: child_work x 3, then _exit
 *   -> finish, which calls exit() and never returns
 * "exec" as argument: main -> exec_self, which execs this program with "after-exec":
 *   main -> after_exec -> add x 3 -> finish.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

static volatile long sink;
static jmp_buf back;

/* Each function does a little work through `sink` so that it is longer than a jump. */
NOINLINE long add(long a, long b)
{
	sink += a;
	return a + b + sink * 0;
}

NOINLINE long sum_loop(void)
{
	long s = 0;

	for (int i = 0; i < 1000; i++)
		s = add(s, i);
	return s;
}

NOINLINE long rdepth(int n)
{
	long r;

	sink++;
	if (n == 0)
		return 0;
	r = rdepth(n - 1);
	__asm__ __volatile__("" ::: "memory"); /* not a tail call, not a loop */
	return r + 1;
}

NOINLINE void deep2(void)
{
	sink++;
	longjmp(back, 1);
}

NOINLINE void deep1(void)
{
	sink++;
	deep2();
	sink++;
}

NOINLINE void jumper(void)
{
	sink++;
	if (!setjmp(back))
		deep1();
}

NOINLINE long pick(int k)
{
	sink++;
	switch (k) {
	case 0:
		return sink * 3;
	case 1:
		return sink + 7;
	case 2:
		return sink ^ 5;
	case 3:
		return sink - 11;
	case 4:
		return sink * 13;
	case 5:
		return sink | 17;
	case 6:
		return sink & 19;
	default:
		return sink;
	}
}

NOINLINE long tail_b(long x)
{
	sink += x;
	return sink * 2;
}

NOINLINE long tail_a(long x)
{
	sink++;
	return tail_b(x + 1);
}

NOINLINE void work(int i)
{
	sink += i;
	sink *= 1;
}

NOINLINE int tiny(int x)
{
	return x + 1;
}

NOINLINE void call_through(void (*fn)(int))
{
	sink++;
	fn(1);
}

NOINLINE void on_usr1(int sig)
{
	sink += sig;
	work(2);
}

NOINLINE void signaller(void)
{
	sink++;
	signal(SIGUSR1, on_usr1);
	raise(SIGUSR1);
	sink++;
}

NOINLINE void *thread_main(void *arg)
{
	sink++;
	for (int i = 0; i < 5; i++)
		work(i);
	return arg;
}

NOINLINE void child_work(void)
{
	sink++;
	sink *= 1;
}

NOINLINE void run_all(void)
{
	pthread_t t;
	pid_t pid;
	int status = 0;

	sink += sum_loop();
	sink += rdepth(10000);
	jumper();
	for (int k = 0; k < 8; k++)
		sink += pick(k);
	sink += tail_a(1);
	call_through(work);
	for (int i = 0; i < 3; i++)
		sink += tiny(i);
	signaller();
	pthread_create(&t, NULL, thread_main, NULL);
	pthread_join(t, NULL);
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 3; i++)
			child_work();
		_exit(0);
	}
	waitpid(pid, &status, 0);
	sink += WEXITSTATUS(status);
}

NOINLINE void finish(void)
{
	printf("patch_calls ok %ld\n", (long)sink);
	fflush(stdout);
	exit(0);
}

NOINLINE void after_exec(void)
{
	sink++;
	for (int i = 0; i < 3; i++)
		add(i, i);
}

NOINLINE void exec_self(char **argv)
{
	char *args[] = { argv[0], (char *)"after-exec", NULL };

	sink++;
	execv("/proc/self/exe", args);
	perror("execv");
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "exec"))
		exec_self(argv);
	else if (argc > 1 && !strcmp(argv[1], "after-exec"))
		after_exec();
	else
		run_all();
	finish();
	return 1;
}
