/* SPDX-License-Identifier: MIT */
/*
 * The Python call site of a CUDA launch (PY_CALLSITE, issue 15): the CUDA tracer calls
 * rt_py_callsite from its API callback, on the launching thread, in normal context. The walk
 * is the samples' (frames.c): in normal context the thread's frames cannot change under it
 * (only the thread itself pushes and pops them), so it reads a consistent chain. A launch
 * loop calls from the same frames each time: the thread's memo of its last call site's
 * frames (internal.h), a page mapped at its first call site, spares those frames the code
 * table's lookup.
 *
 * A process without Python frames pays one branch (rt_py_sampling_on).
 */
#include "internal.h"

#include <sys/mman.h>

static RT_TLS struct rt_py_memo *memo;
static RT_TLS bool memo_off; /* its mapping failed, or the thread ended: none from now */

bool rt_py_callsites_on(void)
{
	return rt_py_sampling_on();
}

static struct rt_py_memo *thread_memo(void)
{
	void *p;

	if (__builtin_expect(memo != NULL, 1) || memo_off)
		return memo;
	p = mmap(NULL, sizeof(*memo), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		memo_off = true; /* call sites still recorded, each frame looked up */
		return NULL;
	}
	return memo = p; /* zeroed: no frame remembered */
}

void rt_py_callsite_thread_end(void)
{
	struct rt_py_memo *m = memo;

	memo_off = true;
	memo = NULL;
	if (m)
		munmap(m, sizeof(*m));
}

int rt_py_callsite(uint64_t corr_id)
{
	struct rt_py_sample py;
	struct {
		uint64_t ts, corr_id;
	} body;
	uint32_t size;

	/* Registered first: in an attached process a thread may launch before its first sample,
	 * and the walk's first check compares the thread state's id with ours. */
	if (!rt_py_sampling_on() || !rt_thread_self())
		return 0;
	/* may write PY_CODE records first: before our reservation */
	size = rt_py_sample_memo(&py, thread_memo());
	if (!size)
		return 0; /* this thread runs no Python */
	body.ts = rt_now_ns();
	body.corr_id = corr_id;
	return rt_record(SC_REC_PY_CALLSITE, 0, &body, sizeof(body), &py, size);
}
