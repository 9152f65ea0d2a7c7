/* SPDX-License-Identifier: MIT */
/* The parent forks a child that execs exec_child (argv[1]); both work, the parent waits. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

NOINLINE static double parent_work(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 2, 0.8), end, x = 1;
	char secs[32];
	int status = 0;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: fork_exec PATH-OF-exec_child [seconds]\n");
		return 2;
	}
	snprintf(secs, sizeof(secs), "%g", seconds);
	pid = fork();
	if (pid == 0) {
		execl(argv[1], argv[1], secs, (char *)NULL);
		_exit(127);
	}
	end = fixture_cpu_now() + seconds;
	while (fixture_cpu_left(end))
		x = parent_work(x);
	fixture_sink = x;
	waitpid(pid, &status, 0);
	printf("fork_exec: child exited %d\n", WEXITSTATUS(status));
	return WEXITSTATUS(status);
}
