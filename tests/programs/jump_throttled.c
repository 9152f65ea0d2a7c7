/* SPDX-License-Identifier: MIT */
/*
 * Jumps out of a call whose catcher is throttled, as Lua's pcall loop does:
 *   main -> attempt x 5000 (setjmp, returns), every fifth -> thrower (longjmp back to
 *   attempt), and between attempts main's own work, a loop in main itself.
 * After its first 1000 short calls, attempt is only counted (throttling): its returns are
 * no longer seen, and the next patched entry after a jump is the next thrower's, five
 * attempts of main's work later. thrower's 1000 calls each last a longjmp; main's work is
 * nearly all the time. Prints "thrown 1000".
 */
#include <setjmp.h>
#include <stdio.h>

#include "fixture.h"

static jmp_buf env;
static volatile long sink;
static volatile int never; /* keeps the compiler from knowing the jump always happens */

NOINLINE void thrower(int i)
{
	sink += i;
	if (!never)
		longjmp(env, 1);
}

NOINLINE int attempt(int i)
{
	if (setjmp(env))
		return 1; /* thrown */
	if (i % 5 == 0)
		thrower(i);
	sink++;
	return 0;
}

int main(void)
{
	int thrown = 0;

	for (int i = 0; i < 5000; i++) {
		thrown += attempt(i);
		for (int k = 0; k < 20000; k++) /* main's work, in no patched function */
			sink += k;
	}
	printf("thrown %d\n", thrown);
	return 0;
}
