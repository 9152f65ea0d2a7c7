/* SPDX-License-Identifier: MIT */
/*
 * The hot loop of dwz_one.c and dwz_two.c, inlined into both: its abstract instance (name,
 * declaration) is the same DWARF in both programs, which dwz -m moves into the shared
 * alternate file (tests/integration/test_counted_calls.py, the dwz test).
 */
#ifndef SYSCOPE_DWZ_HOT_H
#define SYSCOPE_DWZ_HOT_H

#include "fixture.h"

static inline __attribute__((always_inline)) double dwz_spin(double x, long n)
{
	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 0.5 / (x + 1.0); /* DWZ_LINE */
	return x;
}

/* Spins for `seconds` of CPU time through `work`, which inlines dwz_spin. */
static inline int dwz_main(double (*work)(double), double seconds)
{
	double end = fixture_cpu_now() + seconds, x = 1.0;

	while (fixture_cpu_now() < end)
		x = work(x);
	fixture_sink = x;
	return 0;
}

#endif /* SYSCOPE_DWZ_HOT_H */
