/* SPDX-License-Identifier: MIT */
/*
 * CUPTI's activity buffers (src/gpu/cuda/activity_pool.c), without a GPU: every buffer handed
 * out is zeroed, buffers given back are cleared and handed out again (at most eight kept), and
 * CUPTI is told that buffers come zeroed. CUPTI's attribute call is stood in for here.
 */
#include <stdlib.h>

#include "check.h"
#include "gpu/cuda/activity_pool.h"

#include <cupti.h>

#define SIZE 4096
#define KEPT 8 /* activity_pool.c's POOL_MAX */

static int zeroed_told = -1;
static CUptiResult attribute_answer = CUPTI_SUCCESS;

CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *size,
					       void *value)
{
	if (attr == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER && *size == 1)
		zeroed_told = *(uint8_t *)value;
	return attribute_answer;
}

static bool all_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static bool among(uint8_t *b, uint8_t *const *set, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (set[i] == b)
			return true;
	return false;
}

int main(void)
{
	uint8_t *given[KEPT + 4], *taken[KEPT + 4], *b, *again;
	size_t size = 0;
	unsigned reused = 0;

	CHECK(cuda_pool_start(SIZE + 3)); /* rounded down to a multiple of 8 */
	CHECK(zeroed_told == 1);

	b = cuda_pool_take(&size);
	CHECK(b && size == SIZE && all_zero(b, SIZE));
	memset(b, 0xab, SIZE); /* CUPTI's records */
	cuda_pool_give(b, SIZE);
	again = cuda_pool_take(&size);
	CHECK(again == b && size == SIZE && all_zero(again, SIZE));

	/* More out at once than the pool holds: fresh ones, zeroed too. */
	given[0] = again;
	for (unsigned i = 1; i < KEPT + 4; i++) {
		given[i] = cuda_pool_take(&size);
		CHECK(given[i] && size == SIZE && all_zero(given[i], SIZE));
	}
	for (unsigned i = 0; i < KEPT + 4; i++) {
		memset(given[i], i + 1, SIZE);
		cuda_pool_give(given[i], SIZE);
	}
	/* Eight kept and handed out again first, cleared; the rest were freed (fresh ones
	 * follow, which the allocator may place where a freed one was). */
	for (unsigned i = 0; i < KEPT + 4; i++) {
		taken[i] = cuda_pool_take(&size);
		CHECK(taken[i] && all_zero(taken[i], SIZE));
		reused += i < KEPT && among(taken[i], given, KEPT + 4);
	}
	CHECK(reused == KEPT);
	memcpy(given, taken, sizeof(given));

	/* A buffer of another size is not kept. */
	for (unsigned i = 0; i < KEPT + 4; i++)
		cuda_pool_give(given[i], i ? SIZE : SIZE / 2);
	for (unsigned i = 0; i < KEPT; i++) {
		b = cuda_pool_take(&size);
		CHECK(b != given[0]);
		free(b);
	}
	cuda_pool_give(NULL, SIZE); /* nothing */

	/* CUPTI refusing zeroed buffers is said (the caller writes the note). */
	attribute_answer = CUPTI_ERROR_INVALID_PARAMETER;
	CHECK(!cuda_pool_start(SIZE));
	for (unsigned i = 0; i < KEPT; i++)
		free(cuda_pool_take(&size));
	return check_report("test_cuda_pool");
}
