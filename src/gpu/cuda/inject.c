/* SPDX-License-Identifier: MIT */
/*
 * Entry point of libsyscope-cuda.so. The CUDA driver loads the library named by
 * CUDA_INJECTION64_PATH during cuInit, in any program (runtime API, driver API, CUDA loaded
 * late by dlopen) and calls InitializeInjection. From there: find the syscope runtime of
 * this process, read the settings, give CUPTI syscope's clock, subscribe to callbacks and
 * enable activity kinds. At exit (our atexit handler, which runs before the CUDA runtime's
 * teardown, or the runtime's stop hook on _exit) the buffers are flushed.
 *
 * Whatever fails here costs the program nothing: a one-line note, and CUDA runs untraced.
 */
#include "activity.h"
#include "api_names.h"
#include "api_trace.h"
#include "callsite.h"
#include "counters.h"
#include "nvtx.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/settings.h"

static atomic_int stopped;

static uint64_t CUPTIAPI timestamp(void)
{
	return cuda_api->now_ns();
}

static void stop(void)
{
	uint64_t n;

	if (atomic_exchange(&stopped, 1))
		return;
	cuda_range_stop(); /* no new counter windows; the last launch's values are out */
	cuda_pm_stop();	   /* the last samples decoded */
	cuda_flush(true);
	cuda_activity_finish();
	cuda_api_stop();
	if ((n = cuda_activity_dropped()))
		cuda_note(SC_NOTE_WARN,
			  "CUPTI dropped %llu activity records (buffers full); raise "
			  "SYSCOPE_CUDA_BUFFER_KB or lower SYSCOPE_CUDA_FLUSH_PERIOD",
			  (unsigned long long)n);
	if ((n = cuda_nvtx_dropped()))
		cuda_note(SC_NOTE_WARN,
			  "%llu NVTX start/end ranges left out: more than 4096 were open at once",
			  (unsigned long long)n);
	if ((n = cuda_activity_unplaced()))
		cuda_note(SC_NOTE_INFO,
			  "%llu CUDA waits or overhead records named no host thread and are not "
			  "shown (trace the runtime or driver domain to place waits)",
			  (unsigned long long)n);
	if ((n = cuda_activity_stale_links()))
		cuda_note(SC_NOTE_INFO,
			  "%llu GPU allocations or frees carried the id of a CUDA call that had "
			  "ended (made by an untraced call): not linked to it",
			  (unsigned long long)n);
	if ((n = cuda_activity_static_allocations()))
		cuda_note(
			SC_NOTE_INFO,
			"%llu GPU allocations were module globals (__device__ variables the "
			"driver allocates when it loads a module): shown apart from the program's",
			(unsigned long long)n);
	if ((n = cuda_activity_untimed()))
		cuda_note(SC_NOTE_INFO, "%llu GPU activities had no timestamps and are not shown",
			  (unsigned long long)n);
}

static const struct {
	const char *token;
	unsigned bit;
} domain_tokens[] = {
	{ "runtime", CUDA_DOM_RUNTIME },   { "driver", CUDA_DOM_DRIVER },
	{ "kernel", CUDA_DOM_KERNEL },	   { "memory", CUDA_DOM_MEMORY },
	{ "nvtx", CUDA_DOM_NVTX },	   { "sync", CUDA_DOM_SYNC },
	{ "uvm", CUDA_DOM_UVM },	   { "graph", CUDA_DOM_GRAPH },
	{ "overhead", CUDA_DOM_OVERHEAD },
};

static unsigned read_domains(const struct sc_settings *s)
{
	unsigned bits = 0;

	for (size_t i = 0; i < sizeof(domain_tokens) / sizeof(domain_tokens[0]); i++)
		if (sc_list_has(s, SC_SET_CUDA_DOMAINS, domain_tokens[i].token))
			bits |= domain_tokens[i].bit;
	return bits;
}

