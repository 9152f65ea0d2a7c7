/* SPDX-License-Identifier: MIT */
/*
 * libsyscope-pthread.so: the wrappers of --parallel=pthread, a library of their own that the
 * launcher puts in LD_PRELOAD only when pthread tracing is asked for, so that without it no
 * lock of the program goes through syscope. They time the waits; libsyscope.so records them
 * (parallel/pthread.c, through its __syscope_pthread_* functions). Loaded without
 * libsyscope.so, or while it is not recording, every wrapper passes straight through.
 *
 * An uncontended lock costs no clock reading: the wrapper first tries the lock
 * (pthread_mutex_trylock, tryrdlock, trywrlock) and only when it is busy takes the time and
 * blocks in the real call. Whatever a try returns other than EBUSY is what the blocking call
 * would have returned at once (0, EOWNERDEAD of a robust mutex, EAGAIN of a recursive count,
 * EINVAL), so it is returned as is. A condition-variable wait covers the re-acquisition of
 * its mutex (inside the C library, not through these wrappers). Semaphore waits are wrapped
 * in libsyscope.so already (wrap_block.c), and timed there.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Built a second time into libsyscope.so for syscope attach (attach_wrap.c), under other
 * names that are not exported: there the program's GOT entries are pointed at them. */
#ifndef EXPORT
#define EXPORT __attribute__((visibility("default")))
#endif
#ifndef WRAPPER_NAME
#define WRAPPER_NAME(fn) fn
#endif

/* libsyscope.so's side (parallel/pthread.c); weak: absent, nothing is timed. The flag is
 * read on every lock, so it is a variable: a load, not a call. */
extern int __syscope_pthread_on __attribute__((weak));
bool __syscope_pthread_timing(void) __attribute__((weak));
uint64_t __syscope_pthread_now(void) __attribute__((weak));
void __syscope_pthread_waited(const char *call, const char *object_name, const void *object,
			      uint64_t start, int error) __attribute__((weak));
bool __syscope_pthread_index(pthread_t thread, uint32_t *index) __attribute__((weak));
bool __syscope_pthread_tid(uint32_t index, int32_t *tid) __attribute__((weak));
void __syscope_pthread_joined(uint64_t start, bool found, int32_t tid, uint32_t index)
	__attribute__((weak));
/* Causal profiling (causal/block.c): a lock that blocked is a wait another thread ended. */
int __syscope_causal_pre_block(void) __attribute__((weak));
void __syscope_causal_post_block(int woken) __attribute__((weak));
void __syscope_causal_catch_up(void) __attribute__((weak));
/* Set only in causal runs: read inline, so a lock or unlock of any other run makes no call. */
extern int __syscope_causal_on __attribute__((weak));

/* Whether to time waits: tracing is on (the process records; checked again, with pauses,
 * when a wait ends). */
static inline bool timing(void)
{
	return &__syscope_pthread_on && __atomic_load_n(&__syscope_pthread_on, __ATOMIC_RELAXED);
}

/* Causal profiling: what a thread owes is paid before it takes a lock, not while it holds
 * it (a sample inside, or the catch-up at its unlock), which would hold up the others. */
static inline bool causal_on(void)
{
	return &__syscope_causal_on &&
	       __builtin_expect(__atomic_load_n(&__syscope_causal_on, __ATOMIC_RELAXED), 0);
}

static inline void causal_catch_up(void)
{
	if (causal_on())
		__syscope_causal_catch_up();
}

static int causal_pre_block(void)
{
	return causal_on() ? __syscope_causal_pre_block() : 0;
}

static uint64_t now(void)
{
	return __syscope_pthread_now();
}

static void waited(const char *call, const char *object_name, const void *object, uint64_t start,
		   int error)
{
	int saved_errno = errno;

	__syscope_pthread_waited(call, object_name, object, start, error);
	errno = saved_errno;
}

/* ---- the real functions: the next definitions after ours (the C library's) ---- */

/* The condition-variable functions exist twice in glibc; an unversioned lookup may find the
 * old LinuxThreads-compatible one, which must not be mixed with the current layout. */
static void *real_cond(const char *name)
{
	void *p = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2");

	return p ? p : dlsym(RTLD_NEXT, name);
}

static void *real_next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

