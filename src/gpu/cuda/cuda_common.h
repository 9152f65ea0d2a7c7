/* SPDX-License-Identifier: MIT */
/*
 * libsyscope-cuda.so: CUDA tracing through CUPTI, loaded by the CUDA driver during cuInit
 * (CUDA_INJECTION64_PATH, set by the launcher) into programs that libsyscope.so records.
 * Its files, each depending only on those below it:
 *
 *   inject.c       InitializeInjection (and NVTX's): settings, CUPTI set-up, the stop hook
 *   api_trace.c    CUPTI callbacks on the calling thread: devices as agents, flushes at
 *                  context teardown, NVTX dispatch
 *   callsite.c     launch and copy callbacks: the Python stack of each (Python processes)
 *   nvtx.c         NVTX callbacks: ranges, marks, registered strings, domains, names
 *   activity.c     CUPTI activity buffers: API calls as whole regions of their thread;
 *                  kernels, copies, sets, allocations as GPU ops
 *   activity_pool.c  the buffers themselves, handed to CUPTI zeroed and reused
 *   api_names.c    the runtime and driver API function names, and which of them are traced
 *   static_runtime.c  a program with the runtime linked in, known when CUDA starts
 *   cuda_common.c  the plugin table, notes, CUPTI's error texts, flushing
 *
 * Everything is written through libsyscope.so's plugin table (runtime/plugin.h) in the
 * records of store/format.h, stamped with syscope's clock (CUPTI is given it as its
 * timestamp source).
 */
#ifndef SYSCOPE_GPU_CUDA_COMMON_H
#define SYSCOPE_GPU_CUDA_COMMON_H

#include <cupti.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../runtime/plugin.h"

/* What to trace: the tokens of SYSCOPE_CUDA_DOMAINS. */
enum cuda_domain {
	CUDA_DOM_RUNTIME = 1u << 0,
	CUDA_DOM_DRIVER = 1u << 1,
	CUDA_DOM_KERNEL = 1u << 2,
	CUDA_DOM_MEMORY = 1u << 3,
	CUDA_DOM_NVTX = 1u << 4,
	CUDA_DOM_SYNC = 1u << 5,
	CUDA_DOM_UVM = 1u << 6,
	CUDA_DOM_GRAPH = 1u << 7,
	CUDA_DOM_OVERHEAD = 1u << 8,
	/* Not tokens: how the runtime domain is recorded (api_trace.c chooses). */
	CUDA_DOM_DRIVER_WORK = 1u << 9, /* the driver calls that start GPU work or allocate */
	CUDA_DOM_DRIVER_OWN = 1u << 10, /* driver calls inside a runtime call left out */
};

#define CUDA_CATEGORY_RUNTIME "CUDA_RUNTIME_API"
#define CUDA_CATEGORY_DRIVER "CUDA_DRIVER_API"
#define CUDA_CATEGORY_NVTX "MARKER_CORE_API"
#define CUDA_CATEGORY_SYNC "CUDA_SYNCHRONIZATION"
#define CUDA_CATEGORY_OVERHEAD "PROFILER_OVERHEAD"

extern const struct sc_plugin_api *cuda_api; /* set once by InitializeInjection */

/* A note through the runtime, printf-style. */
__attribute__((format(printf, 2, 3))) void cuda_note(enum sc_note_level level, const char *fmt,
						     ...);
/* CUPTI's text for an error. */
const char *cuda_error(CUptiResult rc);
struct sc_settings;
/* CUPTI subscribed and activity enabled as the settings ask (inject.c); false when off (a
 * note says why). attach.c calls it in a process that runs CUDA already. */
bool cuda_trace_start(const struct sc_settings *s);
/* Flush every activity buffer CUPTI holds (forced: also incomplete ones). */
void cuda_flush(bool forced);

#endif /* SYSCOPE_GPU_CUDA_COMMON_H */
