/* SPDX-License-Identifier: MIT */
/*
 * The main thread exits while other threads record as fast as they can
 * (tests/integration/test_guarantees_data.py): syscope writes every thread's buffers at the
 * exit while their owners go on recording into them, so a record still being written must
 * not reach the file as a body without its header (the reader took that for damage), and a
 * buffer must not be reused under that write.
 *
 *   exit_while_recording THREADS   THREADS threads open and close user regions until main,
 *                                  after 30 ms, calls exit(0)
 */
#define SYSCOPE_WEAK
#include <syscope/syscope.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *record(void *arg)
{
	(void)arg;
	for (;;) {
		syscope_region_begin("busy");
		syscope_region_end();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t t;

	if (!syscope_region_begin) {
		fprintf(stderr, "exit_while_recording: run it under syscope\n");
		return 2;
	}
	for (int i = 0; i < n; i++)
		if (pthread_create(&t, NULL, record, NULL))
			return 1;
	usleep(30000);
	printf("exit_while_recording: exiting\n");
	fflush(stdout);
	exit(0);
}
