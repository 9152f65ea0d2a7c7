/* SPDX-License-Identifier: MIT */
/*
 * Regions, marks and counters through the user API, with known counts:
 *   main thread: "phase A" (args items=42, label="alpha") holding three "inner" regions,
 *                then the mark "checkpoint", then counter "queue depth" [items] = 1..10
 *   worker thread: one "worker" region (category "compute")
 * With the argument "die", it opens the region "doomed", works for a while, and kills itself
 * with SIGKILL inside.
 * Prints the main thread's CPU time inside the "inner" regions, and its task clock there (the
 * perf event --cpu-events=task-clock counts, which on a virtual machine also runs while the
 * host steals the CPU, unlike the thread's CPU time), when perf_event_open allows it.
 * Declared weak: the program also runs without syscope.
 */
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SYSCOPE_WEAK
#include "syscope/syscope.h"

#include "fixture.h"

static long long thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* This thread's task clock, counting; -1 where perf_event_open refuses it. */
static int open_task_clock(void)
{
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE,
				     .size = sizeof(a),
				     .config = PERF_COUNT_SW_TASK_CLOCK };
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);

	if (fd < 0) { /* perf_event_paranoid 2 and no privileges: user time only */
		a.exclude_kernel = 1;
		fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	}
	return fd;
}

static long long task_clock_ns(int fd)
{
	long long v = 0;

	return fd >= 0 && read(fd, &v, sizeof(v)) == sizeof(v) ? v : 0;
}

NOINLINE static double spin(double x, int n)
{
	for (int i = 0; i < n; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

static void *worker(void *arg)
{
	(void)arg;
	if (syscope_region_begin_args)
		syscope_region_begin_args("compute", "worker", NULL, 0);
	fixture_sink = spin(2, 12000000);
	if (syscope_region_end)
		syscope_region_end();
	return NULL;
}

int main(int argc, char **argv)
{
	struct syscope_arg args[2] = {
		{ .name = "items", .type = SYSCOPE_ARG_INT, .value.i = 42 },
		{ .name = "label", .type = SYSCOPE_ARG_STRING, .value.s = "alpha" },
	};
	pthread_t t;
	long long inner_cpu = 0, inner_clock = 0;
	int clock_fd;

	if (!syscope_region_begin) {
		printf("regions: running without syscope\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "die")) {
		syscope_region_begin("doomed");
		/* Long enough for the recorder's periodic flush (every 20 ms while recording): a
		 * SIGKILL takes the last moments' records with it. */
		fixture_sink = spin(3, 40000000);
		kill(getpid(), SIGKILL);
	}
	clock_fd = open_task_clock();
	pthread_create(&t, NULL, worker, NULL);
	syscope_region_begin_args("user", "phase A", args, 2);
	for (int i = 0; i < 3; i++) {
		long long cpu, clock;

		syscope_region_begin("inner");
		clock = task_clock_ns(clock_fd);
		cpu = thread_cpu_ns();
		fixture_sink = spin(1, 8000000);
		inner_cpu += thread_cpu_ns() - cpu;
		inner_clock += task_clock_ns(clock_fd) - clock;
		syscope_region_end();
	}
	syscope_region_end();
	syscope_mark("checkpoint");
	for (int i = 1; i <= 10; i++)
		syscope_counter("queue depth", "items", i);
	pthread_join(t, NULL);
	/* The CPU time the "inner" regions took, for tests that check counts on a busy machine. */
	printf("regions: inner cpu %lld ns\n", inner_cpu);
	if (clock_fd >= 0)
		printf("regions: inner task-clock %lld ns\n", inner_clock);
	printf("regions: done\n");
	return 0;
}
