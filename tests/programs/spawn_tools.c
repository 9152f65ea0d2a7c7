/* SPDX-License-Identifier: MIT */
/*
 * Starts tool programs as a GPU job starts its compilers: spawn_tools TOOL NSPAWN NFORK
 * [OTHER] runs TOOL --version NSPAWN times with posix_spawn, NFORK times with fork (even
 * turns) or vfork (odd turns) and execv, then OTHER once with posix_spawn, waiting for each.
 * Prints what it started.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int wait_for(pid_t pid)
{
	int status = 0;

	if (pid <= 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int spawn(const char *path)
{
	char *argv[] = { (char *)path, "--version", NULL };
	pid_t pid;

	if (posix_spawn(&pid, path, NULL, NULL, argv, environ))
		return -1;
	return wait_for(pid);
}

static int fork_exec(const char *path, int use_vfork)
{
	char *argv[] = { (char *)path, "--version", NULL };
	pid_t pid = use_vfork ? vfork() : fork();

	if (pid == 0) {
		execv(path, argv);
		_exit(127);
	}
	return wait_for(pid);
}

int main(int argc, char **argv)
{
	int nspawn, nfork, failed = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: spawn_tools TOOL NSPAWN NFORK [OTHER]\n");
		return 2;
	}
	nspawn = atoi(argv[2]);
	nfork = atoi(argv[3]);
	for (int i = 0; i < nspawn; i++)
		failed += spawn(argv[1]) != 0;
	for (int i = 0; i < nfork; i++)
		failed += fork_exec(argv[1], i % 2) != 0;
	if (argc > 4)
		failed += spawn(argv[4]) != 0;
	printf("spawned=%d forked=%d other=%d failed=%d\n", nspawn, nfork, argc > 4, failed);
	return failed != 0;
}
