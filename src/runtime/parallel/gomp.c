/* SPDX-License-Identifier: MIT */
/*
 * GCC's OpenMP runtime (libgomp) has no OMPT, so its entry points, which the code GCC
 * generates calls, are wrapped here (libsyscope.so is preloaded, so these definitions come
 * first) and each forwards to the next definition (libgomp's, or libomp's GOMP layer).
 *
 * A parallel region runs the outlined function on every team thread: the wrapper hands libgomp
 * a trampoline that records each thread's implicit task (team member id and team size) around
 * the function, and an implicit barrier after it (a GOMP_barrier: every member of the team
 * reaches the end of the region anyway, so this only makes the wait visible; not done when
 * cancellation is on, where threads may leave early). Explicit tasks are run through a
 * trampoline too, the outlined function's address travelling in front of the task's data.
 *
 * The OpenMP API's lock functions are wrapped here too: with libomp they only forward, since
 * OMPT reports locks there.
 *
 * Nothing is recorded when OpenMP tracing is off, when the OMPT tool started (libomp then
 * reports everything itself), or when the runtime is passive; the wrappers then only forward.
 * What a construct does never changes: same functions, data, thread counts and flags.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../rt.h"
#include "omp_record.h"

/* libgomp's entry points, as GCC 9-14 declare them (libgomp/libgomp_g.h). */
typedef void (*gomp_fn)(void *);
typedef void (*gomp_cpyfn)(void *, void *);

RT_EXPORT void GOMP_parallel(gomp_fn fn, void *data, unsigned num_threads, unsigned flags);
RT_EXPORT unsigned GOMP_parallel_reductions(gomp_fn fn, void *data, unsigned num_threads,
					    unsigned flags);
RT_EXPORT void GOMP_barrier(void);
RT_EXPORT bool GOMP_barrier_cancel(void);
RT_EXPORT void GOMP_critical_start(void);
RT_EXPORT void GOMP_critical_end(void);
RT_EXPORT void GOMP_critical_name_start(void **pptr);
RT_EXPORT void GOMP_critical_name_end(void **pptr);
RT_EXPORT void GOMP_taskwait(void);
RT_EXPORT void GOMP_taskgroup_end(void);
RT_EXPORT void GOMP_task(gomp_fn fn, void *data, gomp_cpyfn cpyfn, long arg_size, long arg_align,
			 bool if_clause, unsigned flags, void **depend, int priority, void *detach);

/* The next definition of each entry point, as the caller would reach it without us: the
 * global scope's, else the caller's own (a library loaded RTLD_LOCAL with its libgomp, as
 * Python extensions are: PyTorch), else any loaded object's. */
