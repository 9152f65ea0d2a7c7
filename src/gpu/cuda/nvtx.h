/* SPDX-License-Identifier: MIT */
/* nvtx.c: NVTX ranges, marks and names from CUPTI's NVTX callbacks. */
#ifndef SYSCOPE_GPU_CUDA_NVTX_H
#define SYSCOPE_GPU_CUDA_NVTX_H

#include "cuda_common.h"

/* An NVTX callback of CUPTI, on the thread that called NVTX. */
void cuda_nvtx_callback(CUpti_CallbackId cbid, const CUpti_NvtxData *d);
/* NVTX's injection entry (InitializeInjectionNvtx2's argument): NVTX's calls then come to
 * this library directly, without CUPTI. 1 on success, 0 to let CUPTI take them. */
int cuda_nvtx_inject(void *get_export_table);
/* Start/end ranges left out because too many were open at once. */
unsigned long long cuda_nvtx_dropped(void);

#endif /* SYSCOPE_GPU_CUDA_NVTX_H */
