/* SPDX-License-Identifier: MIT */
/*
 * Which driver API calls are the program's (issue 17). CUPTI records the driver calls the CUDA
 * runtime makes for its own work (a kernel lookup before each launch, device attributes at
 * start; a statically linked runtime makes them from the program's own text) as it records
 * those of the program and its libraries (cuBLAS launches its kernels with cuLaunchKernel).
 * Unless the driver domain is asked for, a driver call made while a runtime call is open on
 * the same thread is the runtime's own: left out, and the work it started is linked to the
 * runtime call. The others are shown: they are the calls that caused their GPU work.
 *
 * API records come in the order the calls returned, so the record of a runtime call follows
 * those of the driver calls it made: a thread's driver calls are held until a later runtime
 * call of that thread decides (inside it: the runtime's; ended before it began: the
 * program's), or until the end. At most HOLD_MAX a thread: past that the oldest is shown
 * (no runtime call is that long in practice). Called under activity.c's buffer lock.
 *
 * Not every call the runtime makes lies inside one of its recorded calls: it starts CUDA
 * inside the program's first call before CUPTI times that call (device attributes, ...), and
 * looks up each kernel's name just before its launch is timed. So once the process is known
 * to call the runtime (a runtime record came), a driver call outside runtime calls is the
 * program's only if it starts GPU work or allocates, as where only those are recorded (the
 * runtime a library of its own); in a driver-API program (no runtime record) every one is.
 */
#include "driver_calls.h"

#include <stdatomic.h>
#include <stdlib.h>

#define HOLD_THREADS 512
#define HOLD_MAX 4096

struct held_thread {
	int32_t tid;
	uint32_t first, n; /* a ring of HOLD_MAX calls, oldest at `first` */
	struct driver_call *ring;
};

static struct held_thread held[HOLD_THREADS];
static driver_call_show_fn show_call;
static driver_call_hide_fn hide_call;
static atomic_uint_least64_t hidden_calls;
static bool runtime_seen; /* the process calls the CUDA runtime */

void cuda_driver_calls_init(driver_call_show_fn show, driver_call_hide_fn hide)
{
	show_call = show;
	hide_call = hide;
}

static struct held_thread *thread_of(int32_t tid, bool add)
{
	unsigned h = ((uint32_t)tid * 2654435761u) % HOLD_THREADS;

	for (unsigned i = 0; i < HOLD_THREADS; i++, h = (h + 1) % HOLD_THREADS) {
		if (held[h].tid == tid)
			return &held[h];
		if (!held[h].tid) {
			if (!add)
				return NULL;
			held[h].ring = calloc(HOLD_MAX, sizeof(*held[h].ring));
			if (!held[h].ring)
				return NULL;
			held[h].tid = tid;
			return &held[h];
		}
	}
	return NULL;
}

static struct driver_call *at(struct held_thread *t, uint32_t i)
{
	return &t->ring[(t->first + i) % HOLD_MAX];
}

/* A call no runtime call was open around: the program's, or the runtime's (see above). */
static void decide_outside(int32_t tid, const struct driver_call *c)
{
	if (runtime_seen && !c->work) {
		atomic_fetch_add(&hidden_calls, 1);
		hide_call(c, 0);
	} else {
		show_call(tid, c);
	}
}

bool cuda_driver_call_hold(int32_t tid, const struct driver_call *c)
{
	struct held_thread *t = tid ? thread_of(tid, true) : NULL;

	if (!t)
		return false;
	if (t->n == HOLD_MAX) { /* the oldest is the program's: no runtime call is this long */
		decide_outside(tid, at(t, 0));
		t->first = (t->first + 1) % HOLD_MAX;
		t->n--;
	}
	*at(t, t->n++) = *c;
	return true;
}

void cuda_driver_calls_runtime(int32_t tid, uint64_t start, uint64_t end, uint32_t corr)
{
	struct held_thread *t = thread_of(tid, false);
	uint32_t kept = 0;

	runtime_seen = true;
	if (!t)
		return;
	for (uint32_t i = 0; i < t->n; i++) {
		struct driver_call c = *at(t, i);

		if (c.start >= start && c.end <= end) {
			atomic_fetch_add(&hidden_calls, 1);
			hide_call(&c, corr);
		} else if (c.start > end) {
			*at(t, kept++) = c; /* after this call: a later one may hold it */
		} else {
			decide_outside(tid, &c);
		}
	}
	t->n = kept;
}

void cuda_driver_calls_flush(void)
{
	for (unsigned h = 0; h < HOLD_THREADS; h++) {
		struct held_thread *t = &held[h];

		for (uint32_t i = 0; t->tid && i < t->n; i++)
			decide_outside(t->tid, at(t, i));
		t->n = 0;
		t->first = 0;
	}
}

uint64_t cuda_driver_calls_hidden(void)
{
	return atomic_load(&hidden_calls);
}
