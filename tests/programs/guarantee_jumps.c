/* SPDX-License-Identifier: MIT */
/*
 * Jumps out of deep instrumented frames, N times (argv[1], 100 by default):
 *   main -> jump_outer x N -> jump_middle -> jump_inner, which leaves all three by longjmp
 *   (even rounds) or siglongjmp (odd rounds) back to main, which does not return between
 *   rounds; then main -> jump_after once, which returns.
 * Every call of the three is left by the jump, none returns. Built for runtime patching
 * (syscope instrument) and with -finstrument-functions. Prints "jumps ok N".
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

static jmp_buf env;
static sigjmp_buf sigenv;
static volatile long sink;
static volatile int never; /* keeps the compiler from knowing the jumps always happen */

NOINLINE void jump_inner(int round)
{
	sink += round;
	if (never)
		return;
	if (round & 1)
		siglongjmp(sigenv, 1);
	longjmp(env, 1);
}

NOINLINE void jump_middle(int round)
{
	sink++;
	jump_inner(round);
	sink--; /* never reached: keeps the call from being a tail call */
}

NOINLINE void jump_outer(int round)
{
	sink++;
	jump_middle(round);
	sink--;
}

NOINLINE void jump_after(void)
{
	sink++;
}

int main(int argc, char **argv)
{
	volatile int rounds = argc > 1 ? atoi(argv[1]) : 100, done = 0;

	for (volatile int i = 0; i < rounds; i++) {
		if (i & 1) {
			if (!sigsetjmp(sigenv, 1))
				jump_outer(i);
		} else if (!setjmp(env)) {
			jump_outer(i);
		}
		done++;
	}
	jump_after();
	printf("jumps ok %d\n", done);
	return done == rounds ? 0 : 1;
}
