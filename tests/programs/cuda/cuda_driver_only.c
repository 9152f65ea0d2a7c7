/* SPDX-License-Identifier: MIT */
/*
 * A CUDA program that uses the driver API only (no libcudart), for test_cuda.py:
 * one context, one 64 KiB allocation, one host -> device copy, 4 launches of `triple`
 * (grid 64, block 256) from the module given as argv[1], one device -> host copy.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT (64 * 256)
#define CHECK(call)                                                         \
	do {                                                                \
		CUresult r_ = (call);                                       \
		if (r_ != CUDA_SUCCESS) {                                   \
			fprintf(stderr, "%s failed: %d\n", #call, (int)r_); \
			exit(2);                                            \
		}                                                           \
	} while (0)

int main(int argc, char **argv)
{
	static int host[COUNT];
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr buf;
	void *args[1] = { &buf };

	if (argc < 2) {
		fprintf(stderr, "usage: cuda_driver_only MODULE.fatbin\n");
		return 2;
	}
	for (int i = 0; i < COUNT; i++)
		host[i] = 1;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
	CHECK(cuModuleLoad(&mod, argv[1]));
	CHECK(cuModuleGetFunction(&fn, mod, "triple"));
	CHECK(cuMemAlloc(&buf, sizeof(host)));
	CHECK(cuMemcpyHtoD(buf, host, sizeof(host)));
	for (int k = 0; k < 4; k++)
		CHECK(cuLaunchKernel(fn, 64, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	CHECK(cuMemcpyDtoH(host, buf, sizeof(host)));
	if (host[0] != 81) {
		fprintf(stderr, "wrong result %d\n", host[0]);
		return 1;
	}
	CHECK(cuMemFree(buf));
	CHECK(cuModuleUnload(mod));
	CHECK(cuCtxDestroy(ctx));
	printf("cuda_driver_only ok\n");
	return 0;
}
