// SPDX-License-Identifier: MIT
// GPU counters fixture (tests/integration/test_cuda_counters.py): a copy kernel that reads and
// writes 256 MiB each time (three launches), then a compute kernel with no memory traffic
// that keeps every SM busy (three launches). With an argument N, the pair repeats for about
// N milliseconds instead (PM sampling over time). Prints what it moved.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cuda_check.h"

#define COPY_BYTES (256ull << 20)

__global__ void copy_kernel(const float4 *__restrict__ in, float4 *__restrict__ out, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		out[i] = in[i];
}

__global__ void compute_kernel(float *out, int iters)
{
	float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f, d = blockIdx.x * 1e-4f;

	for (int i = 0; i < iters; i++) {
		a = a * b + c;
		d = d * c + b;
		b = b * a + d;
		c = c * d + a;
	}
	if (a + b + c + d == 12345.0f) // never: keeps the loop
		out[0] = a;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double run_ms = argc > 1 ? atof(argv[1]) : 0;
	size_t n = COPY_BYTES / sizeof(float4);
	float4 *in, *out;
	float *f;
	int sms = 0, rounds = 0;
	double t0;

	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	CHECK(cudaMalloc(&in, COPY_BYTES));
	CHECK(cudaMalloc(&out, COPY_BYTES));
	CHECK(cudaMalloc(&f, 4096));
	CHECK(cudaMemset(in, 1, COPY_BYTES));
	CHECK(cudaDeviceSynchronize());
	t0 = now_ms();
	do {
		for (int i = 0; i < 3; i++)
			copy_kernel<<<sms * 8, 512>>>(in, out, n);
		for (int i = 0; i < 3; i++)
			compute_kernel<<<sms * 16, 256>>>(f, 20000);
		CHECK(cudaGetLastError());
		CHECK(cudaDeviceSynchronize());
		rounds++;
	} while (now_ms() - t0 < run_ms);
	printf("counter_kernels ok: %d rounds, %llu bytes read and written per copy\n", rounds,
	       COPY_BYTES);
	return 0;
}
