/* SPDX-License-Identifier: MIT */
/*
 * An ordered loop: 16 iterations on a team of 2 with a dynamic schedule, each with an ordered
 * block: 1 parallel region, a loop region per member, 16 ordered blocks, in order.
 */
#include <omp.h>
#include <stdio.h>

#define N 16

int main(void)
{
	int seq[N], n = 0;

	omp_set_dynamic(0);
#pragma omp parallel for ordered schedule(dynamic) num_threads(2)
	for (int i = 0; i < N; i++) {
#pragma omp ordered
		seq[n++] = i;
	}
	for (int i = 0; i < N; i++)
		if (seq[i] != i)
			return 1;
	printf("ordered %d\n", n);
	return 0;
}
