// SPDX-License-Identifier: MIT
// Launch cost: N launches of an empty kernel on one stream, timed on the host from the first
// launch to the end of the last kernel. Prints "ns_per_launch=X". Usage: cuda_launch [N]
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__global__ void empty_kernel(int *p)
{
	if (p)
		*p = 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	double t0;

	for (int i = 0; i < 1000; i++) /* context, module and queue warm-up */
		empty_kernel<<<1, 1>>>(NULL);
	if (cudaDeviceSynchronize() != cudaSuccess)
		return 2;
	t0 = now_s();
	for (long i = 0; i < n; i++)
		empty_kernel<<<1, 1>>>(NULL);
	if (cudaDeviceSynchronize() != cudaSuccess)
		return 2;
	printf("ns_per_launch=%.1f\n", (now_s() - t0) * 1e9 / n);
	return 0;
}
