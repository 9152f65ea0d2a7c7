/* SPDX-License-Identifier: MIT */
/* syscope attach inside the program: attach.c (entry points, its thread, the detach) and
 * attach_threads.c (the program's threads, armed from outside). */
#ifndef SYSCOPE_RUNTIME_ATTACH_H
#define SYSCOPE_RUNTIME_ATTACH_H

#include "rt.h"

#define ATTACH_MAX_THREADS 4096

/* A new recording: `own_tid` (attach.c's thread) is never armed; thread 0 is kept for the
 * main thread. */
void rt_attach_threads_begin(pid_t own_tid);
/* A fork child's table: its one thread `main` (armed by itself) and `own_tid`. */
void rt_attach_threads_fork_child(pid_t own_tid, struct rt_thread *main);
/* Arm thread `tid` (syscope's own threads are left out); failures are counted. */
void rt_attach_arm(pid_t tid);
/* Every thread of /proc/self/task: new ones armed, gone ones forgotten. */
void rt_attach_scan(void);
/* A note of the threads that could not be armed, if any. */
void rt_attach_note_failures(void);
/* Detach, in order: samplers disabled and handlers in progress finished; then (after the
 * recording is finalized) whether a sampler signal is still pending on a thread; then every
 * descriptor closed and every thread's recorder state reset. */
void rt_attach_threads_quiet(void);
bool rt_attach_signal_pending(void);
void rt_attach_threads_release(void);

/* CUPTI subscribed in a process that uses CUDA already (attach_cuda.c); a note if it cannot
 * be. False while there is nothing to attach to yet (no libcuda, or its driver not
 * initialized): the attach thread asks again at its next scan. */
bool rt_attach_cuda(void);

/* The wrappers put in front of the program's calls by GOT rewriting (attach_wrap.c): at the
 * start, for objects loaded since (the attach thread's loop), and undone at the detach. */
void rt_attach_wrap_begin(void);
void rt_attach_wrap_rescan(void);
void rt_attach_wrap_end(void);

struct rt_got_hook;
/* With --parallel=mpi (attach_mpi.c): libsyscope-mpi.so loaded and started, its wrappers of
 * the functions the process's MPI defines put in `out` (at most `max`); 0 and a note when
 * the process has no MPI library or the tracer cannot load. */
unsigned rt_attach_mpi_hooks(struct rt_got_hook *out, unsigned max);

#endif /* SYSCOPE_RUNTIME_ATTACH_H */
