/* SPDX-License-Identifier: MIT */
/*
 * The launch-site callbacks of libsyscope-cuda.so (callsite.c), without a GPU: which CUDA
 * functions get a callback (CUPTI's own names, its enabling replaced here), that nothing is
 * enabled when libsyscope.so reads no Python stacks or predates the entry, and which calls
 * record their caller's stack: a runtime launch, not the driver call it makes, a driver
 * launch of its own (cuBLAS, Triton).
 */
#include <stddef.h>
#include <stdio.h>

#include "check.h"
#include "gpu/cuda/callsite.h"

const struct sc_plugin_api *cuda_api;

static bool enabled_runtime[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static bool enabled_driver[CUPTI_DRIVER_TRACE_CBID_SIZE];
static unsigned nenabled;

/* Stands in for CUPTI's (a subscriber needs a driver): remembers what was enabled. */
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
					 CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	(void)subscriber;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
		enabled_runtime[cbid] = enable;
	else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
		enabled_driver[cbid] = enable;
	nenabled++;
	return CUPTI_SUCCESS;
}

void cuda_note(enum sc_note_level level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

static bool python_on;
static uint64_t recorded[16];
static unsigned nrecorded;

static bool fake_active(void)
{
	return true;
}
static bool fake_callsites_on(void)
{
	return python_on;
}
static int fake_callsite(uint64_t corr)
{
	recorded[nrecorded++ % 16] = corr;
	return 0;
}

static void call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
		 uint32_t corr)
{
	CUpti_CallbackData d = { .callbackSite = site, .correlationId = corr };

	cuda_callsite_callback(domain, cbid, &d);
}

int main(void)
{
	struct sc_plugin_api api = { .abi = SC_PLUGIN_ABI,
				     .size = sizeof(api),
				     .active = fake_active,
				     .py_callsites_on = fake_callsites_on,
				     .py_callsite = fake_callsite };
	const CUpti_CallbackDomain RT = CUPTI_CB_DOMAIN_RUNTIME_API,
				   DRV = CUPTI_CB_DOMAIN_DRIVER_API;

	cuda_api = &api;
	/* No Python stacks in this process, or a runtime without the entry, or
	 * --no-cuda-python-stacks: no callback. */
	cuda_callsite_start(NULL);
	CHECK(nenabled == 0);
	python_on = true;
	cuda_callsite_want(false);
	cuda_callsite_start(NULL);
	CHECK(nenabled == 0);
	cuda_callsite_want(true);
	api.size = offsetof(struct sc_plugin_api, py_callsites_on);
	cuda_callsite_start(NULL);
	CHECK(nenabled == 0);
	api.size = sizeof(api);
	cuda_callsite_start(NULL);

	CHECK(enabled_runtime[CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000]);
	CHECK(enabled_runtime[CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060]);
	CHECK(enabled_runtime[CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020]);
	CHECK(enabled_runtime[CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020]);
	CHECK(enabled_runtime[CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000]);
	CHECK(enabled_driver[CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel]);
	CHECK(enabled_driver[CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx]);
	CHECK(enabled_driver[CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2]);
	/* Calls that start no device work are left alone. */
	CHECK(!enabled_runtime[CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020]);
	CHECK(!enabled_runtime[CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020]);
	CHECK(!enabled_runtime[CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000]);
	CHECK(!enabled_driver[CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc]);
	CHECK(!enabled_driver[CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2]);
	CHECK(nenabled > 20 && nenabled < 400);

	/* cudaLaunchKernel (corr 10) and the cuLaunchKernel it makes (11): one stack, the
	 * runtime call's, whose id its kernels carry. */
	call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_ENTER, 10);
	call(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 11);
	call(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, 11);
	call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_EXIT, 10);
	CHECK(nrecorded == 1 && recorded[0] == 10);
	/* A driver launch of its own (corr 12); a call not enabled records nothing (13); an
	 * exit without its entry (callbacks enabled during the call) leaves the count alone. */
	call(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 12);
	call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_API_ENTER, 13);
	call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, CUPTI_API_EXIT, 14);
	call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CUPTI_API_ENTER, 15);
	CHECK(nrecorded == 3 && recorded[1] == 12 && recorded[2] == 15);
	/* Ids outside CUPTI's tables are ignored. */
	call(RT, CUPTI_RUNTIME_TRACE_CBID_SIZE + 5, CUPTI_API_ENTER, 16);
	CHECK(nrecorded == 3);

	printf("%d checks, %d failed\n", check_count, check_failures);
	return check_failures;
}
