// SPDX-License-Identifier: MIT
// CHECK(call): a CUDA runtime call that must succeed; on failure the fixture says which call
// and why, and exits with 2.
#ifndef SYSCOPE_TESTS_CUDA_CHECK_H
#define SYSCOPE_TESTS_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                 \
	do {                                                                        \
		cudaError_t e_ = (call);                                            \
		if (e_ != cudaSuccess) {                                            \
			fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); \
			exit(2);                                                    \
		}                                                                   \
	} while (0)

#endif
