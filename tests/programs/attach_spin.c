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
 * /bin/sleep 1 through posix_spawn ("spawn-sleep status=0"). "segv" makes it crash in
 * crash_here() (SIGSEGV, default action).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
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
