/* SPDX-License-Identifier: MIT */
/* activity_pool.c: CUPTI's activity buffers, zeroed and reused. */
#ifndef SYSCOPE_GPU_CUDA_ACTIVITY_POOL_H
#define SYSCOPE_GPU_CUDA_ACTIVITY_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Buffers of `bytes` each (a multiple of 8); a few are made at once, before any record.
 * Returns whether CUPTI accepted to be given zeroed buffers (else it zeroes each itself). */
bool cuda_pool_start(size_t bytes);
/* A zeroed buffer of the pool's size for CUPTI (a fresh one when none is left), or NULL. */
uint8_t *cuda_pool_take(size_t *bytes);
/* A buffer CUPTI gave back, its records read: zeroed and kept for the next request. */
void cuda_pool_give(uint8_t *buffer, size_t bytes);

#endif /* SYSCOPE_GPU_CUDA_ACTIVITY_POOL_H */
