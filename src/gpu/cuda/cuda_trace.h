/* SPDX-License-Identifier: MIT */
/*
 * libsyscope-cuda.so: CUDA tracing through CUPTI, loaded by the CUDA driver during cuInit
 * (CUDA_INJECTION64_PATH, set by the launcher) into programs that libsyscope.so records.
 *
 *   inject.c     InitializeInjection (and NVTX's): settings, CUPTI set-up, the stop hook
 *   api_trace.c  API function names and filters; CUPTI callbacks on the calling thread:
 *                devices as agents, flushes at context teardown
 *   nvtx.c       NVTX callbacks: ranges, marks, registered strings, domains, names
 *   activity.c   CUPTI activity buffers: API calls as whole regions of their thread;
 *                kernels, copies, sets, allocations as GPU ops
 *
 * Everything is written through libsyscope.so's plugin table (runtime/plugin.h) in the
 * records of store/format.h, stamped with syscope's clock (CUPTI is given it as its
 * timestamp source).
 */
#ifndef SYSCOPE_GPU_CUDA_TRACE_H
#define SYSCOPE_GPU_CUDA_TRACE_H

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
};

extern const struct sc_plugin_api *cuda_api; /* set once by InitializeInjection */

/* ---- activity.c ---- */
/* Register the buffer callbacks and enable the activity kinds of `domains`. Returns 0 or the
 * CUPTI error of the first kind that could not be enabled (the others stay on). */
CUptiResult cuda_activity_start(unsigned domains, size_t buffer_bytes);
/* A CUDA context was created (kinds that need an initialized driver are enabled then). */
void cuda_activity_context_created(void);
/* Translate one activity record into syscope records (exposed for the unit test). */
void cuda_activity_translate(const CUpti_Activity *rec);
/* Process a completed buffer of `valid` bytes (exposed for the unit test). */
void cuda_activity_buffer(uint8_t *buffer, size_t valid);
/* The name and category of a region record into `buf` (`cap` bytes, a long name cut so
 * that both fit); sets r->name_len and r->cat_len, returns the bytes used. */
#define CUDA_REGION_TEXT_MAX 2048
uint32_t cuda_region_text(char *buf, size_t cap, const char *name, const char *category,
			  struct sc_rec_region *r);
/* The same with arguments after the category (sets r->nargs and r->args_len); arguments
 * that do not fit are left out. */
struct cuda_arg {
	char type; /* enum sc_arg_type */
	const char *name, *value;
};
uint32_t cuda_region_text_args(char *buf, size_t cap, const char *name, const char *category,
			       const struct cuda_arg *args, unsigned nargs,
			       struct sc_rec_region *r);
/* Records CUPTI dropped, and records it could not time (left out). */
uint64_t cuda_activity_dropped(void);
uint64_t cuda_activity_untimed(void);
/* Records of a host thread CUPTI did not name (no API call seen for them): left out. */
uint64_t cuda_activity_unplaced(void);

/* The host thread that made the call with this correlation id, 0 if unknown. */
int32_t cuda_corr_thread(uint32_t corr);
void cuda_corr_note_thread(uint32_t corr, int32_t tid);

/* ---- api_trace.c ---- */
#define CUDA_CATEGORY_RUNTIME "CUDA_RUNTIME_API"
#define CUDA_CATEGORY_DRIVER "CUDA_DRIVER_API"
#define CUDA_CATEGORY_NVTX "MARKER_CORE_API"
#define CUDA_CATEGORY_SYNC "CUDA_SYNCHRONIZATION"
#define CUDA_CATEGORY_OVERHEAD "PROFILER_OVERHEAD"

/* Build the API name tables and subscribe to the callbacks `*domains` needs; adds
 * CUDA_DOM_DRIVER to it for a program that uses the driver API only. Returns a CUPTI
 * result. */
CUptiResult cuda_api_start(unsigned *domains, const char *include_re, const char *exclude_re);
void cuda_api_stop(void);
/* After the API activity kinds are enabled: none for the functions the regexes leave out. */
void cuda_api_untrace_excluded(unsigned domains);
/* The program's first NVTX call loaded our NVTX injection (inject.c). */
void cuda_api_nvtx_loaded(void);
/* The name of runtime (or driver) API function `cbid` when it is traced, else NULL. */
const char *cuda_api_traced_name(bool runtime, uint32_t cbid);

/* ---- nvtx.c ---- */
/* An NVTX callback of CUPTI, on the thread that called NVTX. */
void cuda_nvtx_callback(CUpti_CallbackId cbid, const CUpti_NvtxData *d);
/* Start/end ranges left out because too many were open at once. */
unsigned long long cuda_nvtx_dropped(void);

/* ---- inject.c ---- */
/* A note through the runtime, printf-style. */
__attribute__((format(printf, 2, 3))) void cuda_note(enum sc_note_level level, const char *fmt,
						     ...);
/* CUPTI's text for an error. */
const char *cuda_error(CUptiResult rc);
/* Flush every activity buffer CUPTI holds (forced: also incomplete ones). */
void cuda_flush(bool forced);

#endif /* SYSCOPE_GPU_CUDA_TRACE_H */
