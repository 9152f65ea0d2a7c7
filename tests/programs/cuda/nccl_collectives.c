// SPDX-License-Identifier: MIT
/*
 * NCCL collectives of known sizes on communicators of NRANKS ranks in one process
 * (ncclCommInitAll over GPU 0, repeated when the machine has fewer GPUs; NCCL may refuse
 * two ranks on one GPU, and then says why). Usage: nccl_collectives [NRANKS]
 *
 *   3 x ncclAllReduce   1 Mi float32, sum      2 x ncclBroadcast  64 Ki float64, root 0
 *   1 x ncclAllGather   256 Ki float16 a rank  1 x ncclReduceScatter 128 Ki float32 a rank
 *   with 2 ranks or more: one ncclSend/ncclRecv ring of 1000 int32 in a group
 *
 * Each call is printed as "call KIND COUNT BYTES" once (for rank 0).
 */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_check.h"

#define NCHECK(call)                                                                \
	do {                                                                        \
		ncclResult_t r_ = (call);                                           \
		if (r_ != ncclSuccess) {                                            \
			fprintf(stderr, "%s: %s\n", #call, ncclGetErrorString(r_)); \
			exit(3);                                                    \
		}                                                                   \
	} while (0)

#define MAX_RANKS 8

static int n;
static ncclComm_t comms[MAX_RANKS];
static cudaStream_t streams[MAX_RANKS];
static void *a[MAX_RANKS], *b[MAX_RANKS];
static int devs[MAX_RANKS];

static void sync_all(void)
{
	for (int r = 0; r < n; r++) {
		CHECK(cudaSetDevice(devs[r]));
		CHECK(cudaStreamSynchronize(streams[r]));
	}
}

int main(int argc, char **argv)
{
	int ngpus = 0, version = 0;
	size_t big = (size_t)8 << 20;

	n = argc > 1 ? atoi(argv[1]) : 1;
	if (n < 1 || n > MAX_RANKS)
		n = 1;
	CHECK(cudaGetDeviceCount(&ngpus));
	for (int r = 0; r < n; r++)
		devs[r] = r % (ngpus > 0 ? ngpus : 1);
	NCHECK(ncclGetVersion(&version));
	printf("nccl version %d ranks %d gpus %d\n", version, n, ngpus);
	NCHECK(ncclCommInitAll(comms, n, devs));
	for (int r = 0; r < n; r++) {
		CHECK(cudaSetDevice(devs[r]));
		CHECK(cudaStreamCreate(&streams[r]));
		CHECK(cudaMalloc(&a[r], big * n));
		CHECK(cudaMalloc(&b[r], big * n));
	}
	for (int i = 0; i < 3; i++) {
		NCHECK(ncclGroupStart());
		for (int r = 0; r < n; r++)
			NCHECK(ncclAllReduce(a[r], b[r], 1 << 20, ncclFloat32, ncclSum, comms[r],
					     streams[r]));
		NCHECK(ncclGroupEnd());
		printf("call AllReduce %d %d\n", 1 << 20, 4 << 20);
	}
	for (int i = 0; i < 2; i++) {
		NCHECK(ncclGroupStart());
		for (int r = 0; r < n; r++)
			NCHECK(ncclBroadcast(a[r], b[r], 1 << 16, ncclFloat64, 0, comms[r],
					     streams[r]));
		NCHECK(ncclGroupEnd());
		printf("call Broadcast %d %d\n", 1 << 16, 8 << 16);
	}
	NCHECK(ncclGroupStart());
	for (int r = 0; r < n; r++)
		NCHECK(ncclAllGather(a[r], b[r], 1 << 18, ncclFloat16, comms[r], streams[r]));
	NCHECK(ncclGroupEnd());
	printf("call AllGather %d %d\n", 1 << 18, 2 << 18);
	NCHECK(ncclGroupStart());
	for (int r = 0; r < n; r++)
		NCHECK(ncclReduceScatter(a[r], b[r], 1 << 17, ncclFloat32, ncclSum, comms[r],
					 streams[r]));
	NCHECK(ncclGroupEnd());
	printf("call ReduceScatter %d %d\n", 1 << 17, 4 << 17);
	if (n > 1) {
		NCHECK(ncclGroupStart());
		for (int r = 0; r < n; r++) {
			NCHECK(ncclSend(a[r], 1000, ncclInt32, (r + 1) % n, comms[r], streams[r]));
			NCHECK(ncclRecv(b[r], 1000, ncclInt32, (r + n - 1) % n, comms[r],
					streams[r]));
		}
		NCHECK(ncclGroupEnd());
		printf("call Send 1000 4000\ncall Recv 1000 4000\n");
	}
	sync_all();
	for (int r = 0; r < n; r++)
		NCHECK(ncclCommDestroy(comms[r]));
	printf("done\n");
	return 0;
}