#define NEXT(name)                                \
	static struct rt_real_cache cache_##name; \
	__typeof__(&name) next_##name =           \
		(__typeof__(&name))real_find(#name, &cache_##name, __builtin_return_address(0))

/* rt_real_find's common case inline: the global scope's definition, found before (four
 * lookups a parallel region, each a call that perf showed). */
static inline void *real_find(const char *name, struct rt_real_cache *cache, const void *caller)
{
	void *p = __atomic_load_n(&cache->global, __ATOMIC_ACQUIRE);

	return p ? p : rt_real_find(name, cache, caller);
}

/* The team's member id and size, and whether cancellation is on, from the runtime that runs
 * the team (`caller`: code of that runtime or of the program that uses it). */
static int runtime_int(const char *name, struct rt_real_cache *cache, const void *caller,
		       int otherwise)
{
	int (*get)(void) = (int (*)(void))real_find(name, cache, caller);

	return get ? get() : otherwise;
}

static int team_member(const void *caller)
{
	static struct rt_real_cache cache;

	return runtime_int("omp_get_thread_num", &cache, caller, -1);
}

static int team_size(const void *caller)
{
	static struct rt_real_cache cache;

	return runtime_int("omp_get_num_threads", &cache, caller, -1);
}

/* Not knowing: assume threads may leave early. The runtime's cancel-var is set once, from
 * OMP_CANCELLATION at its start, so it is asked once (a lookup and a call a region before). */
static bool cancellation_on(const void *caller)
{
	static struct rt_real_cache cache;
	static int known = -1; /* -1: not asked yet; else the answer */
	int on = __atomic_load_n(&known, __ATOMIC_RELAXED);

	if (__builtin_expect(on < 0, 0)) {
		int (*get)(void) = (int (*)(void))real_find("omp_get_cancellation", &cache, caller);

		if (!get)
			return true; /* asked again next time */
		on = get() != 0;
		__atomic_store_n(&known, on, __ATOMIC_RELAXED);
	}
	return on;
}

static bool recording(void)
{
	return !omp_ompt_active && omp_tracing();
}

/* An end goes on while the program paused recording, but not under OMPT: libomp reports it
 * itself, and this one would close an enclosing region of the same kind. */
static void end(enum omp_kind kind)
{
	if (!omp_ompt_active)
		omp_end(kind);
}

/* ---- parallel regions ---- */

/* A worksharing loop as its first call describes it. */
struct loop_info {
	const char *schedule;
	long chunk;
	uint64_t iterations;
};

struct team_work {
	gomp_fn fn;
	void *data;
	bool barrier;  /* end each implicit task with a visible barrier */
	bool loop;     /* a combined parallel loop: each member's loop begins with its task */
	bool sections; /* the same for combined parallel sections */
	struct loop_info info;
};

static void sections_begin(uint64_t count)
{
	struct omp_arg args[1] = { OMP_U(sections, count) };

	omp_begin(OMP_SECTIONS, args, 1);
}

static void loop_begin(const struct loop_info *l)
{
	struct omp_arg args[3] = { OMP_S("schedule", l->schedule), OMP_U(chunk, l->chunk),
				   OMP_U(iterations, l->iterations) };

	omp_begin(OMP_LOOP, args, 3);
}

static void implicit_task(void *arg)
{
	const struct team_work *w = arg;
	const void *runtime = __builtin_return_address(0);
	int team = team_size(runtime);
	/* Alone (every serialized region) a thread is its team's member 0: no second call. */
	struct omp_arg args[2] = { OMP_U(thread, team == 1 ? 0 : team_member(runtime)),
				   OMP_U(team, team) };

	omp_begin(OMP_IMPLICIT_TASK, args, 2);
	if (w->loop)
		loop_begin(&w->info);
	if (w->sections)
		sections_begin(w->info.iterations);
	w->fn(w->data);
	if (w->barrier && team > 1) { /* alone, nobody is waited for */
		NEXT(GOMP_barrier);
		omp_begin(OMP_IMPLICIT_BARRIER, NULL, 0);
		next_GOMP_barrier();
		omp_end(OMP_IMPLICIT_BARRIER);
	}
	omp_end(OMP_IMPLICIT_TASK);
}

static void parallel_begin(gomp_fn fn, unsigned num_threads, struct team_work *w, void *data)
{
	struct omp_arg args[2] = { OMP_U(requested, num_threads), OMP_P(code, fn) };

	w->fn = fn;
	w->data = data;
	w->barrier = !cancellation_on((const void *)fn);
	w->loop = false;
	w->sections = false;
	omp_begin(OMP_PARALLEL, args, 2);
}

RT_EXPORT void GOMP_parallel(gomp_fn fn, void *data, unsigned num_threads, unsigned flags)
{
	struct team_work w;

	NEXT(GOMP_parallel);
	if (!recording()) {
		next_GOMP_parallel(fn, data, num_threads, flags);
		return;
	}
	parallel_begin(fn, num_threads, &w, data);
	next_GOMP_parallel(implicit_task, &w, num_threads, flags);
	omp_end(OMP_PARALLEL);
}

RT_EXPORT unsigned GOMP_parallel_reductions(gomp_fn fn, void *data, unsigned num_threads,
					    unsigned flags)
{
	struct team_work w;
	unsigned team;

	NEXT(GOMP_parallel_reductions);
	if (!recording())
		return next_GOMP_parallel_reductions(fn, data, num_threads, flags);
	parallel_begin(fn, num_threads, &w, data);
	team = next_GOMP_parallel_reductions(implicit_task, &w, num_threads, flags);
	omp_end(OMP_PARALLEL);
	return team;
}

/* ---- worksharing loops (GCC computes static schedules inline: only their barrier shows) ---- */

static uint64_t trip_count(long start, long end, long incr)
{
	if (incr > 0 && end > start)
		return (uint64_t)((end - start + incr - 1) / incr);
	if (incr < 0 && end < start)
		return (uint64_t)((start - end - incr - 1) / -incr);
	return 0;
}

static struct loop_info loop_info(const char *schedule, long start, long end, long incr, long chunk)
{
	return (struct loop_info){ schedule, chunk, trip_count(start, end, incr) };
}

/* GOMP_loop_start's schedule argument (enum gomp_schedule_type, monotonic bit aside). */
static const char *schedule_name(long sched)
{
	static const char *const names[] = { "runtime", "static", "dynamic", "guided", "auto" };
	unsigned long kind = (unsigned long)sched & 0x7fffffffUL;

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "other";
}

#define LOOP_START(name, schedule)                                                                 \
	RT_EXPORT bool name(long start, long end, long incr, long chunk, long *istart,             \
			    long *iend);                                                           \
	RT_EXPORT bool name(long start, long end, long incr, long chunk, long *istart, long *iend) \
	{                                                                                          \
		NEXT(name);                                                                        \
		if (recording()) {                                                                 \
			struct loop_info l = loop_info(schedule, start, end, incr, chunk);         \
			loop_begin(&l);                                                            \
		}                                                                                  \
		return next_##name(start, end, incr, chunk, istart, iend);                         \
	}
#define LOOP_RUNTIME_START(name)                                                        \
	RT_EXPORT bool name(long start, long end, long incr, long *istart, long *iend); \
	RT_EXPORT bool name(long start, long end, long incr, long *istart, long *iend)  \
	{                                                                               \
		NEXT(name);                                                             \
		if (recording()) {                                                      \
			struct loop_info l = loop_info("runtime", start, end, incr, 0); \
			loop_begin(&l);                                                 \
		}                                                                       \
		return next_##name(start, end, incr, istart, iend);                     \
	}

LOOP_START(GOMP_loop_static_start, "static")
LOOP_START(GOMP_loop_dynamic_start, "dynamic")
LOOP_START(GOMP_loop_guided_start, "guided")
LOOP_START(GOMP_loop_nonmonotonic_dynamic_start, "dynamic")
LOOP_START(GOMP_loop_nonmonotonic_guided_start, "guided")
LOOP_START(GOMP_loop_ordered_static_start, "static")
LOOP_START(GOMP_loop_ordered_dynamic_start, "dynamic")
LOOP_START(GOMP_loop_ordered_guided_start, "guided")
LOOP_RUNTIME_START(GOMP_loop_ordered_runtime_start)
LOOP_RUNTIME_START(GOMP_loop_runtime_start)
LOOP_RUNTIME_START(GOMP_loop_nonmonotonic_runtime_start)
LOOP_RUNTIME_START(GOMP_loop_maybe_nonmonotonic_runtime_start)

RT_EXPORT bool GOMP_loop_start(long start, long end, long incr, long sched, long chunk,
			       long *istart, long *iend, uintptr_t *reductions, void **mem);
RT_EXPORT bool GOMP_loop_start(long start, long end, long incr, long sched, long chunk,
			       long *istart, long *iend, uintptr_t *reductions, void **mem)
{
	NEXT(GOMP_loop_start);
	if (recording()) {
		struct loop_info l = loop_info(schedule_name(sched), start, end, incr, chunk);

		loop_begin(&l);
	}
	return next_GOMP_loop_start(start, end, incr, sched, chunk, istart, iend, reductions, mem);
}

/* The loop ends where its members leave it; GOMP_loop_end waits for the others there. */
RT_EXPORT void GOMP_loop_end(void);
RT_EXPORT void GOMP_loop_end(void)
{
	NEXT(GOMP_loop_end);
	end(OMP_LOOP);
	if (!recording()) {
		next_GOMP_loop_end();
		return;
	}
	omp_begin(OMP_IMPLICIT_BARRIER, NULL, 0);
	next_GOMP_loop_end();
	omp_end(OMP_IMPLICIT_BARRIER);
}

RT_EXPORT void GOMP_loop_end_nowait(void);
RT_EXPORT void GOMP_loop_end_nowait(void)
{
	NEXT(GOMP_loop_end_nowait);
	end(OMP_LOOP);
	next_GOMP_loop_end_nowait();
}

RT_EXPORT bool GOMP_loop_end_cancel(void);
RT_EXPORT bool GOMP_loop_end_cancel(void)
{
	bool cancelled;

	NEXT(GOMP_loop_end_cancel);
	end(OMP_LOOP);
	if (!recording())
		return next_GOMP_loop_end_cancel();
	omp_begin(OMP_IMPLICIT_BARRIER, NULL, 0);
	cancelled = next_GOMP_loop_end_cancel();
	omp_end(OMP_IMPLICIT_BARRIER);
	return cancelled;
}

/* Combined parallel loops: the team is made and the loop set up in one call. */
static void parallel_loop(void (*next)(gomp_fn, void *, unsigned, long, long, long, long, unsigned),
			  void (*next_runtime)(gomp_fn, void *, unsigned, long, long, long,
					       unsigned),
			  const char *schedule, gomp_fn fn, void *data, unsigned num_threads,
			  long start, long end, long incr, long chunk, unsigned flags)
{
	struct team_work w;

	if (!recording()) {
		if (next)
			next(fn, data, num_threads, start, end, incr, chunk, flags);
		else
			next_runtime(fn, data, num_threads, start, end, incr, flags);
		return;
	}
	parallel_begin(fn, num_threads, &w, data);
	w.loop = true;
	w.info = loop_info(schedule, start, end, incr, chunk);
	if (next)
		next(implicit_task, &w, num_threads, start, end, incr, chunk, flags);
	else
		next_runtime(implicit_task, &w, num_threads, start, end, incr, flags);
	omp_end(OMP_PARALLEL);
}

#define PARALLEL_LOOP(name, schedule)                                                           \
	RT_EXPORT void name(gomp_fn fn, void *data, unsigned num_threads, long start, long end, \
			    long incr, long chunk, unsigned flags);                             \
	RT_EXPORT void name(gomp_fn fn, void *data, unsigned num_threads, long start, long end, \
			    long incr, long chunk, unsigned flags)                              \
	{                                                                                       \
		NEXT(name);                                                                     \
		parallel_loop(next_##name, NULL, schedule, fn, data, num_threads, start, end,   \
			      incr, chunk, flags);                                              \
	}
#define PARALLEL_LOOP_RUNTIME(name)                                                             \
	RT_EXPORT void name(gomp_fn fn, void *data, unsigned num_threads, long start, long end, \
			    long incr, unsigned flags);                                         \
	RT_EXPORT void name(gomp_fn fn, void *data, unsigned num_threads, long start, long end, \
			    long incr, unsigned flags)                                          \
	{                                                                                       \
		NEXT(name);                                                                     \
		parallel_loop(NULL, next_##name, "runtime", fn, data, num_threads, start, end,  \
			      incr, 0, flags);                                                  \
	}

PARALLEL_LOOP(GOMP_parallel_loop_static, "static")
PARALLEL_LOOP(GOMP_parallel_loop_dynamic, "dynamic")
PARALLEL_LOOP(GOMP_parallel_loop_guided, "guided")
PARALLEL_LOOP(GOMP_parallel_loop_nonmonotonic_dynamic, "dynamic")
PARALLEL_LOOP(GOMP_parallel_loop_nonmonotonic_guided, "guided")
PARALLEL_LOOP_RUNTIME(GOMP_parallel_loop_runtime)
PARALLEL_LOOP_RUNTIME(GOMP_parallel_loop_nonmonotonic_runtime)
PARALLEL_LOOP_RUNTIME(GOMP_parallel_loop_maybe_nonmonotonic_runtime)

/* ---- sections ---- */

RT_EXPORT unsigned GOMP_sections_start(unsigned count);
RT_EXPORT unsigned GOMP_sections_start(unsigned count)
{
	NEXT(GOMP_sections_start);
	if (recording())
		sections_begin(count);
	return next_GOMP_sections_start(count);
}

RT_EXPORT void GOMP_sections_end(void);
RT_EXPORT void GOMP_sections_end(void)
{
	NEXT(GOMP_sections_end);
	end(OMP_SECTIONS);
	if (!recording()) {
		next_GOMP_sections_end();
		return;
	}
	omp_begin(OMP_IMPLICIT_BARRIER, NULL, 0);
	next_GOMP_sections_end();
	omp_end(OMP_IMPLICIT_BARRIER);
}

RT_EXPORT void GOMP_sections_end_nowait(void);
RT_EXPORT void GOMP_sections_end_nowait(void)
{
	NEXT(GOMP_sections_end_nowait);
	end(OMP_SECTIONS);
	next_GOMP_sections_end_nowait();
}

RT_EXPORT void GOMP_parallel_sections(gomp_fn fn, void *data, unsigned num_threads, unsigned count,
				      unsigned flags);
RT_EXPORT void GOMP_parallel_sections(gomp_fn fn, void *data, unsigned num_threads, unsigned count,
				      unsigned flags)
{
	struct team_work w;

	NEXT(GOMP_parallel_sections);
	if (!recording()) {
		next_GOMP_parallel_sections(fn, data, num_threads, count, flags);
		return;
	}
	parallel_begin(fn, num_threads, &w, data);
	w.sections = true;
	w.info.iterations = count;
	next_GOMP_parallel_sections(implicit_task, &w, num_threads, count, flags);
	omp_end(OMP_PARALLEL);
}

/* ---- synchronization ---- */

RT_EXPORT void GOMP_barrier(void)
{
	NEXT(GOMP_barrier);
	if (!recording()) {
		next_GOMP_barrier();
		return;
	}
	omp_begin(OMP_BARRIER, NULL, 0);
	next_GOMP_barrier();
	omp_end(OMP_BARRIER);
}

RT_EXPORT bool GOMP_barrier_cancel(void)
{
	bool cancelled;

	NEXT(GOMP_barrier_cancel);
	if (!recording())
		return next_GOMP_barrier_cancel();
	omp_begin(OMP_BARRIER, NULL, 0);
	cancelled = next_GOMP_barrier_cancel();
	omp_end(OMP_BARRIER);
	return cancelled;
}

RT_EXPORT void GOMP_taskwait(void)
{
	NEXT(GOMP_taskwait);
	if (!recording()) {
		next_GOMP_taskwait();
		return;
	}
	omp_begin(OMP_TASKWAIT, NULL, 0);
	next_GOMP_taskwait();
	omp_end(OMP_TASKWAIT);
}

/* The group's tasks are waited for at its end. */
RT_EXPORT void GOMP_taskgroup_end(void)
{
	NEXT(GOMP_taskgroup_end);
	if (!recording()) {
		next_GOMP_taskgroup_end();
		return;
	}
	omp_begin(OMP_TASKGROUP, NULL, 0);
	next_GOMP_taskgroup_end();
	omp_end(OMP_TASKGROUP);
}

/* A critical section: "omp critical" from the request to the release, "omp critical wait"
 * inside it until the lock is held. */
static void critical_acquire(void (*acquire)(void **), void (*plain)(void), void **pptr)
{
	bool on = recording();

	if (on) {
		omp_begin(OMP_CRITICAL, NULL, 0);
		omp_begin(OMP_CRITICAL_WAIT, NULL, 0);
	}
	if (acquire)
		acquire(pptr);
	else
		plain();
	if (on)
		omp_end(OMP_CRITICAL_WAIT);
}

RT_EXPORT void GOMP_critical_start(void)
{
	NEXT(GOMP_critical_start);
	critical_acquire(NULL, next_GOMP_critical_start, NULL);
}

RT_EXPORT void GOMP_critical_end(void)
{
	NEXT(GOMP_critical_end);
	next_GOMP_critical_end();
	end(OMP_CRITICAL);
}

RT_EXPORT void GOMP_critical_name_start(void **pptr)
{
	NEXT(GOMP_critical_name_start);
	critical_acquire(next_GOMP_critical_name_start, NULL, pptr);
}

RT_EXPORT void GOMP_critical_name_end(void **pptr)
{
	NEXT(GOMP_critical_name_end);
	next_GOMP_critical_name_end(pptr);
	end(OMP_CRITICAL);
}

/* Locks of the OpenMP API (nest locks are left out, as with OMPT): the region from the request
 * to the release, its wait inside it. */
RT_EXPORT void omp_set_lock(void *lock);
RT_EXPORT void omp_set_lock(void *lock)
{
	bool on = recording();

	NEXT(omp_set_lock);
	if (on) {
		omp_begin(OMP_LOCK, NULL, 0);
		omp_begin(OMP_LOCK_WAIT, NULL, 0);
	}
	next_omp_set_lock(lock);
	if (on)
		omp_end(OMP_LOCK_WAIT);
}

RT_EXPORT int omp_test_lock(void *lock);
RT_EXPORT int omp_test_lock(void *lock)
{
	int held;

	NEXT(omp_test_lock);
	held = next_omp_test_lock(lock);
	if (held && recording())
		omp_begin(OMP_LOCK, NULL, 0);
	return held;
}

RT_EXPORT void omp_unset_lock(void *lock);
RT_EXPORT void omp_unset_lock(void *lock)
{
	NEXT(omp_unset_lock);
	next_omp_unset_lock(lock);
	end(OMP_LOCK);
}

/* An ordered block: its wait is for the iterations before it. */
RT_EXPORT void GOMP_ordered_start(void);
RT_EXPORT void GOMP_ordered_start(void)
{
	bool on = recording();

	NEXT(GOMP_ordered_start);
	if (on) {
		omp_begin(OMP_ORDERED, NULL, 0);
		omp_begin(OMP_ORDERED_WAIT, NULL, 0);
	}
	next_GOMP_ordered_start();
	if (on)
		omp_end(OMP_ORDERED_WAIT);
}

RT_EXPORT void GOMP_ordered_end(void);
RT_EXPORT void GOMP_ordered_end(void)
{
	NEXT(GOMP_ordered_end);
	next_GOMP_ordered_end();
	end(OMP_ORDERED);
}

/* A taskloop, on the thread that encounters it: making its tasks and (without nogroup) waiting
 * for them. Its tasks are not followed: libgomp writes each task's bounds at the start of
 * its data, where the task trampoline's head would be. */
RT_EXPORT void GOMP_taskloop(gomp_fn fn, void *data, gomp_cpyfn cpyfn, long arg_size,
			     long arg_align, unsigned flags, unsigned long num_tasks, int priority,
			     long start, long stop, long step);
RT_EXPORT void GOMP_taskloop(gomp_fn fn, void *data, gomp_cpyfn cpyfn, long arg_size,
			     long arg_align, unsigned flags, unsigned long num_tasks, int priority,
			     long start, long stop, long step)
{
	bool on = recording();

	NEXT(GOMP_taskloop);
	if (on) {
		struct omp_arg args[1] = { OMP_U(iterations, trip_count(start, stop, step)) };

		omp_begin(OMP_TASKLOOP, args, 1);
	}
	next_GOMP_taskloop(fn, data, cpyfn, arg_size, arg_align, flags, num_tasks, priority, start,
			   stop, step);
	if (on)
		omp_end(OMP_TASKLOOP);
}

/* ---- explicit tasks ---- */

#define TASK_STAGE 1024 /* tasks with more firstprivate data than this are not followed */

/* The task's data as handed to libgomp: the outlined function and where the program's data
 * starts (at the task's own alignment), then that data, which libgomp copies with it. */
struct task_head {
	gomp_fn fn;
	size_t offset;
};

static void explicit_task(void *arg)
{
	const struct task_head *h = arg;

	omp_begin(OMP_TASK, NULL, 0);
	h->fn((char *)arg + h->offset);
	omp_end(OMP_TASK);
}

typedef void (*gomp_task_fn)(gomp_fn, void *, gomp_cpyfn, long, long, bool, unsigned, void **, int,
			     void *);

/* The task handed on with its function in front of its data. Apart from GOMP_task so that
 * tasks not followed do not pay for the stage on their stack (undeferred tasks nest). */
static __attribute__((noinline)) void staged_task(gomp_task_fn next, gomp_fn fn, void *data,
						  long arg_size, size_t align, size_t head,
						  bool if_clause, unsigned flags, void **depend,
						  int priority, void *detach)
{
	_Alignas(64) char stage[TASK_STAGE];

	((struct task_head *)stage)->fn = fn;
	((struct task_head *)stage)->offset = head;
	if (arg_size)
		memcpy(stage + head, data, (size_t)arg_size);
	next(explicit_task, stage, NULL, (long)(head + (size_t)arg_size), (long)align, if_clause,
	     flags, depend, priority, detach);
}

RT_EXPORT void GOMP_task(gomp_fn fn, void *data, gomp_cpyfn cpyfn, long arg_size, long arg_align,
			 bool if_clause, unsigned flags, void **depend, int priority, void *detach)
{
	size_t align, head;

	NEXT(GOMP_task);
	/* Data with a copy function (C++ firstprivate objects) is laid out by that function;
	 * such tasks, and alignments beyond the stage's, run as they are, unrecorded. */
	align = arg_align > (long)sizeof(struct task_head) ? (size_t)arg_align
							   : sizeof(struct task_head);
	head = (sizeof(struct task_head) + align - 1) / align * align;
	if (!recording() || cpyfn || arg_size < 0 || arg_align > 64 ||
	    head + (size_t)arg_size > TASK_STAGE) {
		next_GOMP_task(fn, data, cpyfn, arg_size, arg_align, if_clause, flags, depend,
			       priority, detach);
		return;
	}
	staged_task(next_GOMP_task, fn, data, arg_size, align, head, if_clause, flags, depend,
		    priority, detach);
}
