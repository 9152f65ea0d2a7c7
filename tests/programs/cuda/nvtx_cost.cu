// SPDX-License-Identifier: MIT
// The cost of NVTX ranges, each kind N times, timed by the program itself (test_gpu_more.py,
// bench/gpu-bench's nvtx series). One line per kind: "kind=NAME n=N ns_per_range=X".
//
//   push_a               nvtxRangePushA("push a") / nvtxRangePop
//   domain_push_ascii    nvtxDomainRangePushEx in domain "cost", ASCII "domain ascii" / Pop
//   domain_push_reg      the same with the registered string "domain registered"
//   domain_push_payload  registered "domain payload", uint64 payload and category 7
//   domain_start_end     nvtxDomainRangeStartEx / End, registered "domain start end"
//   start_end_a          nvtxRangeStartA("start end a") / nvtxRangeEnd
//   mark_a               nvtxMarkA("mark a") (a mark, not a range)
//   user_region          syscope_region_begin("user region") / end, for comparison
//   launch_after_nvtx    N empty-kernel launches after NVTX was used (ns per launch)
//
// Usage: nvtx_cost [N] [KIND]
#define SYSCOPE_WEAK
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscope/syscope.h>
#include <time.h>

__global__ void empty(void)
{
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static nvtxDomainHandle_t domain;

static nvtxEventAttributes_t attributes(const char *registered, bool payload)
{
	nvtxEventAttributes_t a;

	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = nvtxDomainRegisterStringA(domain, registered);
	if (payload) {
		a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
		a.payload.ullValue = 42;
		a.category = 7;
	}
	return a;
}

static void run(const char *kind, long n)
{
	nvtxEventAttributes_t a;
	double t0;

	if (!strcmp(kind, "push_a")) {
		t0 = now();
		for (long i = 0; i < n; i++) {
			nvtxRangePushA("push a");
			nvtxRangePop();
		}
	} else if (!strcmp(kind, "domain_push_ascii")) {
		memset(&a, 0, sizeof(a));
		a.version = NVTX_VERSION;
		a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
		a.messageType = NVTX_MESSAGE_TYPE_ASCII;
		a.message.ascii = "domain ascii";
		t0 = now();
		for (long i = 0; i < n; i++) {
			nvtxDomainRangePushEx(domain, &a);
			nvtxDomainRangePop(domain);
		}
	} else if (!strcmp(kind, "domain_push_reg") || !strcmp(kind, "domain_push_payload")) {
		bool payload = !strcmp(kind, "domain_push_payload");

		a = attributes(payload ? "domain payload" : "domain registered", payload);
		t0 = now();
		for (long i = 0; i < n; i++) {
			nvtxDomainRangePushEx(domain, &a);
			nvtxDomainRangePop(domain);
		}
	} else if (!strcmp(kind, "domain_start_end")) {
		a = attributes("domain start end", false);
		t0 = now();
		for (long i = 0; i < n; i++)
			nvtxDomainRangeEnd(domain, nvtxDomainRangeStartEx(domain, &a));
	} else if (!strcmp(kind, "start_end_a")) {
		t0 = now();
		for (long i = 0; i < n; i++)
			nvtxRangeEnd(nvtxRangeStartA("start end a"));
	} else if (!strcmp(kind, "mark_a")) {
		t0 = now();
		for (long i = 0; i < n; i++)
			nvtxMarkA("mark a");
	} else if (!strcmp(kind, "user_region")) {
		t0 = now();
		for (long i = 0; i < n; i++) {
			if (syscope_region_begin)
				syscope_region_begin("user region");
			if (syscope_region_end)
				syscope_region_end();
		}
	} else if (!strcmp(kind, "launch_after_nvtx")) {
		t0 = now();
		for (long i = 0; i < n; i++)
			empty<<<1, 1>>>();
		cudaDeviceSynchronize();
	} else {
		fprintf(stderr, "nvtx_cost: unknown kind %s\n", kind);
		exit(2);
	}
	printf("kind=%s n=%ld ns_per_range=%.1f\n", kind, n, (now() - t0) / (double)n);
}

int main(int argc, char **argv)
{
	static const char *const kinds[] = { "push_a",		 "domain_push_ascii",
					     "domain_push_reg",	 "domain_push_payload",
					     "domain_start_end", "start_end_a",
					     "mark_a",		 "user_region",
					     "launch_after_nvtx" };
	long n = argc > 1 ? atol(argv[1]) : 100000;

	if (cudaFree(0) != cudaSuccess) /* CUDA, and with it the tracer, first */
		return 2;
	domain = nvtxDomainCreateA("cost");
	empty<<<1, 1>>>(); /* the kernel's module loaded before anything is timed */
	cudaDeviceSynchronize();
	if (argc > 2) {
		run(argv[2], n);
		return 0;
	}
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		run(kinds[k], n);
	return 0;
}
