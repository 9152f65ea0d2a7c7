/* SPDX-License-Identifier: MIT */
/*
 * What the causal-profiling fixtures share: a loop of work that sits on one source line
 * (so that line mode, syscope's and Coz's, sees the line it is written on), and a progress
 * point, Coz's COZ_PROGRESS_NAMED when built with -DUSE_COZ (Debian's coz.h), else
 * syscope_progress (weak: the fixture also runs without syscope).
 */
#ifndef SYSCOPE_CAUSAL_FIXTURE_H
#define SYSCOPE_CAUSAL_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#ifdef USE_COZ
#include <coz.h>
#define PROGRESS(name) COZ_PROGRESS_NAMED(name)
#else
#define SYSCOPE_WEAK
#include "syscope/syscope.h"
#define PROGRESS(name)                          \
	do {                                    \
		if (syscope_progress)           \
			syscope_progress(name); \
	} while (0)
#endif

#include "fixture.h"

/* n steps of a generator the compiler cannot fold, on the line where it is used. */
#define SPIN(x, n, k)                                  \
	for (long i_ = 0; i_ < (n); i_++) {            \
		(x) = (x)*6364136223846793005ul + (k); \
		__asm__ volatile("" : "+r"(x));        \
	}

/* argv[2] names the code that argv[3] percent less work makes really faster. */
static inline void causal_real_speedup(int argc, char **argv, const char *name, long *units)
{
	if (argc > 3 && !strcmp(argv[2], name))
		*units = (long)((double)*units * (1 - atof(argv[3]) / 100));
}

#endif /* SYSCOPE_CAUSAL_FIXTURE_H */
