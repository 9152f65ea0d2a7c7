/* SPDX-License-Identifier: MIT */
/*
 * pthread tracing (--parallel=pthread): waits in locks, condition variables, barriers and
 * semaphores longer than --pthread-min-wait, and thread creations and joins, as regions of
 * category "pthread" (pthread.c). The hooks below are for the wrappers that live elsewhere
 * (threads.c: pthread_create; wrap_block.c: the semaphore waits).
 */
#ifndef SYSCOPE_RT_PARALLEL_PTHREAD_H
#define SYSCOPE_RT_PARALLEL_PTHREAD_H
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "../sources/source.h"

extern const struct rt_source rt_source_pthread;

/* Whether waits are to be timed now (tracing on and the process recording). */
bool rt_pthread_tracing(void);
/* A wait on `object` that began at `start` has just ended: recorded when long enough.
 * `error` is what the call returned (0 or an errno). Keeps errno. */
void rt_pthread_waited(const char *call, const char *object_name, const void *object,
		       uint64_t start, int error);
/* pthread_create took [start, now) and made `handle`, the thread of creation index `index`. */
void rt_pthread_created(uint64_t start, pthread_t handle, uint32_t index);
/* In a new thread, once it is registered: who made it, for its joiner and the timeline. */
void rt_pthread_thread_started(pid_t creator, uint32_t index);

/* Called by libsyscope-pthread.so's wrappers (pthread_wrap.c declares them weak). */
extern int __syscope_pthread_on;
bool __syscope_pthread_timing(void);
uint64_t __syscope_pthread_now(void);
void __syscope_pthread_waited(const char *call, const char *object_name, const void *object,
			      uint64_t start, int error);
bool __syscope_pthread_index(pthread_t thread, uint32_t *index);
bool __syscope_pthread_tid(uint32_t index, int32_t *tid);
void __syscope_pthread_joined(uint64_t start, bool found, int32_t tid, uint32_t index);
#endif /* SYSCOPE_RT_PARALLEL_PTHREAD_H */
