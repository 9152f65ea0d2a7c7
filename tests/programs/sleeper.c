/* SPDX-License-Identifier: MIT */
/* Sleeps in several ways and checks that no sleep returns early (EINTR) and every call
 * slept its full time: a wall-clock sampler must not change that. Exits 1 if one did. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

/* The calls store their result before returning, so they are not tail calls: the nap_*
 * functions stay on the stack as the callers of the sleeping calls. */
NOINLINE static int nap_nanosleep(void)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	int rc = nanosleep(&ts, NULL);

	fixture_sink = rc;
	return rc;
}

NOINLINE static int nap_poll(void)
{
	int rc = poll(NULL, 0, 50);

	fixture_sink = rc;
	return rc;
}

int main(void)
{
	int bad = 0;

	for (int i = 0; i < 6; i++) {
		double t0 = fixture_now();

		if (nap_nanosleep() || fixture_now() - t0 < 0.049) {
			fprintf(stderr, "sleeper: nanosleep cut short (errno %d)\n", errno);
			bad = 1;
		}
		t0 = fixture_now();
		if (nap_poll() != 0 || fixture_now() - t0 < 0.049) {
			fprintf(stderr, "sleeper: poll cut short (errno %d)\n", errno);
			bad = 1;
		}
	}
	if (sleep(1) != 0) {
		fprintf(stderr, "sleeper: sleep(1) cut short\n");
		bad = 1;
	}
	printf("sleeper: %s\n", bad ? "interrupted" : "done");
	return bad;
}
