/* SPDX-License-Identifier: MIT */
/*
 * Known host activity for the host-telemetry tests, in three phases, each after a pause of
 * PAUSE seconds so that the background sampler sees before and after:
 *
 *   memory   allocate and touch MIB MiB (RSS rises by that much, one minor fault per page)
 *   network  send NET_MIB MiB over a loopback TCP connection to itself (interface lo)
 *   sleeps   200 sleeps of 1 ms (at least 200 voluntary context switches)
 *
 * Usage: host_load [MIB [NET_MIB [PAUSE]]]   (defaults 128, 32, 0.2)
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

static void pause_for(double seconds)
{
	struct timespec ts = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };

	nanosleep(&ts, NULL);
}

/* A mapping of its own without transparent huge pages (madvise; where the kernel has none,
 * it fails and changes nothing): a fault per 4 KiB page whatever the machine's THP setting
 * (always: one per 2 MiB where the kernel finds a huge page free, madvise: none). */
NOINLINE static char *touch_memory(size_t bytes)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	(void)madvise(p, bytes, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < bytes; i += 4096)
		p[i] = (char)i;
	/* Then 20 ms of this thread's CPU on pages already there (no fault): a counter's count
	 * goes to the function of the sample that ends its stretch, so the samples after the
	 * last fault must land here too, not in what runs next. */
	for (double end = fixture_cpu_now() + 0.02; fixture_cpu_left(end);)
		for (size_t i = 0; i < bytes; i += 4096)
			p[i]++;
	return p;
}

NOINLINE static int send_loopback(size_t bytes)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int srv = socket(AF_INET, SOCK_STREAM, 0), cli = socket(AF_INET, SOCK_STREAM, 0), conn;
	static char buf[65536];
	size_t sent = 0, got = 0;

	if (srv < 0 || cli < 0 || bind(srv, (void *)&a, sizeof(a)) || listen(srv, 1) ||
	    getsockname(srv, (void *)&a, &len) || connect(cli, (void *)&a, sizeof(a)))
		return -1;
	conn = accept(srv, NULL, NULL);
	if (conn < 0)
		return -1;
	while (got < bytes) { /* alternate, so that neither side's buffer fills */
		ssize_t n;

		if (sent < bytes) {
			n = write(cli, buf,
				  sizeof(buf) < bytes - sent ? sizeof(buf) : bytes - sent);
			if (n <= 0)
				return -1;
			sent += (size_t)n;
		}
		n = read(conn, buf, sizeof(buf));
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	close(conn);
	close(cli);
	close(srv);
	return 0;
}

int main(int argc, char **argv)
{
	double mib = fixture_seconds(argc, argv, 1, 128), net = fixture_seconds(argc, argv, 2, 32);
	double pause = fixture_seconds(argc, argv, 3, 0.2);
	char *mem;

	pause_for(pause);
	mem = touch_memory((size_t)(mib * 1048576));
	pause_for(pause);
	if (send_loopback((size_t)(net * 1048576))) {
		perror("host_load: loopback");
		return 1;
	}
	pause_for(pause);
	for (int i = 0; i < 200; i++)
		pause_for(0.001);
	pause_for(pause);
	printf("host_load: done %d\n", mem ? mem[4096] : -1);
	if (mem)
		munmap(mem, (size_t)(mib * 1048576));
	return 0;
}
