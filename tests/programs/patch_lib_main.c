/* SPDX-License-Identifier: MIT */
/*
 * Links libpatch_lib.so: main -> use_lib x 2 -> lib_outer -> lib_inner x 4 (8 in all).
 * Without -MI only the program's own functions are instrumented.
 */
#include <stdio.h>

#include "fixture.h"

long lib_outer(long n);

static volatile long sink;

NOINLINE void use_lib(long n)
{
	sink += lib_outer(n);
	sink++;
}

int main(void)
{
	for (int i = 0; i < 2; i++)
		use_lib(i);
	printf("patch_lib ok %ld\n", (long)sink);
	return 0;
}
