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
#define LATENCY_BEGIN(name) COZ_BEGIN(name)
#define LATENCY_END(name) COZ_END(name)
#else
/* A latency point as coz.h makes one: the counter of (kind, name) from _coz_get_counter
 * (2: COZ_BEGIN, 3: COZ_END), its first word the count. Weak: runs without syscope too. */
void *_coz_get_counter(int kind, const char *name) __attribute__((weak));
#define LATENCY_COUNT(kind, name)                                                 \
	do {                                                                      \
		static unsigned long *counter_;                                   \
		if (!counter_ && _coz_get_counter)                                \
			counter_ = (unsigned long *)_coz_get_counter(kind, name); \
		if (counter_)                                                     \
			__atomic_fetch_add(counter_, 1, __ATOMIC_RELAXED);        \
	} while (0)
#define LATENCY_BEGIN(name) LATENCY_COUNT(2, name)
#define LATENCY_END(name) LATENCY_COUNT(3, name)
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
