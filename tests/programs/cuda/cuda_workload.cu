// SPDX-License-Identifier: MIT
// A CUDA runtime program with known GPU work, for tests/integration/test_cuda.py. Every count,
// size and launch shape below is checked exactly there; change both together.
//
//   allocations  cudaMalloc x (4 MiB), y (4 MiB), z (1 MiB); three cudaFree at the end
//   copies       x and y host -> device (4 MiB each), y device -> host (4 MiB)
//   set          cudaMemset of z (1 MiB)
//   kernels      saxpy  x10  grid 4096 x 1 x 1, block 256 x 1 x 1, stream a ("compute" range)
//                scale  x5   grid 64 x 4 x 1,   block 128 x 2 x 1, 1024 B dynamic shared,
//                            stream b ("scale phase" range)
//                bump   x6   grid 16, block 64: a graph of two bump launches, launched 3 times
//   NVTX         ranges "compute" and "scale phase" (push/pop), mark "checkpoint"
//   bookkeeping  one cudaGetDevice and one cudaGetLastError (after the scale launches)
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_check.h"

#define N (1 << 20)

__global__ void saxpy(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = a * x[i] + y[i];
}

__global__ void scale(float *z, float f)
{
	extern __shared__ float tile[];
	int t = threadIdx.y * blockDim.x + threadIdx.x;
	int i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x * blockDim.y + t;

	tile[t] = z[i];
	__syncthreads();
	z[i] = tile[t] * f;
}

__global__ void bump(float *z)
{
	z[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f;
}

int main(void)
{
	float *hx = (float *)malloc(N * sizeof(float)), *hy = (float *)malloc(N * sizeof(float));
	float *x, *y, *z;
	cudaStream_t a, b;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	int device;

	for (int i = 0; i < N; i++) {
		hx[i] = 1.0f;
		hy[i] = 2.0f;
	}
	CHECK(cudaStreamCreate(&a));
	CHECK(cudaStreamCreate(&b));
	CHECK(cudaMalloc(&x, N * sizeof(float)));
	CHECK(cudaMalloc(&y, N * sizeof(float)));
	CHECK(cudaMalloc(&z, N / 4 * sizeof(float)));
	CHECK(cudaMemcpy(x, hx, N * sizeof(float), cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(y, hy, N * sizeof(float), cudaMemcpyHostToDevice));
	CHECK(cudaMemset(z, 0, N / 4 * sizeof(float)));

	nvtxRangePushA("compute");
	for (int k = 0; k < 10; k++)
		saxpy<<<N / 256, 256, 0, a>>>(N, 0.5f, x, y);
	nvtxRangePop();

	nvtxRangePushA("scale phase");
	for (int k = 0; k < 5; k++)
		scale<<<dim3(64, 4, 1), dim3(128, 2, 1), 1024, b>>>(z, 2.0f);
	nvtxRangePop();
	/* Bookkeeping calls, left out of the trace by default (--cuda-api-exclude). */
	CHECK(cudaGetDevice(&device));
	CHECK(cudaGetLastError());

	CHECK(cudaStreamBeginCapture(b, cudaStreamCaptureModeGlobal));
	bump<<<16, 64, 0, b>>>(z);
	bump<<<16, 64, 0, b>>>(z);
	CHECK(cudaStreamEndCapture(b, &graph));
	CHECK(cudaGraphInstantiate(&exec, graph, 0));
	for (int k = 0; k < 3; k++)
		CHECK(cudaGraphLaunch(exec, b));
	CHECK(cudaDeviceSynchronize());

	CHECK(cudaMemcpy(hy, y, N * sizeof(float), cudaMemcpyDeviceToHost));
	nvtxMarkA("checkpoint");
	if (hy[0] != 2.0f + 10 * 0.5f) {
		fprintf(stderr, "wrong result %f\n", hy[0]);
		return 1;
	}
	CHECK(cudaGraphExecDestroy(exec));
	CHECK(cudaGraphDestroy(graph));
	CHECK(cudaFree(x));
	CHECK(cudaFree(y));
	CHECK(cudaFree(z));
	CHECK(cudaStreamDestroy(a));
	CHECK(cudaStreamDestroy(b));
	free(hx);
	free(hy);
	printf("cuda_workload ok\n");
	return 0;
}
