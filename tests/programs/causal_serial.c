/* SPDX-License-Identifier: MIT */
/*
 * Causal profiling fixture with a known answer: a serial loop whose HOT line does twice the
 * work of its COLD line, so the hot line is 2/3 of the time: speeding it up by s speeds the
 * program up by 2s/3, speeding the cold line up by s by s/3. One progress point per
 * iteration.
 *
 *   causal_serial SECONDS [hot|cold PERCENT]
 * The optional pair makes that line really PERCENT faster. Prints iterations and time.
 */
#include <stdio.h>

#include "causal_fixture.h"

#define UNIT 1000000L

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 1, 10), start = fixture_now(), took;
	long hot = 2 * UNIT, cold = UNIT, iterations = 0;
	unsigned long x = 1, y = 2;

	causal_real_speedup(argc, argv, "hot", &hot);
	causal_real_speedup(argc, argv, "cold", &cold);
	do {
		SPIN(x, hot, 1)	 /* HOT */
		SPIN(y, cold, 3) /* COLD */
		PROGRESS("iteration");
		iterations++;
	} while ((took = fixture_now() - start) < seconds);
	fixture_sink = (double)(x ^ y);
	printf("iterations=%ld seconds=%.3f\n", iterations, took);
	return 0;
}
