// SPDX-License-Identifier: MIT
// A CUDA runtime program built as nvcc builds by default: the CUDA runtime linked statically
// (no libcudart.so in the process), for tests/integration/test_cuda_links.py. The runtime's
// own driver calls (device attributes at start, a kernel lookup before each launch) come from
// this program's text; none of them is one the program made. Counts checked there:
//
//   allocations  cudaMalloc d (1 MiB), one cudaFree at the end
//   copies       host -> device and device -> host (1 MiB each), and the global read back
//                with cudaMemcpyFromSymbol
//   kernels      fill x LAUNCHES (default 20; the first argument), grid 1024, block 256
//   a global     __device__ int launched: one module-global allocation of the driver's
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_check.h"

#define N (1 << 18)

__device__ int launched;

__global__ void fill(float *d, float v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < N)
		d[i] = v + (float)i;
	if (i == 0)
		launched++;
}

int main(int argc, char **argv)
{
	long launches = argc > 1 ? atol(argv[1]) : 20;
	float *h = (float *)calloc(N, sizeof(float)), *d;
	int count = 0;

	CHECK(cudaMalloc(&d, N * sizeof(float)));
	CHECK(cudaMemcpy(d, h, N * sizeof(float), cudaMemcpyHostToDevice));
	for (long i = 0; i < launches; i++)
		fill<<<N / 256, 256>>>(d, (float)i);
	CHECK(cudaMemcpy(h, d, N * sizeof(float), cudaMemcpyDeviceToHost));
	CHECK(cudaMemcpyFromSymbol(&count, launched, sizeof(count)));
	CHECK(cudaFree(d));
	printf("launches=%ld counted=%d last=%.0f\n", launches, count, h[N - 1]);
	free(h);
	return count == launches ? 0 : 1;
}
