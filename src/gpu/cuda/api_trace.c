/* SPDX-License-Identifier: MIT */
/*
 * CUPTI callbacks (the API calls themselves come as CUPTI activity records, which activity.c
 * writes as regions of their thread: far cheaper for the calling thread than a callback at
 * each entry and exit):
 *   - the driver's calls are traced when asked for; otherwise those that start GPU work or
 *     allocate (every one where the runtime is not a library of its own), and those made
 *     inside runtime calls are left out (driver_calls.c);
 *   - NVTX callbacks go to nvtx.c;
 *   - in a process that reads Python stacks, the launch and copy functions' callbacks go to
 *     callsite.c (the Python line behind each kernel);
 *   - a new context records its device as an agent; a context about to be destroyed has its
 *     activity flushed first.
 */
#include "api_trace.h"

#include "activity.h"
#include "api_names.h"
#include "callsite.h"
#include "counters.h"
#include "nvtx.h"
#include "static_runtime.h"

#include <cuda.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 1024

static CUpti_SubscriberHandle subscriber;
static _Atomic unsigned char agent_seen[MAX_DEVICES];

static __thread int in_tool; /* our own CUDA calls: not traced */

/* ---- devices ---- */

void cuda_api_record_agent(CUcontext ctx)
{
	struct sc_rec_gpu_agent a = { .ts = cuda_api->now_ns(), .type = SC_AGENT_GPU };
	char text[300];
	uint32_t id = 0;
	CUdevice dev;
	CUuuid uuid;
	size_t mem = 0;
	int v = 0;

	if (cuptiGetDeviceId(ctx, &id) != CUPTI_SUCCESS || id >= MAX_DEVICES ||
	    atomic_exchange(&agent_seen[id], 1))
		return;
	in_tool++;
	if (cuDeviceGet(&dev, (int)id) == CUDA_SUCCESS) {
		a.id = id;
		if (cuDeviceGetName(text, 256, dev) != CUDA_SUCCESS)
			snprintf(text, 256, "CUDA device %u", id);
		text[255] = '\0';
		if (cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS)
			memcpy(a.uuid, uuid.bytes, sizeof(a.uuid));
		if (cuDeviceTotalMem(&mem, dev) == CUDA_SUCCESS)
			a.memory_bytes = mem;
#define ATTR(field, attr)                                                  \
	if (cuDeviceGetAttribute(&v, attr, dev) == CUDA_SUCCESS && v >= 0) \
		a.field = (uint32_t)v;
		ATTR(multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
		ATTR(compute_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
		ATTR(compute_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
		ATTR(pci_domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)
		ATTR(pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)
		ATTR(pci_device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)
#undef ATTR
		a.name_len = (uint32_t)strlen(text) + 1;
		memcpy(text + a.name_len, "NVIDIA", 7);
		a.vendor_len = 7;
		cuda_api->record(SC_REC_GPU_AGENT, 0, &a.ts, sizeof(a) - sizeof(a.hdr), text,
				 a.name_len + a.vendor_len);
	}
	in_tool--;
}

static void resource(CUpti_CallbackId cbid, const CUpti_ResourceData *d)
{
	switch (cbid) {
	case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
		if (cuda_api->active())
			cuda_api_record_agent(d->context);
		cuda_activity_context_created();
		break;
	case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
		in_tool++;
		cuda_flush(true); /* its records must be out before the context goes */
		cuda_range_context_ending(d->context);
		in_tool--;
		break;
	default:
		break;
	}
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				 const void *data)
{
	(void)userdata;
	if (in_tool)
		return;
	switch (domain) {
	case CUPTI_CB_DOMAIN_NVTX:
		cuda_nvtx_callback(cbid, data);
		break;
	case CUPTI_CB_DOMAIN_RESOURCE:
		resource(cbid, data);
		break;
	case CUPTI_CB_DOMAIN_RUNTIME_API:
	case CUPTI_CB_DOMAIN_DRIVER_API:
		cuda_callsite_callback(domain, cbid, data);
		cuda_range_callback(domain, cbid, data);
		break;
	default:
		break;
	}
}

/* ---- set-up ---- */

static int find_runtime_library(struct dl_phdr_info *info, size_t size, void *found)
{
	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "libcudart")) {
		*(bool *)found = true;
		return 1;
	}
	return 0;
}

/*
 * Is the CUDA runtime initializing CUDA (we run inside cuInit)? It is when libcudart is
 * loaded, when cuInit was reached through the driver entry points the runtime uses to find
 * the driver, or from an object that nvcc built with the runtime linked in (static_runtime.c).
 * Otherwise this is a driver-API program, and its driver calls are what it calls.
 */
static bool runtime_starts_cuda(void)
{
	char file[512];
	void *pcs[64];
	bool found = false;
	int n;

	dl_iterate_phdr(find_runtime_library, &found);
	n = found ? 0 : backtrace(pcs, 64);
	for (int i = 0; i < n && !found; i++) {
		Dl_info di;

		if (dladdr(pcs[i], &di) && di.dli_sname &&
		    (!strcmp(di.dli_sname, "cuGetExportTable") ||
		     !strncmp(di.dli_sname, "cuGetProcAddress", 16)))
			found = true;
	}
	if (!found && n > 0 && cuda_static_runtime_starts(pcs, n, file, sizeof(file))) {
		cuda_note(SC_NOTE_INFO,
			  "CUDA tracing: the CUDA runtime is linked into %s: driver calls are "
			  "recorded where they start GPU work or allocate (all of them with the "
			  "driver domain)",
			  file);
		found = true;
	}
	return found;
}

/*
 * NVTX callbacks are enabled once the program has NVTX (its first NVTX call loads our NVTX
 * injection, before or after CUDA starts): an enabled NVTX domain costs every kernel launch
 * about 0.6 us on an H200 (measured), even in programs that never call NVTX.
 */
static atomic_bool nvtx_wanted, nvtx_loaded;

static void enable_nvtx_once(void)
{
	static atomic_flag once = ATOMIC_FLAG_INIT;

	if (atomic_load(&nvtx_wanted) && atomic_load(&nvtx_loaded) && subscriber &&
	    !atomic_flag_test_and_set(&once))
		cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_NVTX);
}

