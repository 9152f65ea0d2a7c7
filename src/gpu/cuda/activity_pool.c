/* SPDX-License-Identifier: MIT */
/*
 * CUPTI's activity buffers (issue 17 item 9). CUPTI asks for a buffer on the thread whose
 * records fill the last one (the launching thread) and, unless told that buffers come zeroed,
 * zeroes each there before writing to it: with 4 MiB buffers, about 12 buffers of fresh
 * memory cleared and faulted in per 200 000 launches, inside the program's launch calls.
 * Here buffers come zeroed: a few made when tracing starts, and every buffer CUPTI gives back
 * is cleared on the thread that read it (CUPTI's worker, or a flushing thread) and handed out
 * again, so the launching thread takes a ready buffer without clearing or faulting anything.
 */
#include "activity_pool.h"

#include <cupti.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MAX 8	/* kept for reuse: 32 MiB at the default size */
#define POOL_AT_START 2 /* one being filled, one ready */
#define BUFFER_ALIGN 8

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *pool[POOL_MAX];
static unsigned pool_n;
static size_t pool_bytes = 4u << 20;

static uint8_t *fresh_zeroed(void)
{
	uint8_t *b = aligned_alloc(BUFFER_ALIGN, pool_bytes);

	if (b)
		memset(b, 0, pool_bytes);
	return b;
}

bool cuda_pool_start(size_t bytes)
{
	uint8_t zeroed = 1;
	size_t size = sizeof(zeroed);

	size_t want = bytes & ~(size_t)(BUFFER_ALIGN - 1);

	pthread_mutex_lock(&pool_lock);
	if (want !=
	    pool_bytes) { /* attached again with another size: the kept ones are too small */
		while (pool_n)
			free(pool[--pool_n]);
		pool_bytes = want;
	}
	while (pool_n < POOL_AT_START && (pool[pool_n] = fresh_zeroed()))
		pool_n++;
	pthread_mutex_unlock(&pool_lock);
	/* Before the first buffer is asked for: CUPTI reads it at each request. */
	return cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size,
					 &zeroed) == CUPTI_SUCCESS;
}

uint8_t *cuda_pool_take(size_t *bytes)
{
	uint8_t *b = NULL;

	pthread_mutex_lock(&pool_lock);
	if (pool_n)
		b = pool[--pool_n];
	pthread_mutex_unlock(&pool_lock);
	if (!b)
		b = fresh_zeroed();
	*bytes = b ? pool_bytes : 0;
	return b;
}

void cuda_pool_give(uint8_t *buffer, size_t bytes)
{
	if (!buffer)
		return;
	if (bytes != pool_bytes) { /* not one of ours (cannot happen): not reused */
		free(buffer);
		return;
	}
	memset(buffer, 0, bytes); /* all of it: CUPTI may have written past the valid part */
	pthread_mutex_lock(&pool_lock);
	if (pool_n < POOL_MAX) {
		pool[pool_n++] = buffer;
		buffer = NULL;
	}
	pthread_mutex_unlock(&pool_lock);
	free(buffer);
}
