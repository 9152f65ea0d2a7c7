/* SPDX-License-Identifier: MIT */
/*
 * What one read of a 4-event counter group costs, the read syscope's sampler does after each
 * sample with --cpu-events: a group opened for this thread (the hardware events when the
 * machine has a PMU, else four software events), read N times.
 *
 * Usage: pmc_read [N]; prints "events=... reads=N ns_per_read=X".
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int open_group(const uint32_t *type, const uint64_t *config, int *fds)
{
	for (int i = 0; i < 4; i++) {
		struct perf_event_attr a;

		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = type[i];
		a.config = config[i];
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
		a.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
				PERF_FORMAT_TOTAL_TIME_RUNNING;
		fds[i] = (int)syscall(SYS_perf_event_open, &a, 0, -1, i ? fds[0] : -1, 0);
		if (fds[i] < 0) {
			while (i-- > 0)
				close(fds[i]);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const uint32_t hw_type[4] = { PERF_TYPE_HARDWARE, PERF_TYPE_HARDWARE,
					     PERF_TYPE_HARDWARE, PERF_TYPE_HARDWARE };
	static const uint64_t hw_config[4] = { PERF_COUNT_HW_INSTRUCTIONS, PERF_COUNT_HW_CPU_CYCLES,
					       PERF_COUNT_HW_CACHE_MISSES,
					       PERF_COUNT_HW_BRANCH_MISSES };
	static const uint32_t sw_type[4] = { PERF_TYPE_SOFTWARE, PERF_TYPE_SOFTWARE,
					     PERF_TYPE_SOFTWARE, PERF_TYPE_SOFTWARE };
	static const uint64_t sw_config[4] = { PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_PAGE_FAULTS,
					       PERF_COUNT_SW_CONTEXT_SWITCHES,
					       PERF_COUNT_SW_CPU_MIGRATIONS };
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	const char *which = "instructions,cycles,cache-misses,branch-misses";
	uint64_t buf[3 + 4];
	struct timespec t0, t1;
	int fds[4];

	if (open_group(hw_type, hw_config, fds)) {
		which = "task-clock,page-faults,context-switches,cpu-migrations";
		if (open_group(sw_type, sw_config, fds)) {
			perror("perf_event_open");
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		if (read(fds[0], buf, sizeof(buf)) < (ssize_t)sizeof(buf))
			return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("events=%s reads=%ld ns_per_read=%.1f\n", which, n,
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
		       (double)n);
	return 0;
}
