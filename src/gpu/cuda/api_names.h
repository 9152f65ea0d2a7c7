/* SPDX-License-Identifier: MIT */
/* api_names.c: the names of the runtime and driver API functions, and which are traced. */
#ifndef SYSCOPE_GPU_CUDA_API_NAMES_H
#define SYSCOPE_GPU_CUDA_API_NAMES_H

#include "cuda_common.h"

/* Build the name tables; the include/exclude regexes (either may be empty) choose the traced
 * functions. Returns false when out of memory. */
bool cuda_api_names_init(const char *include_re, const char *exclude_re);
/* The name of runtime (or driver) API function `cbid` when it is traced, else NULL. */
const char *cuda_api_traced_name(bool runtime, uint32_t cbid);
/* Driver function `cbid` starts GPU work or allocates (cuLaunchKernel, cuMemcpy, cuMemMap...). */
bool cuda_api_driver_starts_work(uint32_t cbid);
/* Record the traced driver functions that start GPU work or allocate, and no other (the
 * driver domain off); how many. */
unsigned cuda_api_trace_driver_work(void);
/* After the API activity kinds are enabled: none for the functions the regexes leave out. */
void cuda_api_untrace_excluded(unsigned domains);

#endif /* SYSCOPE_GPU_CUDA_API_NAMES_H */
