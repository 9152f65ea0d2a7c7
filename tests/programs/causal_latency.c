/* SPDX-License-Identifier: MIT */
/*
 * Causal profiling fixture with a known answer for a latency point: a serial loop of
 * requests, each one parse (two units of work) and respond (one unit) between COZ_BEGIN and
 * COZ_END of "request", then think (one unit) before the next, outside the request.
 * Speeding parse up by s shortens the latency by 2s/3 (33% at s = 50%), respond by s/3,
 * think not at all (though it speeds the throughput: 12.5% at 50%).
 *
 *   causal_latency SECONDS [parse|respond|think PERCENT]
 * Prints the requests, the time and their mean latency (for bench/causal-bench).
 */
#include <stdio.h>

#include "causal_fixture.h"

#define UNIT 1500000L

static long parse_units = 2 * UNIT, respond_units = UNIT, think_units = UNIT;

static NOINLINE void parse(void)
{
	unsigned long x = 1;

	SPIN(x, parse_units, 1) /* PARSE */
	fixture_sink = (double)x;
}

static NOINLINE void respond(void)
{
	unsigned long x = 2;

	SPIN(x, respond_units, 3) /* RESPOND */
	fixture_sink = (double)x;
}

static NOINLINE void think(void)
{
	unsigned long x = 3;

	SPIN(x, think_units, 5) /* THINK */
	fixture_sink = (double)x;
}

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 1, 10), start = fixture_now();
	double in_requests = 0;
	long requests = 0;

	causal_real_speedup(argc, argv, "parse", &parse_units);
	causal_real_speedup(argc, argv, "respond", &respond_units);
	causal_real_speedup(argc, argv, "think", &think_units);
	while (fixture_now() - start < seconds) {
		double began = fixture_now();

		LATENCY_BEGIN("request");
		parse();
		respond();
		LATENCY_END("request");
		in_requests += fixture_now() - began;
		requests++;
		PROGRESS("requests");
		think();
	}
	printf("iterations=%ld seconds=%.3f latency_ns=%.0f\n", requests, fixture_now() - start,
	       requests ? in_requests / (double)requests * 1e9 : 0);
	return 0;
}
