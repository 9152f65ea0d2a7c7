/* SPDX-License-Identifier: MIT */
/*
 * Loops for `syscope instrument -l`, built at -O2 and -O0; bounds come from the command line
 * so that the compiler keeps every loop (argument: 5).
 *   simple   one loop, 5 iterations, calls work each time
 *   nested   an outer loop of 3 iterations around an inner one of 4: 1 outer instance,
 *            3 inner ones, 12 calls of work
 *   early    returns from inside its loop at the third iteration: the loop ends with it
 *   escape   leaves two nested loops at once with a goto
 */
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

static volatile long sink;

NOINLINE void work(int i)
{
	sink += i;
	sink *= 1;
}

NOINLINE void simple(int n)
{
	sink++;
	for (int i = 0; i < n; i++)
		work(i);
	sink--;
}

NOINLINE void nested(int n, int m)
{
	sink++;
	for (int i = 0; i < n; i++) {
		sink += 2;
		for (int j = 0; j < m; j++)
			work(j);
	}
	sink--;
}

NOINLINE int early(int n)
{
	sink++;
	for (int i = 0; i < n; i++) {
		work(i);
		if (i == 2)
			return i;
	}
	return -1;
}

NOINLINE void escape(int n)
{
	sink++;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			work(j);
			if (i == 1 && j == 1)
				goto out;
		}
out:
	sink--;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5;

	simple(n);
	nested(3, n - 1);
	early(n);
	escape(n);
	printf("patch_loops ok %ld\n", (long)sink);
	return 0;
}
