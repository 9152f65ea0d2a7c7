/* SPDX-License-Identifier: MIT */
/*
 * For test_attach.py: a CPU-bound program started without syscope. The main thread spins in
 * main_spin(), a worker made at start in before_spin(); a line "spawn" on stdin makes one
 * more worker, in during_spin() (answered "spawned tid=N"); "quit" (or end of input) ends
 * the program with exit(0). Each line it reads is answered with "ok LINE" once done. A path
 * in argv[1] is a library it loads first; "fork" runs a child that exits 7 ("forked
 * status=7"). "fork-spin" runs a child that spins in child_spin() for 0.4 s of its own CPU
 * time, then exits 7 ("fork-spin pid=N status=7"). "exec" makes the program execute itself
 * anew ("execed pid=N" from the new image, which then runs as before). "spawn-sleep" runs
 * /bin/sleep 1 through posix_spawn ("spawn-sleep status=0"). "fork-exec N" runs N children
 * one after another, each spinning in exec_child_spin() for 0.3 s of its own CPU time, then
 * executing /bin/true, child k through the k-th (modulo 8) of execv, execvp, execve, execl,
 * execlp, execle, execvpe, and a raw execve system call when "fork-exec-raw N" asked for it
 * (else execv again): "fork-exec pid=P status=0" for each, then "fork-exec done".
 * "fork-exec-for MS" runs such children of 2 ms each back to back for MS milliseconds
 * ("fork-exec-for n=N failed=0"). "segv" makes it crash in crash_here() (SIGSEGV, default
 * action).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int quit, during_tid;
static volatile double sink;

__attribute__((noinline)) static void work(void)
{
	for (int i = 0; i < 100000; i++)
		sink += i * 0.5;
}

__attribute__((noinline)) void main_spin(void)
{
	while (!atomic_load(&quit))
		work(); /* main spin */
}

__attribute__((noinline)) void before_spin(void)
{
	while (!atomic_load(&quit))
		work(); /* before spin */
}

__attribute__((noinline)) void during_spin(void)
{
	while (!atomic_load(&quit))
		work(); /* during spin */
}

__attribute__((noinline)) static void before_spin_for(int rounds)
{
	for (int i = 0; i < rounds; i++)
		sink += i * 0.25;
}

__attribute__((noinline)) void child_spin(void)
{
	struct timespec ts;

	do {
		work(); /* child spin */
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	} while (ts.tv_sec * 1000000000L + ts.tv_nsec < 400000000L);
}

