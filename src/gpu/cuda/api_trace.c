/* SPDX-License-Identifier: MIT */
/*
 * CUDA API calls and CUPTI callbacks:
 *   - the names of the runtime and driver API functions, and which of them are traced
 *     (include/exclude regexes); the calls themselves come as CUPTI activity records
 *     (activity.c writes them as regions of their thread), which costs the calling thread
 *     far less than a callback at each entry and exit;
 *   - the driver's calls are traced when asked for, or when the program drives CUDA through
 *     the driver API only (a program that uses the runtime would show its every driver call);
 *   - NVTX callbacks go to nvtx.c;
 *   - a new context records its device as an agent; a context about to be destroyed has its
 *     activity flushed first.
 */
#include "cuda_trace.h"

#include <cuda.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 1024

struct api_table {
	CUpti_CallbackDomain domain;
	unsigned size;
	char **names; /* without CUPTI's _vNNNN suffix */
	bool *traced;
};

static CUpti_SubscriberHandle subscriber;
static struct api_table runtime_table = { .domain = CUPTI_CB_DOMAIN_RUNTIME_API,
					  .size = CUPTI_RUNTIME_TRACE_CBID_SIZE };
static struct api_table driver_table = { .domain = CUPTI_CB_DOMAIN_DRIVER_API,
					 .size = CUPTI_DRIVER_TRACE_CBID_SIZE };
static _Atomic unsigned char agent_seen[MAX_DEVICES];

static __thread int in_tool; /* our own CUDA calls: not traced */

/* ---- API function names ---- */

const char *cuda_api_traced_name(bool runtime, uint32_t cbid)
{
	const struct api_table *tab = runtime ? &runtime_table : &driver_table;

	return tab->traced && cbid < tab->size && tab->traced[cbid] ? tab->names[cbid] : NULL;
}

/* ---- devices ---- */

static void record_agent(CUcontext ctx)
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
			record_agent(d->context);
		cuda_activity_context_created();
		break;
	case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
		in_tool++;
		cuda_flush(true); /* its records must be out before the context goes */
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
	default:
		break;
	}
}

/* ---- set-up ---- */

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel"; "cuMemAlloc_v2" stays (a real name). */
static char *display_name(const char *name)
{
	const char *v = strrchr(name, '_');
	size_t len = strlen(name);

	if (v && v[1] == 'v' && strlen(v + 2) >= 4 && strspn(v + 2, "0123456789") == strlen(v + 2))
		len = (size_t)(v - name);
	return strndup(name, len);
}

static bool compile(regex_t *re, const char *pattern, const char *setting)
{
	char err[200];
	int rc;

	if (!pattern || !*pattern)
		return false;
	rc = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
	if (!rc)
		return true;
	regerror(rc, re, err, sizeof(err));
	cuda_note(SC_NOTE_WARN, "SYSCOPE_%s '%s' is not a valid regular expression (%s): ignored",
		  setting, pattern, err);
	return false;
}

static bool table_init(struct api_table *tab, regex_t *inc, regex_t *exc)
{
	tab->names = calloc(tab->size, sizeof(*tab->names));
	tab->traced = calloc(tab->size, sizeof(*tab->traced));
	if (!tab->names || !tab->traced)
		return false;
	for (unsigned id = 1; id < tab->size; id++) {
		const char *name = NULL;

		if (cuptiGetCallbackName(tab->domain, id, &name) != CUPTI_SUCCESS || !name)
			continue;
		tab->names[id] = display_name(name);
		if (!tab->names[id])
			continue;
		tab->traced[id] = (!inc || !regexec(inc, tab->names[id], 0, NULL, 0)) &&
				  (!exc || regexec(exc, tab->names[id], 0, NULL, 0));
	}
	return true;
}

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
 * loaded, or when cuInit was reached through the driver entry points the runtime uses to find
 * the driver (a statically linked runtime). Otherwise this is a driver-API program, and its
 * driver calls are what it calls.
 */
static bool runtime_starts_cuda(void)
{
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
	regex_t inc, exc;
	bool has_inc = compile(&inc, include_re, "CUDA_API_INCLUDE");
	bool has_exc = compile(&exc, exclude_re, "CUDA_API_EXCLUDE");
	bool ok = table_init(&runtime_table, has_inc ? &inc : NULL, has_exc ? &exc : NULL) &&
		  table_init(&driver_table, has_inc ? &inc : NULL, has_exc ? &exc : NULL);
	CUptiResult rc;

	if (has_inc)
		regfree(&inc);
	if (has_exc)
		regfree(&exc);
	if (!ok)
		return CUPTI_ERROR_OUT_OF_MEMORY;
	/* A driver-API program: what the runtime domain means for it is its driver calls. */
	if ((*want & CUDA_DOM_RUNTIME) && !runtime_starts_cuda())
		*want |= CUDA_DOM_DRIVER;
	rc = cuptiSubscribe(&subscriber, on_callback, NULL);
	if (rc != CUPTI_SUCCESS)
		return rc;
	cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
	atomic_store(&nvtx_wanted, (*want & CUDA_DOM_NVTX) != 0);
	enable_nvtx_once();
	return CUPTI_SUCCESS;
}

/* CUPTI records no activity for the functions the include/exclude regexes leave out: each
 * record costs the calling thread, and PyTorch calls cudaGetDevice six times per op. */
static unsigned untrace(const struct api_table *tab, CUptiResult (*set)(CUpti_CallbackId, uint8_t))
{
	unsigned n = 0;

	for (unsigned id = 1; tab->traced && id < tab->size; id++)
		if (tab->names[id] && !tab->traced[id] && set(id, 0) == CUPTI_SUCCESS)
			n++;
	return n;
}

void cuda_api_untrace_excluded(unsigned domains)
{
	unsigned n = 0;

	if (domains & CUDA_DOM_RUNTIME)
		n += untrace(&runtime_table, cuptiActivityEnableRuntimeApi);
	if (domains & CUDA_DOM_DRIVER)
		n += untrace(&driver_table, cuptiActivityEnableDriverApi);
	if (n)
		cuda_note(SC_NOTE_INFO,
			  "CUDA tracing: %u API functions left out by "
			  "--cuda-api-include/--cuda-api-exclude are not recorded",
			  n);
}

void cuda_api_stop(void)
{
	if (subscriber)
		cuptiEnableAllDomains(0, subscriber);
}
