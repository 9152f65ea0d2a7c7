/* SPDX-License-Identifier: MIT */
/*
 * Causal profiling fixture with a known answer: a serial loop whose HOT line does twice the
 * work of its COLD line, so the hot line is 2/3 of the time: speeding it up by s speeds the
 * program up by 2s/3, speeding the cold line up by s by s/3. Progress: COZ_PROGRESS-style
 * counter through _coz_get_counter when built with -DUSE_COZ (Debian's coz.h), else
 * syscope_progress.
 *
 *   causal_serial SECONDS [hot|cold PERCENT]
 * The optional pair makes that line really PERCENT faster. Prints iterations and time.
 */
#include <stdio.h>
#include <string.h>

#ifdef USE_COZ
#include <coz.h>
#define PROGRESS COZ_PROGRESS_NAMED("iteration")
#else
#define SYSCOPE_WEAK
#include "syscope/syscope.h"
#define PROGRESS                                       \
	do {                                           \
		if (syscope_progress)                  \
			syscope_progress("iteration"); \
	} while (0)
#endif

#include "fixture.h"

#define UNIT 1000000L

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 1, 10), start = fixture_now(), took;
	long hot = 2 * UNIT, cold = UNIT, iterations = 0;
	unsigned long x = 1, y = 2;

	if (argc > 3) {
		long *units = !strcmp(argv[2], "hot") ? &hot : &cold;

		*units = (long)((double)*units * (1 - atof(argv[3]) / 100));
	}
	do {
		/* Each loop on one line, so that line mode sees two lines. */
		/* clang-format off */
		for (long i = 0; i < hot; i++) { x = x * 6364136223846793005ul + 1; __asm__ volatile("" : "+r"(x)); } /* HOT */
		for (long i = 0; i < cold; i++) { y = y * 6364136223846793005ul + 3; __asm__ volatile("" : "+r"(y)); } /* COLD */
		/* clang-format on */
		PROGRESS;
		iterations++;
	} while ((took = fixture_now() - start) < seconds);
	fixture_sink = (double)(x ^ y);
	printf("iterations=%ld seconds=%.3f\n", iterations, took);
	return 0;
}
