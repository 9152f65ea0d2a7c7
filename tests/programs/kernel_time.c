/* SPDX-License-Identifier: MIT */
/*
 * CPU time spent in the kernel on the thread's behalf: fault_pages() maps and touches
 * MIB MiB at a time (a page fault per page: mostly system time), user_loop() only computes
 * (user time); they alternate for about SECONDS of CPU time. Prints each function's thread
 * CPU time (CLOCK_THREAD_CPUTIME_ID, user + system) and the thread's getrusage user and
 * system times, for the test to compare with the samples.
 *
 * usage: kernel_time SECONDS [MIB]
 */
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "fixture.h"

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

NOINLINE static void fault_pages(size_t bytes)
{
	volatile char *p =
		mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	for (size_t i = 0; i < bytes; i += 4096)
		p[i] = 1;
	munmap((void *)p, bytes);
}

NOINLINE static double user_loop(double seconds)
{
	double end = thread_cpu() + seconds, x = 1;

	while (thread_cpu() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 1.0000001 + 0.5;
	return x;
}

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 1, 1.0), fault_cpu = 0, user_cpu = 0;
	size_t bytes = (size_t)fixture_seconds(argc, argv, 2, 64) << 20;
	struct rusage ru;

	while (fault_cpu + user_cpu < seconds) {
		double t0 = thread_cpu(), t1;

		fault_pages(bytes);
		t1 = thread_cpu();
		fixture_sink = user_loop(t1 - t0); /* as much user time as that took */
		fault_cpu += t1 - t0;
		user_cpu += thread_cpu() - t1;
	}
	getrusage(RUSAGE_THREAD, &ru);
	printf("kernel_time: fault_pages %.6f user_loop %.6f user %.6f system %.6f\n", fault_cpu,
	       user_cpu, (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6,
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6);
	return 0;
}
