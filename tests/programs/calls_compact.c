/* SPDX-License-Identifier: MIT */
/*
 * Many instrumented calls with known counts (tests/integration/test_calls_compact.py, and
 * bench/calls-bench): `calls_compact N` calls tick() N times and slow() 3 times from
 * main through run(); `calls_compact N crash` then dies of SIGSEGV inside outer() ->
 * inner(), so those calls (and main, run) are still open at the crash.
 * Built twice: for `syscope instrument` and with -finstrument-functions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

static volatile long sink;
static int *volatile nowhere;

NOINLINE void tick(long i)
{
	sink += i;
	__asm__ volatile("" ::: "memory");
}

NOINLINE void slow(void)
{
	for (long i = 0; i < 200000; i++)
		sink += i;
}

NOINLINE void inner(void)
{
	sink += *nowhere; /* SIGSEGV */
}

NOINLINE void outer(void)
{
	sink++;
	inner();
	sink++;
}

NOINLINE void run(long n, int crash)
{
	for (long i = 0; i < n; i++)
		tick(i);
	for (int i = 0; i < 3; i++)
		slow();
	printf("calls_compact ok %ld\n", n);
	fflush(stdout);
	if (crash)
		outer();
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;

	run(n, argc > 2 && !strcmp(argv[2], "crash"));
	return 0;
}