#define REAL(name) real_##name
#define DECLARE_REAL(ret, name, ...) static ret (*real_##name)(__VA_ARGS__)
#define RESOLVE_WITH(name, how)                                            \
	do {                                                               \
		if (!real_##name)                                          \
			real_##name = (__typeof__(real_##name))how(#name); \
	} while (0)
#define RESOLVE(name) RESOLVE_WITH(name, real_next)

/* ---- joins ---- */

DECLARE_REAL(int, pthread_join, pthread_t, void **);
EXPORT int WRAPPER_NAME(pthread_join)(pthread_t thread, void **ret)
{
	int32_t tid = 0;
	uint32_t index = 0;
	bool found;
	uint64_t start;
	int rc;

	RESOLVE(pthread_join);
	if (!timing() || !__syscope_pthread_timing())
		return REAL(pthread_join)(thread, ret);
	/* Its index before the join (after it, a new thread may have the handle), its id
	 * after (it has surely started then). */
	found = __syscope_pthread_index(thread, &index);
	start = now();
	rc = REAL(pthread_join)(thread, ret);
	found = found && __syscope_pthread_tid(index, &tid);
	__syscope_pthread_joined(start, found, tid, index);
	return rc;
}

/* ---- locks: try first, time only what blocks ---- */

/*
 * A lock wrapper `fn` of the object `o` (its first parameter), trying `try_fn` first. What
 * blocks is timed in fn_blocked, out of line, so that the way through a free lock keeps
 * only `o` across the try.
 */
#define LOCK_WRAPPER(fn, try_fn, object_name, params, args)               \
	static __attribute__((noinline, cold)) int fn##_blocked params    \
	{                                                                 \
		int causal = causal_pre_block();                          \
		uint64_t start = now();                                   \
		int rc = REAL(fn) args;                                   \
		if (causal)                                               \
			__syscope_causal_post_block(rc == 0);             \
		waited(#fn, object_name, o, start, rc);                   \
		return rc;                                                \
	}                                                                 \
	EXPORT int WRAPPER_NAME(fn) params                                \
	{                                                                 \
		int rc;                                                   \
		RESOLVE(fn);                                              \
		RESOLVE(try_fn);                                          \
		if (!timing())                                            \
			return REAL(fn) args;                             \
		causal_catch_up();                                        \
		if (__builtin_expect((rc = REAL(try_fn)(o)) != EBUSY, 1)) \
			return rc;                                        \
		return fn##_blocked args;                                 \
	}

/* The body of a wrapper of a call that always waits (condition variables, barriers). */
#define TIMED_WAIT(call, object_name, object, wait)             \
	do {                                                    \
		int rc_;                                        \
		uint64_t start_;                                \
		if (!timing())                                  \
			return (wait);                          \
		start_ = now();                                 \
		rc_ = (wait);                                   \
		waited(call, object_name, object, start_, rc_); \
		return rc_;                                     \
	} while (0)

DECLARE_REAL(int, pthread_mutex_trylock, pthread_mutex_t *);
DECLARE_REAL(int, pthread_mutex_lock, pthread_mutex_t *);
DECLARE_REAL(int, pthread_mutex_timedlock, pthread_mutex_t *, const struct timespec *);
DECLARE_REAL(int, pthread_mutex_clocklock, pthread_mutex_t *, clockid_t, const struct timespec *);

LOCK_WRAPPER(pthread_mutex_lock, pthread_mutex_trylock, "mutex", (pthread_mutex_t * o), (o))
LOCK_WRAPPER(pthread_mutex_timedlock, pthread_mutex_trylock, "mutex",
	     (pthread_mutex_t * o, const struct timespec *abstime), (o, abstime))
LOCK_WRAPPER(pthread_mutex_clocklock, pthread_mutex_trylock, "mutex",
	     (pthread_mutex_t * o, clockid_t clock, const struct timespec *abstime),
	     (o, clock, abstime))

DECLARE_REAL(int, pthread_rwlock_tryrdlock, pthread_rwlock_t *);
DECLARE_REAL(int, pthread_rwlock_trywrlock, pthread_rwlock_t *);
DECLARE_REAL(int, pthread_rwlock_rdlock, pthread_rwlock_t *);
DECLARE_REAL(int, pthread_rwlock_wrlock, pthread_rwlock_t *);
DECLARE_REAL(int, pthread_rwlock_timedrdlock, pthread_rwlock_t *, const struct timespec *);
DECLARE_REAL(int, pthread_rwlock_timedwrlock, pthread_rwlock_t *, const struct timespec *);
DECLARE_REAL(int, pthread_rwlock_clockrdlock, pthread_rwlock_t *, clockid_t,
	     const struct timespec *);
DECLARE_REAL(int, pthread_rwlock_clockwrlock, pthread_rwlock_t *, clockid_t,
	     const struct timespec *);

LOCK_WRAPPER(pthread_rwlock_rdlock, pthread_rwlock_tryrdlock, "rwlock", (pthread_rwlock_t * o), (o))
LOCK_WRAPPER(pthread_rwlock_wrlock, pthread_rwlock_trywrlock, "rwlock", (pthread_rwlock_t * o), (o))
LOCK_WRAPPER(pthread_rwlock_timedrdlock, pthread_rwlock_tryrdlock, "rwlock",
	     (pthread_rwlock_t * o, const struct timespec *abstime), (o, abstime))
LOCK_WRAPPER(pthread_rwlock_timedwrlock, pthread_rwlock_trywrlock, "rwlock",
	     (pthread_rwlock_t * o, const struct timespec *abstime), (o, abstime))
LOCK_WRAPPER(pthread_rwlock_clockrdlock, pthread_rwlock_tryrdlock, "rwlock",
	     (pthread_rwlock_t * o, clockid_t clock, const struct timespec *abstime),
	     (o, clock, abstime))
LOCK_WRAPPER(pthread_rwlock_clockwrlock, pthread_rwlock_trywrlock, "rwlock",
	     (pthread_rwlock_t * o, clockid_t clock, const struct timespec *abstime),
	     (o, clock, abstime))

/* Causal profiling: a holder pays the delays it owes before it lets a waiter in, so the
 * waiter is not credited with delays nobody paid (Coz's rule; causal/block.c). Causal runs
 * are never attached, so attach's copy of these wrappers (PTHREAD_WRAP_ATTACH) leaves the
 * unlocks alone: an unlock of the attached program costs nothing. */
#ifndef PTHREAD_WRAP_ATTACH
#define UNLOCK_WRAPPER(fn, type)       \
	DECLARE_REAL(int, fn, type *); \
	EXPORT int fn(type *o)         \
	{                              \
		RESOLVE(fn);           \
		causal_catch_up();     \
		return REAL(fn)(o);    \
	}

UNLOCK_WRAPPER(pthread_mutex_unlock, pthread_mutex_t)
UNLOCK_WRAPPER(pthread_rwlock_unlock, pthread_rwlock_t)
#endif

/* ---- condition variables and barriers: always waits ---- */

DECLARE_REAL(int, pthread_cond_wait, pthread_cond_t *, pthread_mutex_t *);
DECLARE_REAL(int, pthread_cond_timedwait, pthread_cond_t *, pthread_mutex_t *,
	     const struct timespec *);
DECLARE_REAL(int, pthread_cond_clockwait, pthread_cond_t *, pthread_mutex_t *, clockid_t,
	     const struct timespec *);
DECLARE_REAL(int, pthread_barrier_wait, pthread_barrier_t *);

EXPORT int WRAPPER_NAME(pthread_cond_wait)(pthread_cond_t *c, pthread_mutex_t *m)
{
	RESOLVE_WITH(pthread_cond_wait, real_cond);
	TIMED_WAIT("pthread_cond_wait", "cond", c, REAL(pthread_cond_wait)(c, m));
}

EXPORT int WRAPPER_NAME(pthread_cond_timedwait)(pthread_cond_t *c, pthread_mutex_t *m,
						const struct timespec *abstime)
{
	RESOLVE_WITH(pthread_cond_timedwait, real_cond);
	TIMED_WAIT("pthread_cond_timedwait", "cond", c,
		   REAL(pthread_cond_timedwait)(c, m, abstime));
}

EXPORT int WRAPPER_NAME(pthread_cond_clockwait)(pthread_cond_t *c, pthread_mutex_t *m,
						clockid_t clock, const struct timespec *abstime)
{
	RESOLVE(pthread_cond_clockwait);
	TIMED_WAIT("pthread_cond_clockwait", "cond", c,
		   REAL(pthread_cond_clockwait)(c, m, clock, abstime));
}

/* PTHREAD_BARRIER_SERIAL_THREAD is a result, not an error: recorded as 0. */
EXPORT int WRAPPER_NAME(pthread_barrier_wait)(pthread_barrier_t *b)
{
	uint64_t start;
	int rc;

	RESOLVE(pthread_barrier_wait);
	if (!timing())
		return REAL(pthread_barrier_wait)(b);
	start = now();
	rc = REAL(pthread_barrier_wait)(b);
	waited("pthread_barrier_wait", "barrier", b, start,
	       rc == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : rc);
	return rc;
}
