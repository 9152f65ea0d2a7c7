/* SPDX-License-Identifier: MIT */
/*
 * Stack traces taken by the program itself inside patched functions: main -> outer ->
 * middle -> inner, where inner calls backtrace() and prints the function name of each
 * frame, innermost first ("trace: inner middle outer main ..."). The patched run must print
 * what the plain run prints: the unwinder must not stop at the exit stub that replaced the
 * return addresses. Built with -rdynamic so that backtrace_symbols can name the functions.
 */
#include <execinfo.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"

static volatile long sink;

NOINLINE void inner(void)
{
	void *frames[32];
	int n = backtrace(frames, 32);
	char **names = backtrace_symbols(frames, n);

	printf("trace:");
	for (int i = 0; names && i < n; i++) {
		/* "path(function+0x12) [0x...]": keep the function */
		char *open = strchr(names[i], '('), *plus = open ? strchr(open, '+') : NULL;

		if (open && plus && plus > open + 1)
			printf(" %.*s", (int)(plus - open - 1), open + 1);
	}
	printf("\n");
	sink++;
}

NOINLINE void middle(void)
{
	inner();
	sink++;
}

NOINLINE void outer(void)
{
	middle();
	sink++;
}

int main(void)
{
	outer();
	return 0;
}