void cuda_api_nvtx_loaded(void)
{
	atomic_store(&nvtx_loaded, true);
	enable_nvtx_once();
}

CUptiResult cuda_api_start(unsigned *want, const char *include_re, const char *exclude_re)
{
	CUptiResult rc;

	if (!cuda_api_names_init(include_re, exclude_re))
		return CUPTI_ERROR_OUT_OF_MEMORY;
	/*
	 * Unless the driver domain is asked for, a driver call made inside a runtime call is the
	 * runtime's own and left out (driver_calls.c). Where the runtime is a library of its own,
	 * only the driver calls that start GPU work or allocate are recorded (libraries launch
	 * kernels and map memory through the driver: cuBLAS, NCCL). A driver-API program, or one
	 * with the runtime linked in statically: every driver call, those inside runtime calls
	 * left out.
	 */
	if ((*want & CUDA_DOM_RUNTIME) && !(*want & CUDA_DOM_DRIVER))
		*want |= CUDA_DOM_DRIVER_OWN |
			 (runtime_starts_cuda() ? CUDA_DOM_DRIVER_WORK : CUDA_DOM_DRIVER);
	rc = cuptiSubscribe(&subscriber, on_callback, NULL);
	if (rc != CUPTI_SUCCESS)
		return rc;
	cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
	cuda_callsite_start(subscriber); /* Python processes only */
	cuda_range_start(subscriber);	 /* --gpu-events only */
	atomic_store(&nvtx_wanted, (*want & CUDA_DOM_NVTX) != 0);
	enable_nvtx_once();
	return CUPTI_SUCCESS;
}

void cuda_api_stop(void)
{
	if (subscriber)
		cuptiEnableAllDomains(0, subscriber);
}

/* attach.c's detach: a later attach subscribes again, in a new session (devices again). */
void cuda_api_unsubscribe(void)
{
	if (subscriber && cuptiUnsubscribe(subscriber) == CUPTI_SUCCESS)
		subscriber = NULL;
	for (unsigned i = 0; i < MAX_DEVICES; i++)
		atomic_store(&agent_seen[i], 0);
}
