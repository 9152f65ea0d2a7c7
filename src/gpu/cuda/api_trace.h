/* SPDX-License-Identifier: MIT */
/* api_trace.c: CUPTI's callbacks (resources, NVTX). */
#ifndef SYSCOPE_GPU_CUDA_API_TRACE_H
#define SYSCOPE_GPU_CUDA_API_TRACE_H

#include "cuda_common.h"

/* Build the API name tables and subscribe to the callbacks `*domains` needs; adds
 * CUDA_DOM_DRIVER to it for a program that uses the driver API only. Returns a CUPTI
 * result. */
CUptiResult cuda_api_start(unsigned *domains, const char *include_re, const char *exclude_re);
void cuda_api_stop(void);
/* The program's first NVTX call loaded our NVTX injection (inject.c). */
void cuda_api_nvtx_loaded(void);
/* A context's device as an agent (once per device and session). */
void cuda_api_record_agent(CUcontext ctx);
/* Callbacks off for good (attach's detach); devices are recorded again after it. */
void cuda_api_unsubscribe(void);

#endif /* SYSCOPE_GPU_CUDA_API_TRACE_H */
