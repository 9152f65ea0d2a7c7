/* SPDX-License-Identifier: MIT */
/*
 * Calls poll with no descriptors and no timeout over and over for SECONDS of CPU time
 * (default 0.5): a wall-clock sample then often lands in syscope's wrapper of poll itself,
 * not in libc below it. Prints the number of calls.
 *
 * usage: poll_spin [SECONDS]
 */
#include <poll.h>
#include <stdio.h>

#include "fixture.h"

int main(int argc, char **argv)
{
	double end = fixture_cpu_now() + fixture_seconds(argc, argv, 1, 0.5);
	unsigned long calls = 0;

	while (fixture_cpu_left(end)) {
		poll(NULL, 0, 0);
		calls++;
	}
	printf("poll calls %lu\n", calls);
	return 0;
}