/* CUPTI set up as the settings ask; false (a note says why) when tracing stays off. */
bool cuda_trace_start(const struct sc_settings *s)
{
	unsigned domains = read_domains(s);
	uint32_t version = 0;
	CUptiResult rc;
	double period = sc_double(s, SC_SET_CUDA_FLUSH_PERIOD);

	if (cuptiGetVersion(&version) != CUPTI_SUCCESS ||
	    version / 100 != CUPTI_API_VERSION / 100) {
		cuda_note(SC_NOTE_WARN,
			  "CUDA tracing off: the CUPTI library loaded is version %u, syscope was "
			  "built against %u (their records differ)",
			  version, (unsigned)CUPTI_API_VERSION);
		return false;
	}
	cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	rc = cuptiActivityRegisterTimestampCallback(timestamp);
	if (rc != CUPTI_SUCCESS)
		cuda_note(SC_NOTE_WARN, "CUPTI keeps its own clock (%s): GPU times may be offset",
			  cuda_error(rc));
	cuda_callsite_want(sc_bool(s, SC_SET_CUDA_PYTHON_STACKS));
	cuda_counters_parse(sc_str(s, SC_SET_GPU_EVENTS),
			    sc_double(s, SC_SET_GPU_EVENTS_INTERVAL) / 1e3);
	rc = cuda_api_start(&domains, sc_str(s, SC_SET_CUDA_API_INCLUDE),
			    sc_str(s, SC_SET_CUDA_API_EXCLUDE));
	if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		cuda_note(SC_NOTE_WARN, "CUDA tracing off: another CUPTI client (a profiler or "
					"debugger) is already attached to this program");
		return false;
	}
	if (rc != CUPTI_SUCCESS) {
		cuda_note(SC_NOTE_WARN, "CUDA tracing off: CUPTI callbacks failed: %s",
			  cuda_error(rc));
		return false;
	}
	/* A kind that cannot be enabled is named in a note there; the others carry on. */
	cuda_activity_start(domains, (size_t)sc_int(s, SC_SET_CUDA_BUFFER_KB) << 10);
	cuda_api_untrace_excluded(domains);
	if (period > 0)
		cuptiActivityFlushPeriod((uint32_t)(period * 1000 + 0.5));
	cuda_note(SC_NOTE_INFO, "CUDA tracing through CUPTI %u: %s", version,
		  sc_str(s, SC_SET_CUDA_DOMAINS));
	return true;
}

static void start(const struct sc_settings *s)
{
	if (!cuda_trace_start(s))
		return;
	cuda_api->at_stop(stop);
	atexit(stop);
}

/*
 * NVTX loads the library NVTX_INJECTION64_PATH names (the launcher names this one) at the
 * program's first NVTX call, before or after CUDA starts, and calls this. CUPTI implements
 * NVTX injection; forward to the libcupti this library uses, so that NVTX and our subscriber
 * meet in one CUPTI even when the program brings its own libcupti (PyTorch does).
 */
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(void *get_export_table);
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(void *get_export_table)
{
	int (*cupti_init)(void *) = NULL;
	Dl_info di;
	int rc;
	void *cupti;

	if (cuda_nvtx_inject(get_export_table))
		return 1;
	if (!dladdr((void *)cuptiSubscribe, &di) || !di.dli_fname)
		return 0;
	cupti = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	if (cupti)
		*(void **)&cupti_init = dlsym(cupti, "InitializeInjectionNvtx2");
	if (!cupti_init)
		return 0;
	rc = cupti_init(get_export_table);
	cuda_api_nvtx_loaded();
	return rc;
}

/* Called by the CUDA driver during cuInit. 1 = success. Exported: the driver looks it up. */
__attribute__((visibility("default"))) int InitializeInjection(void);
__attribute__((visibility("default"))) int InitializeInjection(void)
{
	sc_plugin_api_fn get = (sc_plugin_api_fn)dlsym(RTLD_DEFAULT, SC_PLUGIN_API_SYMBOL);
	struct sc_settings s;
	char err[SC_ERRMSG_MAX];

	cuda_api = get ? get(SC_PLUGIN_ABI) : NULL;
	if (!cuda_api)
		return 1; /* no syscope runtime recording this process: nothing to do */
	if (sc_settings_init(&s))
		return 1;
	sc_settings_load_env(&s, NULL, err); /* bad values were reported by the runtime */
	if (sc_bool(&s, SC_SET_USE_CUDA))
		start(&s);
	sc_settings_free(&s);
	return 1;
}
