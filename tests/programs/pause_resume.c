/* SPDX-License-Identifier: MIT */
/*
 * syscope_pause/resume and progress points, with known answers:
 *   before_pause   0.2 s of CPU, recorded
 *   while_paused   0.3 s of CPU and a region "hidden": not recorded
 *   after_resume   0.2 s of CPU, recorded, and three progress points "item"
 */
#include <stdio.h>

#define SYSCOPE_WEAK
#include "syscope/syscope.h"

#include "fixture.h"

static volatile double sink;

NOINLINE static void spin_for(double seconds)
{
	double end = fixture_cpu_now() + seconds, x = 1;

	while (fixture_cpu_now() < end)
		for (int i = 0; i < 1000; i++)
			x = x * 1.0000001 + 0.5;
	sink = x;
}

NOINLINE static void before_pause(void)
{
	spin_for(0.2);
	sink += 1; /* not a tail call: before_pause stays on the stack */
}

NOINLINE static void while_paused(void)
{
	if (syscope_region_begin)
		syscope_region_begin("hidden");
	spin_for(0.3);
	if (syscope_region_end)
		syscope_region_end();
}

NOINLINE static void after_resume(void)
{
	spin_for(0.2);
	for (int i = 0; i < 3 && syscope_progress; i++)
		syscope_progress("item");
}

int main(void)
{
	before_pause();
	if (syscope_pause)
		syscope_pause();
	while_paused();
	if (syscope_resume)
		syscope_resume();
	after_resume();
	printf("pause_resume ok\n");
	return 0;
}
