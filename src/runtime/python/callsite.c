/* SPDX-License-Identifier: MIT */
/*
 * The Python call site of a CUDA launch (PY_CALLSITE, issue 15): the CUDA tracer calls
 * rt_py_callsite from its API callback, on the launching thread, in normal context. The walk
 * is the samples' (frames.c): in normal context the thread's frames cannot change under it
 * (only the thread itself pushes and pops them), so it reads a consistent chain.
 *
 * A process without Python frames pays one branch (rt_py_sampling_on).
 */
#include "internal.h"

bool rt_py_callsites_on(void)
{
	return rt_py_sampling_on();
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
	size = rt_py_sample(&py); /* may write PY_CODE records first: before our reservation */
	if (!size)
		return 0; /* this thread runs no Python */
	body.ts = rt_now_ns();
	body.corr_id = corr_id;
	return rt_record(SC_REC_PY_CALLSITE, 0, &body, sizeof(body), &py, size);
}
