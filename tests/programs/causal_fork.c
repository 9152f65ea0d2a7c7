/* SPDX-License-Identifier: MIT */
/*
 * Causal profiling fixture whose work is in fork children: the parent forks WORKERS
 * children one after the other and waits for each; every child runs the loop of
 * causal_serial (its HOT line 2/3 of the time, its COLD line 1/3, one progress point per
 * iteration) for SECONDS / WORKERS, then exits. The parent itself does nothing measurable.
 *
 *   causal_fork SECONDS [WORKERS]
 * Prints each worker's iterations and time, then the total.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "causal_fixture.h"

#define UNIT 1000000L

static void work(double seconds)
{
	double start = fixture_now(), took;
	long iterations = 0;
	unsigned long x = 1, y = 2;

	do {
		SPIN(x, 2 * UNIT, 1) /* HOT */
		SPIN(y, UNIT, 3)     /* COLD */
		PROGRESS("iteration");
		iterations++;
	} while ((took = fixture_now() - start) < seconds);
	fixture_sink = (double)(x ^ y);
	printf("worker=%d iterations=%ld seconds=%.3f\n", (int)getpid(), iterations, took);
}

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 1, 10);
	int workers = argc > 2 ? atoi(argv[2]) : 1;

	for (int i = 0; i < workers; i++) {
		int status = 0;
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			work(seconds / workers);
			fflush(stdout);
			exit(0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
	}
	printf("workers=%d\n", workers);
	return 0;
}
