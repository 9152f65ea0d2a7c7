/* SPDX-License-Identifier: MIT */
/*
 * Causal profiling fixture with a known answer, through I/O: the main thread sends a
 * request (a byte) to a server thread over a pipe or a socket and blocks in read() for the
 * reply; the server, blocked in read() for the request, serves it (serve: two units of
 * work) and writes the reply; then the main thread does its own work (local: one unit) and
 * counts one progress point. A serial loop across two threads: speeding serve up by s
 * speeds the program up by 2s/3, speeding local up by s/3. Each thread waits in read() for
 * the other, which was delayed while it worked, so it must be credited with the delays
 * inserted while it waited (Coz's rule), else it pays them again and the speedup is lost.
 *
 *   causal_pipe SECONDS pipe|socket [serve|local PERCENT]
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "causal_fixture.h"

#define UNIT 1500000L

static long serve_units = 2 * UNIT, local_units = UNIT;

static NOINLINE void serve(void)
{
	unsigned long x = 1;

	SPIN(x, serve_units, 1) /* SERVE */
	fixture_sink = (double)x;
}

static NOINLINE void local(void)
{
	unsigned long x = 2;

	SPIN(x, local_units, 3) /* LOCAL */
	fixture_sink = (double)x;
}

/* The two directions: requests[1] -> requests[0], replies[1] -> replies[0]. A socket pair
 * is one channel both ways: then requests and replies are its two ends. */
static int requests[2], replies[2];

static void *server(void *arg)
{
	char byte;

	(void)arg;
	while (read(requests[0], &byte, 1) == 1) {
		serve();
		if (write(replies[1], &byte, 1) != 1)
			break;
	}
	return NULL;
}

static int channels(const char *kind)
{
	int pair[2];

	if (strcmp(kind, "socket"))
		return pipe(requests) || pipe(replies);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair))
		return -1;
	requests[0] = replies[1] = pair[0]; /* the server's end */
	requests[1] = replies[0] = pair[1]; /* the main thread's */
	return 0;
}

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 1, 10), start;
	const char *kind = argc > 2 ? argv[2] : "pipe";
	long iterations = 0;
	pthread_t t;
	char byte = 'r';

	if (argc > 4) {
		char *shifted[] = { argv[0], argv[1], argv[3], argv[4] };

		causal_real_speedup(4, shifted, "serve", &serve_units);
		causal_real_speedup(4, shifted, "local", &local_units);
	}
	if (channels(kind)) {
		perror("causal_pipe: channels");
		return 1;
	}
	start = fixture_now();
	pthread_create(&t, NULL, server, NULL);
	while (fixture_now() - start < seconds) {
		if (write(requests[1], &byte, 1) != 1 || read(replies[0], &byte, 1) != 1) {
			perror("causal_pipe: request");
			return 1;
		}
		local();
		iterations++;
		PROGRESS("iteration");
	}
	/* The end: the server reads the end of the requests (a socket: its shutdown). */
	if (requests[1] == replies[0])
		shutdown(requests[1], SHUT_WR);
	else
		close(requests[1]);
	pthread_join(t, NULL);
	printf("iterations=%ld seconds=%.3f\n", iterations, fixture_now() - start);
	return 0;
}