static void fork_spin(void)
{
	int status = -1;
	pid_t child = fork();

	if (child == 0) {
		child_spin();
		exit(7);
	}
	waitpid(child, &status, 0);
	printf("fork-spin pid=%d status=%d\n", (int)child,
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

__attribute__((noinline)) void exec_child_spin(long ns)
{
	struct timespec ts;

	do {
		work(); /* exec child spin */
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	} while (ts.tv_sec * 1000000000L + ts.tv_nsec < ns);
}

/* Child k's exec of /bin/true (returns only when the exec failed). */
static void exec_true(int k, bool raw)
{
	extern char **environ;
	char *argv[] = { "true", NULL };

	switch (k % 8) {
	case 0:
		execv("/bin/true", argv);
		break;
	case 1:
		execvp("true", argv);
		break;
	case 2:
		execve("/bin/true", argv, environ);
		break;
	case 3:
		execl("/bin/true", "true", (char *)NULL);
		break;
	case 4:
		execlp("true", "true", (char *)NULL);
		break;
	case 5:
		execle("/bin/true", "true", (char *)NULL, environ);
		break;
	case 6:
		execvpe("true", argv, environ);
		break;
	default:
		if (raw)
			syscall(SYS_execve, "/bin/true", argv, environ);
		else
			execv("/bin/true", argv);
		break;
	}
}

/* One child that spins `ns` of CPU time, then executes /bin/true the k-th way: its status. */
static int fork_exec_one(int k, bool raw, long ns, pid_t *pid)
{
	int status = -1;

	*pid = fork();
	if (*pid == 0) {
		exec_child_spin(ns);
		exec_true(k, raw);
		_exit(127);
	}
	waitpid(*pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void fork_exec(int n, bool raw)
{
	for (int k = 0; k < n; k++) {
		pid_t child;
		int status = fork_exec_one(k, raw, 300000000L, &child);

		printf("fork-exec pid=%d status=%d\n", (int)child, status);
		fflush(stdout);
	}
	printf("fork-exec done\n");
}

/* Children of 2 ms of CPU time each, back to back, for `ms` of wall-clock time. */
static void fork_exec_for(int ms)
{
	struct timespec t0, t;
	int n = 0, failed = 0;
	pid_t child;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		failed += fork_exec_one(n++, false, 2000000L, &child) != 0;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L < ms);
	printf("fork-exec-for n=%d failed=%d\n", n, failed);
}

static void spawn_sleep(void)
{
	extern char **environ;
	char *argv[] = { "sleep", "1", NULL };
	int status = -1;
	pid_t child;

	if (!posix_spawn(&child, "/bin/sleep", NULL, NULL, argv, environ))
		waitpid(child, &status, 0);
	printf("spawn-sleep status=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static int *volatile nowhere; /* NULL, which the compiler cannot know */

__attribute__((noinline)) void crash_here(void)
{
	*nowhere = 1;
}

static void *before_main(void *arg)
{
	(void)arg;
	before_spin();
	return NULL;
}

static void *during_main(void *arg)
{
	(void)arg;
	atomic_store(&during_tid, (int)syscall(SYS_gettid));
	during_spin();
	return NULL;
}

static void *commands(void *arg)
{
	char line[64];
	pthread_t t;

	(void)arg;
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, "spawn")) {
			pthread_create(&t, NULL, during_main, NULL);
			while (!atomic_load(&during_tid))
				usleep(1000);
			printf("spawned tid=%d\n", atomic_load(&during_tid));
		}
		if (!strcmp(line, "fork")) {
			pid_t child = fork();
			int status = -1;

			if (child == 0) {
				before_spin_for(200000); /* the child's own CPU time, then exit */
				exit(7);
			}
			waitpid(child, &status, 0);
			printf("forked status=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		}
		if (!strcmp(line, "fork-spin"))
			fork_spin();
		if (!strcmp(line, "spawn-sleep"))
			spawn_sleep();
		if (!strncmp(line, "fork-exec ", 10))
			fork_exec(atoi(line + 10), false);
		if (!strncmp(line, "fork-exec-raw ", 14))
			fork_exec(atoi(line + 14), true);
		if (!strncmp(line, "fork-exec-for ", 14))
			fork_exec_for(atoi(line + 14));
		if (!strcmp(line, "exec")) {
			fflush(stdout);
			execl("/proc/self/exe", "attach_spin", "--execed", (char *)NULL);
			printf("exec failed\n");
		}
		if (!strcmp(line, "segv"))
			crash_here();
		if (!strcmp(line, "quit"))
			break;
		printf("ok %s\n", line);
		fflush(stdout);
	}
	atomic_store(&quit, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t before, reader;

	if (argc > 1 && !strcmp(argv[1], "--execed")) {
		printf("execed pid=%d\n", (int)getpid());
		argc = 1;
	}
#ifndef ATTACH_STATIC				    /* the static build: no loader, no dlopen */
	if (argc > 1 && !dlopen(argv[1], RTLD_NOW)) /* a library to have loaded (fake CUDA) */
		return 2;
#else
	(void)argv;
#endif
	pthread_create(&before, NULL, before_main, NULL);
	pthread_create(&reader, NULL, commands, NULL);
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	main_spin();
	printf("done\n");
	fflush(stdout);
	return 0;
}
