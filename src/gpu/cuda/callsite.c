/* SPDX-License-Identifier: MIT */
/*
 * The Python line behind GPU work (issue 15): a CUPTI callback on the CUDA functions that
 * start device work (kernel launches, copies, sets, graph launches; runtime and driver API)
 * records, at the call's entry, the calling thread's Python stack under the call's
 * correlation id (PY_CALLSITE, through libsyscope.so's runtime/python/callsite.c). The reader
 * joins it to the GPU ops by that id.
 *
 * Only in processes that read Python stacks, and unless --no-cuda-python-stacks: no callback
 * is enabled otherwise, so a C program's launches cost what they did. A driver call made by
 * a runtime call that was recorded already is skipped (its work carries the runtime call's
 * correlation id).
 */
#include "callsite.h"

#include <stddef.h>
#include <string.h>

static bool runtime_site[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static bool driver_site[CUPTI_DRIVER_TRACE_CBID_SIZE];
static __thread unsigned in_runtime_launch; /* inside a recorded runtime call */
static bool wanted = true;

void cuda_callsite_want(bool on)
{
	wanted = on;
}

static bool starts_work(const char *name, bool runtime)
{
	static const char *const runtime_prefixes[] = { "cudaLaunch", "cudaMemcpy", "cudaMemset",
							"cudaGraphLaunch" };
	static const char *const driver_prefixes[] = { "cuLaunch", "cuMemcpy", "cuMemset",
						       "cuGraphLaunch" };
	const char *const *p = runtime ? runtime_prefixes : driver_prefixes;

	if (strstr(name, "HostFunc"))
		return false; /* cudaLaunchHostFunc runs on the host: no device time */
	for (unsigned i = 0; i < 4; i++)
		if (!strncmp(name, p[i], strlen(p[i])))
			return true;
	return false;
}

/* Enable the callbacks of one domain's work-starting functions; how many. */
static unsigned enable_domain(CUpti_SubscriberHandle sub, CUpti_CallbackDomain domain, bool *site,
			      unsigned size)
{
	unsigned n = 0;

	for (unsigned cbid = 1; cbid < size; cbid++) {
		const char *name = NULL;

		if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name ||
		    !starts_work(name, domain == CUPTI_CB_DOMAIN_RUNTIME_API))
			continue;
		if (cuptiEnableCallback(1, sub, domain, cbid) == CUPTI_SUCCESS) {
			site[cbid] = true;
			n++;
		}
	}
	return n;
}

void cuda_callsite_start(CUpti_SubscriberHandle sub)
{
	unsigned n;

	if (!wanted ||
	    cuda_api->size < offsetof(struct sc_plugin_api, py_callsite) + sizeof(void *) ||
	    !cuda_api->py_callsites_on())
		return; /* an older runtime, or no Python stacks in this process */
	n = enable_domain(sub, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_site,
			  CUPTI_RUNTIME_TRACE_CBID_SIZE);
	n += enable_domain(sub, CUPTI_CB_DOMAIN_DRIVER_API, driver_site,
			   CUPTI_DRIVER_TRACE_CBID_SIZE);
	if (!n)
		cuda_note(SC_NOTE_WARN, "CUDA: no launch callbacks could be enabled: GPU work is "
					"not attributed to Python lines");
}

void cuda_callsite_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			    const CUpti_CallbackData *d)
{
	bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;

	if (runtime ? cbid >= CUPTI_RUNTIME_TRACE_CBID_SIZE || !runtime_site[cbid]
		    : cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE || !driver_site[cbid])
		return;
	if (d->callbackSite == CUPTI_API_EXIT) {
		if (runtime && in_runtime_launch)
			in_runtime_launch--;
		return;
	}
	if (runtime)
		in_runtime_launch++;
	else if (in_runtime_launch)
		return; /* the runtime call around it has its stack */
	if (cuda_api->active())
		cuda_api->py_callsite(d->correlationId);
}
