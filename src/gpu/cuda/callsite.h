/* SPDX-License-Identifier: MIT */
/* callsite.c: the Python stack of each CUDA call that starts GPU work (PY_CALLSITE). */
#ifndef SYSCOPE_GPU_CUDA_CALLSITE_H
#define SYSCOPE_GPU_CUDA_CALLSITE_H

#include "cuda_common.h"

/* --cuda-python-stacks: whether cuda_callsite_start may enable anything (default yes). */
void cuda_callsite_want(bool on);
/* Enable the launch, copy and set callbacks of `sub` when the process reads Python stacks
 * (libsyscope.so says); nothing otherwise. */
void cuda_callsite_start(CUpti_SubscriberHandle sub);
/* A runtime- or driver-API callback of `sub`: records the caller's Python stack at a
 * work-starting call's entry. */
void cuda_callsite_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			    const CUpti_CallbackData *data);

#endif /* SYSCOPE_GPU_CUDA_CALLSITE_H */
