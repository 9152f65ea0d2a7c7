/* SPDX-License-Identifier: MIT */
/*
 * Sections: a combined parallel sections construct and a sections construct inside a parallel
 * region, two sections each, teams of 2: 2 parallel regions, 4 implicit tasks, 4 sections
 * regions (one per member and construct).
 */
#include <omp.h>
#include <stdio.h>

int main(void)
{
	int a = 0, b = 0, c = 0, d = 0;

	omp_set_dynamic(0);
#pragma omp parallel sections num_threads(2)
	{
#pragma omp section
		a = 1;
#pragma omp section
		b = 2;
	}
#pragma omp parallel num_threads(2)
	{
#pragma omp sections
		{
#pragma omp section
			c = 3;
#pragma omp section
			d = 4;
		}
	}
	printf("sections %d %d %d %d\n", a, b, c, d);
	return 0;
}
