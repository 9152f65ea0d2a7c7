/* SPDX-License-Identifier: MIT */
/*
 * For test_processes.py: runs a program the way a shell searches PATH (dash's shellexec): an
 * execv of DIR/NAME for each DIR in turn, every one but the last failing (the name is not
 * there: ENOENT), the last one the program's own folder. `exec_path N NAME DIR... -- ARGS`:
 * before() runs N times before the search, after() N times once the failed tries are over,
 * just before the last one; NAME gets ARGS. Built with -finstrument-functions, so that every
 * call is recorded; prints the functions' addresses ("fn NAME 0xADDR") and each failure
 * ("exec DIR/NAME failed errno=E").
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

static volatile long sink;

NOINLINE void before(long i)
{
	sink += i;
}

NOINLINE void after(long i)
{
	sink -= i;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	int first_dir = 3, ndirs = 0;
	char path[4096];
	char **args;

	if (argc < 4)
		return 2;
	while (first_dir + ndirs < argc && strcmp(argv[first_dir + ndirs], "--"))
		ndirs++;
	if (!ndirs || first_dir + ndirs >= argc)
		return 2; /* no "--" */
	args = &argv[first_dir + ndirs];
	args[0] = argv[2]; /* the "--" becomes the program's argv[0] */
	printf("fn main %p\nfn before %p\nfn after %p\n", (void *)main, (void *)before,
	       (void *)after);
	for (long i = 0; i < n; i++)
		before(i);
	for (int d = 0; d < ndirs; d++) {
		if (d == ndirs - 1)
			for (long i = 0; i < n; i++)
				after(i);
		snprintf(path, sizeof(path), "%s/%s", argv[first_dir + d], argv[2]);
		fflush(stdout);
		execv(path, args);
		printf("exec %s failed errno=%d\n", path, errno);
	}
	return 1;
}
