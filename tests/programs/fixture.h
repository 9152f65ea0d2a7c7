/* SPDX-License-Identifier: MIT */
/*
 * Helpers for fixture programs: each fixture has a known answer (which function is hot,
 * how many threads or processes) that tests/integration checks in syscope's outputs.
 * Work runs for a duration given on the command line, so tests stay short on slow machines
 * and sample counts stay meaningful on fast ones. Busy loops count their thread's CPU time
 * (fixture_cpu_now), so a loaded machine gives them the same samples, only later; wall-clock
 * time (fixture_now) where a test needs it.
 */
#ifndef SYSCOPE_FIXTURE_H
#define SYSCOPE_FIXTURE_H

#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static inline double fixture_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* This thread's CPU time: work measured in it takes the same CPU on a busy machine, where a
 * wall-clock duration would give the thread only a share of it (and a CPU-time sampler fewer
 * samples). */
static inline double fixture_cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Whether this thread has used less CPU time than `end` (of fixture_cpu_now), for the loop
 * of busy work. The kernel is asked at most every 20 ms of wall-clock time: reading a
 * thread's CPU time brings the scheduler's account of it up to date, which can end the
 * thread's time slice right there, and a wall-clock sampler would then find a thread of a
 * loaded machine waiting in clock_gettime rather than in its work. */
static inline int fixture_cpu_left(double end)
{
	static __thread double next_check;
	double now = fixture_now();

	if (now < next_check)
		return 1;
	next_check = now + 0.02;
	return fixture_cpu_now() < end;
}

static inline double fixture_seconds(int argc, char **argv, int index, double dflt)
{
	return argc > index ? atof(argv[index]) : dflt;
}

/* Keeps the compiler from deleting work whose result is otherwise unused. */
static volatile double fixture_sink;

#endif
