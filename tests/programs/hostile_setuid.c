/* SPDX-License-Identifier: MIT */
/* Drops root to nobody (when run as root), works, and forks a child that works too. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

NOINLINE static double nobody_work(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

int main(int argc, char **argv)
{
	double end, x = 1;
	int status = 0;
	pid_t pid;

	if (getuid() == 0 && (setgid(65534) || setuid(65534))) {
		perror("setuid");
		return 1;
	}
	end = fixture_cpu_now() + fixture_seconds(argc, argv, 1, 0.8);
	pid = fork();
	while (fixture_cpu_left(end))
		x = nobody_work(x);
	fixture_sink = x;
	if (pid == 0)
		_exit(0);
	waitpid(pid, &status, 0);
	printf("hostile_setuid: uid %d\n", (int)getuid());
	return WEXITSTATUS(status);
}
