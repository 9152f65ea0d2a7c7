/* SPDX-License-Identifier: MIT */
/*
 * CUDA in a process that syscope attached to while it ran CUDA already: the runtime
 * (runtime/attach_cuda.c) loads this library and calls syscope_cuda_attach. CUPTI is
 * subscribed and its activity kinds enabled after the fact, which CUPTI allows for contexts
 * that exist: kernels, copies and API calls from then on are recorded. The devices of the
 * contexts in use are recorded as agents first (their creation was missed).
 *
 * The detach is the runtime's stop hook (the detach, or the process's end while attached):
 * every kind disabled, the buffers flushed into the recording while it still takes records,
 * the callbacks and the subscriber gone. CUPTI stays loaded and idle in the process; a later
 * attach subscribes again.
 */
#include "activity.h"
#include "api_trace.h"
#include "counters.h"

#include <cuda.h>
#include <stdatomic.h>

#include "../../common/settings.h"

static atomic_int attached;

static const CUpti_ActivityKind kinds[] = {
	CUPTI_ACTIVITY_KIND_RUNTIME,
	CUPTI_ACTIVITY_KIND_DRIVER,
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMCPY2,
	CUPTI_ACTIVITY_KIND_MEMSET,
	CUPTI_ACTIVITY_KIND_MEMORY2,
	CUPTI_ACTIVITY_KIND_GRAPH_TRACE,
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
	CUPTI_ACTIVITY_KIND_OVERHEAD,
	CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER,
};

/* The devices whose primary context is active (those a runtime-API program uses). Retaining
 * an active primary context only counts one more user of it; released at once. */
static void record_devices(void)
{
	int n = 0;

	if (cuDeviceGetCount(&n) != CUDA_SUCCESS)
		return;
	for (int i = 0; i < n; i++) {
		unsigned flags = 0;
		int active = 0;
		CUdevice dev;
		CUcontext ctx;

		if (cuDeviceGet(&dev, i) != CUDA_SUCCESS ||
		    cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active ||
		    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS)
			continue;
		cuda_api_record_agent(ctx);
		cuDevicePrimaryCtxRelease(dev);
	}
}

static void detach(void)
{
	uint64_t dropped;

	if (!atomic_exchange(&attached, 0))
		return;
	cuda_range_stop();
	cuda_pm_stop();
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		cuptiActivityDisable(kinds[i]); /* one never enabled answers an error: no matter */
	cuptiActivityFlushPeriod(0);
	cuda_flush(true);
	cuda_api_stop();
	cuda_api_unsubscribe();
	cuda_activity_forget_names();
	if ((dropped = cuda_activity_dropped()))
		cuda_note(SC_NOTE_WARN, "CUPTI dropped %llu activity records (buffers full)",
			  (unsigned long long)dropped);
}

static void CUPTIAPI no_callback(void *data, CUpti_CallbackDomain domain, CUpti_CallbackId id,
				 const void *info)
{
	(void)data, (void)domain, (void)id, (void)info;
}

/*
 * Another CUPTI client (torch.profiler's kineto, a debugger): told before anything of
 * CUPTI's that is the whole process's (the thread id type, the timestamp callback) is set
 * under it. CUPTI takes one subscriber: a trial one, given back at once.
 */
static bool other_cupti_client(void)
{
	CUpti_SubscriberHandle trial;
	CUptiResult rc = cuptiSubscribe(&trial, no_callback, NULL);

	if (rc == CUPTI_SUCCESS)
		cuptiUnsubscribe(trial);
	return rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
}

__attribute__((visibility("default"))) int syscope_cuda_attach(const struct sc_plugin_api *api,
							       const struct sc_settings *s);

/* 0 when CUDA is traced from now on; -1 when not (a note said why); 1 when the driver is not
 * initialized yet (nothing touched: the program has not used CUDA so far, and CUPTI would
 * initialize it). */
__attribute__((visibility("default"))) int syscope_cuda_attach(const struct sc_plugin_api *api,
							       const struct sc_settings *s)
{
	int n = 0;

	if (!api || atomic_load(&attached))
		return -1;
	if (cuDeviceGetCount(&n) == CUDA_ERROR_NOT_INITIALIZED)
		return 1;
	cuda_api = api;
	if (other_cupti_client()) {
		cuda_note(SC_NOTE_WARN,
			  "CUDA tracing off: another CUPTI client (a profiler or "
			  "debugger) is already attached to this program; left alone");
		return -1;
	}
	record_devices(); /* before the subscriber: these calls are syscope's, not traced */
	if (!cuda_trace_start(s))
		return -1;
	atomic_store(&attached, 1);
	if (api->at_stop(detach)) {
		cuda_note(SC_NOTE_WARN, "CUDA tracing off: no room for its stop hook");
		detach();
		return -1;
	}
	return 0;
}
