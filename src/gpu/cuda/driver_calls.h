/* SPDX-License-Identifier: MIT */
/* driver_calls.c: which driver API calls are the program's, and which the runtime's own. */
#ifndef SYSCOPE_GPU_CUDA_DRIVER_CALLS_H
#define SYSCOPE_GPU_CUDA_DRIVER_CALLS_H

#include "cuda_common.h"

/* A driver API call as its activity record gave it. */
struct driver_call {
	uint64_t start, end;
	uint32_t corr, cbid;
	bool work; /* a function that starts GPU work or allocates */
};

/* Writes a driver call that is the program's (a region of thread `tid`). */
typedef void (*driver_call_show_fn)(int32_t tid, const struct driver_call *c);
/* Notes a driver call that was the runtime's own, made inside runtime call `runtime_corr`. */
typedef void (*driver_call_hide_fn)(const struct driver_call *c, uint32_t runtime_corr);

void cuda_driver_calls_init(driver_call_show_fn show, driver_call_hide_fn hide);
/* Hold a driver call of thread `tid` until a later runtime call of the thread says whether it
 * was made inside one. False when it cannot be held (the caller shows it now). */
bool cuda_driver_call_hold(int32_t tid, const struct driver_call *c);
/* A runtime call of thread `tid` returned: the held driver calls inside it are the runtime's
 * own (hidden), those that had ended before it began are the program's (shown). */
void cuda_driver_calls_runtime(int32_t tid, uint64_t start, uint64_t end, uint32_t corr);
/* The end: the calls still held are decided as made outside runtime calls. */
void cuda_driver_calls_flush(void);
/* How many driver calls were the runtime's own. */
uint64_t cuda_driver_calls_hidden(void);

#endif /* SYSCOPE_GPU_CUDA_DRIVER_CALLS_H */
