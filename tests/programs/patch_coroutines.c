/* SPDX-License-Identifier: MIT */
/*
 * Coroutines (ucontext, as coroutine libraries and user-level thread runtimes do): patched
 * functions on two stacks of one thread, suspended in the middle and resumed later, so
 * that their calls interleave instead of nesting:
 *   main -> main_work x 5, each switching to the coroutine and back;
 *   the coroutine, on a stack of its own: co_body -> co_work x 5, each switching back to
 *   main in its middle.
 * main_work(i) returns while co_work(i) is suspended, and co_work(i) returns after the next
 * main_work began. Prints "coroutines ok" when every switch came back where it should.
 */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include "fixture.h"

#define ROUNDS 5
#define STACK_SIZE (256 * 1024)

static ucontext_t main_ctx, co_ctx;
static volatile long sink;
static int resumed;

NOINLINE void co_work(int i)
{
	sink += i;
	swapcontext(&co_ctx, &main_ctx); /* suspended here, in the middle of the call */
	resumed++;
	sink -= i;
}

NOINLINE void co_body(void)
{
	for (int i = 0; i < ROUNDS; i++)
		co_work(i);
	sink++;
}

static void co_entry(void)
{
	co_body();
}

NOINLINE void main_work(int i)
{
	sink += i;
	swapcontext(&main_ctx, &co_ctx);
	sink -= i;
}

int main(void)
{
	void *stack = malloc(STACK_SIZE);

	if (!stack || getcontext(&co_ctx))
		return 1;
	co_ctx.uc_stack.ss_sp = stack;
	co_ctx.uc_stack.ss_size = STACK_SIZE;
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, co_entry, 0);
	for (int i = 0; i < ROUNDS; i++)
		main_work(i);
	/* The last co_work is suspended: resume it, it returns, co_body ends, uc_link back. */
	swapcontext(&main_ctx, &co_ctx);
	printf(resumed == ROUNDS ? "coroutines ok\n" : "coroutines: %d of %d resumed\n", resumed,
	       ROUNDS);
	free(stack);
	return resumed == ROUNDS ? 0 : 1;
}
