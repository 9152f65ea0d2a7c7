/* SPDX-License-Identifier: MIT */
/*
 * Built with -finstrument-functions (at -O2 and -O0): a call tree with known counts, for the
 * compiler-hook tests.
 *   main -> run_all -> sum_loop -> add x 1000
 *                   -> fact (recursive: 10 calls, 10 deep)
 *                   -> jumper -> deep1 -> deep2, which longjmps back to jumper
 *   a thread: thread_main -> work x 5
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>

#include "fixture.h"

static volatile long sink;
static jmp_buf back;

NOINLINE static long add(long a, long b)
{
	return a + b;
}

NOINLINE static long sum_loop(void)
{
	long s = 0;

	for (int i = 0; i < 1000; i++)
		s = add(s, i);
	return s;
}

NOINLINE static long fact(int n)
{
	return n <= 1 ? 1 : n * fact(n - 1);
}

NOINLINE static void deep2(void)
{
	longjmp(back, 1);
}

NOINLINE static void deep1(void)
{
	deep2();
	sink++;
}

NOINLINE static void jumper(void)
{
	if (!setjmp(back))
		deep1();
}

NOINLINE static void work(int i)
{
	sink += i;
}

static void *thread_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++)
		work(i);
	return NULL;
}

NOINLINE static void run_all(void)
{
	pthread_t t;

	sink += sum_loop();
	sink += fact(10);
	jumper();
	pthread_create(&t, NULL, thread_main, NULL);
	pthread_join(t, NULL);
}

int main(void)
{
	run_all();
	printf("instrumented ok %ld\n", (long)sink);
	return 0;
}
