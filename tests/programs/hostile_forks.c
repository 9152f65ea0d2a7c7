/* SPDX-License-Identifier: MIT */
/* Forks argv[1] children (default 1000), a few at a time; each works briefly and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

NOINLINE static double child_burst(double x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000, failed = 0, running = 0;

	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		int status;

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			fixture_sink = child_burst(i);
			exit(0);
		}
		if (++running >= 16) {
			wait(&status);
			failed += !WIFEXITED(status) || WEXITSTATUS(status);
			running--;
		}
	}
	while (running-- > 0) {
		int status;

		wait(&status);
		failed += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	printf("hostile_forks: %d children, %d failed\n", n, failed);
	return failed != 0;
}
