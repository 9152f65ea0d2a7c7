/* SPDX-License-Identifier: MIT */
/* The runtime's one clock (DESIGN.md principle 4) and thread identity; all async-signal-safe. */
#include "rt.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t rt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t rt_thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

pid_t rt_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}
