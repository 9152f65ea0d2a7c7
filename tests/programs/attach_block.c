/* SPDX-License-Identifier: MIT */
/*
 * For test_attach.py: threads blocked in system calls when syscope attaches. The main thread
 * waits in epoll_wait(-1) on stdin, a reader thread in read() on the FIFO argv[1]. Each
 * prints what its call returned ("epoll rc=1", "read rc=6 data=hello", and the errno when a
 * call fails, which is what an attach must never cause); a line "quit" on stdin ends it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

static int fifo = -1;

static void *reader_main(void *arg)
{
	char buf[64];

	(void)arg;
	printf("reader tid=%ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	for (;;) {
		ssize_t n = read(fifo, buf, sizeof(buf) - 1); /* blocked read */

		if (n < 0) {
			printf("read rc=-1 errno=%s\n", strerror(errno));
		} else {
			buf[n] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
			printf("read rc=%zd data=%s\n", n, buf);
		}
		fflush(stdout);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct epoll_event ev = { .events = EPOLLIN }, got;
	int ep = epoll_create1(0);
	pthread_t reader;
	char line[64];

	if (argc < 2 || ep < 0 || (fifo = open(argv[1], O_RDWR)) < 0)
		return 2;
	ev.data.fd = 0;
	epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev);
	pthread_create(&reader, NULL, reader_main, NULL);
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		int n = epoll_wait(ep, &got, 1, -1); /* blocked epoll */

		if (n < 0) {
			printf("epoll rc=-1 errno=%s\n", strerror(errno));
			fflush(stdout);
			continue;
		}
		printf("epoll rc=%d\n", n);
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin) || !strncmp(line, "quit", 4))
			break;
	}
	return 0;
}
