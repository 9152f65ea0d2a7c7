// SPDX-License-Identifier: MIT
// Unified memory and waits, for tests/integration/test_cuda.py (the sync, uvm and overhead
// domains). Checked there; change both together.
//
//   managed      cudaMallocManaged m (8 MiB); the host writes every page (CPU faults), the
//                kernel touch (grid 8192, block 256) reads and writes every float on the GPU
//                (GPU faults, 8 MiB migrated host -> device), the host reads every page back
//                (8 MiB migrated device -> host)
//   waits        one cudaDeviceSynchronize, one cudaStreamSynchronize, one
//                cudaEventSynchronize, in that order
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_check.h"

#define N (2 << 20) /* floats: 8 MiB */

__global__ void touch(float *m)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < N)
		m[i] = m[i] * 2.0f + 1.0f;
}

int main(void)
{
	cudaStream_t s;
	cudaEvent_t done;
	float *m;
	double sum = 0;

	CHECK(cudaStreamCreate(&s));
	CHECK(cudaEventCreate(&done));
	CHECK(cudaMallocManaged(&m, N * sizeof(float)));
	for (int i = 0; i < N; i++)
		m[i] = 1.0f;
	touch<<<N / 256, 256>>>(m);
	CHECK(cudaDeviceSynchronize());
	touch<<<N / 256, 256, 0, s>>>(m);
	CHECK(cudaStreamSynchronize(s));
	touch<<<N / 256, 256, 0, s>>>(m);
	CHECK(cudaEventRecord(done, s));
	CHECK(cudaEventSynchronize(done));
	for (int i = 0; i < N; i++)
		sum += m[i];
	if (sum != 15.0 * N) {
		fprintf(stderr, "wrong sum %f\n", sum);
		return 1;
	}
	CHECK(cudaFree(m));
	CHECK(cudaEventDestroy(done));
	CHECK(cudaStreamDestroy(s));
	printf("cuda_managed ok\n");
	return 0;
}
