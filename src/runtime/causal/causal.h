/* SPDX-License-Identifier: MIT */
/*
 * Causal profiling inside the program (syscope causal), Coz's method: while an experiment
 * runs, each sample of a thread in the selected function or line adds period x speedup to a
 * global delay count, and every other thread pauses until its own count catches up, so the
 * selected code runs relatively faster. The CLI relates the progress made to the time less
 * the delays (src/sinks/causal.c).
 *
 *   engine.c   scope (the CLI's file of address ranges), the sample hook, delays, blocking
 *   control.c  the controller thread: experiments one after another, their records
 *   points.c   progress points: Coz's counters (_coz_get_counter), syscope_progress,
 *              sampled points (--progress)
 *   block.c    pthread_join, condition variables, barriers, pipes and sockets: a thread
 *              woken by another is credited with the delays inserted while it waited
 */
#ifndef SYSCOPE_RUNTIME_CAUSAL_H
#define SYSCOPE_RUNTIME_CAUSAL_H

#include "../rt.h"

#include <stdatomic.h>

#define RT_CAUSAL_NONE (-1)
#define RT_CAUSAL_CHOOSING (-2)

/* What the sample hook and the controller share. */
struct rt_causal {
	atomic_int on;		       /* causal mode (set once at start) */
	atomic_int active;	       /* an experiment is running */
	_Atomic int64_t selected;      /* unit sped up, or RT_CAUSAL_NONE / _CHOOSING */
	atomic_uint speedup;	       /* percent, of the running experiment */
	_Atomic uint64_t global_delay; /* ns of delay every thread owes since start */
	/* global_delay when the running experiment began: what was owed before is forgiven */
	_Atomic uint64_t experiment_delay0;
	_Atomic uint64_t selected_samples;
	/* ns the program's threads were kept off their CPUs while runnable (preempted, or a
	 * real-time throttle), summed over threads: an experiment with much of it measured the
	 * machine more than the program */
	_Atomic uint64_t offcpu_ns;
	uint64_t period_ns; /* the sampling period, for a thread's first sample */
};
extern struct rt_causal rt_causal;

/* sampling.c, in the handler (async-signal-safe): the stack of each sample as it is
 * recorded (innermost first: the unit and progress point it is in are those of its
 * innermost frame in scope, as Coz does), then, after a CPU-time sample, the delays. */
void rt_causal_stack(const uint64_t *frames, int n);
void rt_causal_sample(uint64_t cpu_ns);
/* Around a call that blocks until another thread wakes it (block.c). */
void rt_causal_pre_block(void);
void rt_causal_post_block(bool woken);
/* Before a call that wakes another thread (a signal, a post, a write to a pipe, the end of
 * the thread): pay what this thread owes, so that the one it wakes, credited with the delays
 * inserted while it waited, is not credited with delays nobody paid (Coz's rule). */
void rt_causal_catch_up(void);
/* Whether waits are to be credited (causal mode on): one load. */
static inline bool rt_causal_blocking(void)
{
	return __builtin_expect(atomic_load_explicit(&rt_causal.on, memory_order_relaxed), 0);
}
/* Around a read or write on a pipe or socket (wrap_block.c): begin returns whether the call
 * is about to block (then end is to be called, with whether it transferred or saw the end). */
bool rt_causal_io_begin(int fd, bool out);
void rt_causal_io_end(bool done);
/* The same pair for wrappers elsewhere (the semaphore waits, libsyscope-pthread.so's locks):
 * pre returns whether causal mode is on, and post is to be called only then. */
RT_EXPORT int __syscope_causal_pre_block(void);
RT_EXPORT void __syscope_causal_post_block(int woken);
RT_EXPORT void __syscope_causal_catch_up(void); /* before an unlock */
/* Causal mode, for those wrappers to test inline before any of those calls. */
extern RT_EXPORT int __syscope_causal_on;

/* engine.c: the unit holding `pc`, or -1; a sampled progress point's id, or -1. */
int64_t rt_causal_unit_of(uintptr_t pc);
int64_t rt_causal_point_of(uintptr_t pc);
uint32_t rt_causal_nunits(void);

/* points.c */
#define RT_CAUSAL_MAX_POINTS 64
/* Coz's counter layout (coz.h): the count, then a backoff it does not use. */
struct rt_coz_counter {
	size_t count;
	size_t backoff;
};
/* The counter of the point (kind, name), made on first use; NULL when the table is full. */
struct rt_coz_counter *rt_causal_counter(int kind, const char *name);
void rt_causal_sampled_point(int64_t id); /* a sample in a --progress range (handler) */
/* Copy every point's count into counts (ids 0..n-1); returns n. */
unsigned rt_causal_read_points(uint64_t *counts, unsigned max);
/* Add to sums[i] how many of each latency point i are in flight now (its BEGIN's count less
 * its END's); returns whether there is a latency point at all. */
bool rt_causal_add_in_flight(uint64_t *sums, unsigned max);
/* A delay of `delay` ns was just inserted (handler): what it removes from each latency
 * point's in-flight area is delay x the number in flight now. Read by the controller. */
void rt_causal_delay_in_flight(uint64_t delay);
void rt_causal_read_delayed(uint64_t *sums, unsigned max);
void rt_causal_points_fork_child(void); /* names them again in the child's file */

/* control.c */
int rt_causal_control_start(void);
void rt_causal_control_stop(void);
int rt_causal_control_fork_child(void);
/* A fork child's experiments, advanced by each sample of its threads (handler-safe). */
void rt_causal_control_tick(void);

#endif /* SYSCOPE_RUNTIME_CAUSAL_H */
