/* SPDX-License-Identifier: MIT */
/*
 * Push/pop regions and instrumented calls that do not nest (syscope instrument): "phase" is
 * opened inside open_phase (as NVTX's own code does for nvtxRangePush) and closed in main
 * after open_phase returned:
 *   main -> open_phase [pushes "phase"], work, [pop "phase"], work
 * main must keep both calls of work and end after them.
 */
#define SYSCOPE_WEAK
#include <stdio.h>
#include <syscope/syscope.h>

#include "fixture.h"

static volatile long sink;

NOINLINE void work(int n)
{
	for (int i = 0; i < n; i++)
		sink += i;
}

NOINLINE void open_phase(void)
{
	sink++;
	if (syscope_region_begin)
		syscope_region_begin("phase");
	sink++;
}

int main(void)
{
	open_phase();
	work(1000);
	if (syscope_region_end)
		syscope_region_end();
	work(1000);
	printf("patch_regions ok %ld\n", (long)sink);
	return 0;
}
