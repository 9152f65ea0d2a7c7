/* SPDX-License-Identifier: MIT */
/*
 * The floor under any tracer that writes its records into fresh memory: the cost of writing
 * 96 MiB sequentially (8 bytes at a time) into memory never touched before, per 48 bytes
 * (one instrumented call's two records), for anonymous memory, anonymous memory populated at
 * mmap, a shared file mapping (syscope's recorder) and the same populated with
 * MADV_POPULATE_WRITE; and into memory written once already (a reused buffer).
 *
 * Usage: page_touch; prints one "mode=... ns_per_48B=X ns_per_page=Y" line per mode.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define SIZE (96ul << 20)

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double fill(char *p)
{
	double t0 = now_ns();

	for (size_t i = 0; i < SIZE; i += 8)
		*(volatile unsigned long *)(p + i) = i;
	return now_ns() - t0;
}

static void report(const char *mode, double ns)
{
	printf("mode=%s ns_per_48B=%.2f ns_per_page=%.0f\n", mode, ns / (SIZE / 48.0),
	       ns / (SIZE / 4096.0));
}

int main(void)
{
	char path[] = "/tmp/syscope-page-touch-XXXXXX";
	int fd = mkstemp(path);
	char *p;

	p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	report("anonymous", fill(p));
	report("reused", fill(p));
	munmap(p, SIZE);
	p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1,
		 0);
	report("anonymous_populated", fill(p));
	munmap(p, SIZE);
	if (fd < 0 || fallocate(fd, 0, 0, SIZE))
		return 1;
	unlink(path);
	p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	report("file_shared", fill(p));
	munmap(p, SIZE);
	if (ftruncate(fd, 0) || fallocate(fd, 0, 0, SIZE))
		return 1;
	p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	madvise(p, SIZE, MADV_POPULATE_WRITE);
	report("file_shared_populated", fill(p));
	munmap(p, SIZE);
	close(fd);
	return 0;
}
