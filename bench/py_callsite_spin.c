/* SPDX-License-Identifier: MIT */
/* For bench/py_callsite_loop.py: calls `fn` n times from C (no Python between the calls, so
 * that only the call's own cost is timed) and returns the thread CPU time it took, in ns. */
#include <stdint.h>
#include <time.h>

int64_t spin(int (*fn)(uint64_t), int64_t n);

int64_t spin(int (*fn)(uint64_t), int64_t n)
{
	struct timespec a, b;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	for (int64_t i = 0; i < n; i++)
		fn((uint64_t)i);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	return (b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec);
}
