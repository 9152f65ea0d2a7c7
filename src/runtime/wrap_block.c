/* SPDX-License-Identifier: MIT */
/*
 * Blocking calls that a signal handler would cut short even with SA_RESTART: sleeps, poll,
 * select, epoll, sigsuspend, sigwaitinfo, sem_timedwait (see signal(7)). A wall-clock
 * sampler interrupts blocked threads, so without these wrappers sleep(1) could return early
 * under syscope. While such a call blocks, the sampler signals are blocked too; the sample
 * that comes due is taken when the call returns, and its weight covers the time blocked.
 *
 * Only active when a sampler that can interrupt blocked threads is on (rt_guard_blocking):
 * the perf CPU-time sampler only fires while the thread runs in user space.
 */
#include "rt.h"

#include <errno.h>
#include <poll.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#define REAL(name) real_##name
#define DECLARE_REAL(ret, name, ...) static ret (*real_##name)(__VA_ARGS__)
#define RESOLVE(name)                                                                 \
	do {                                                                          \
		if (!real_##name)                                                     \
			real_##name = (__typeof__(real_##name))rt_real_lookup(#name); \
	} while (0)

static bool guard_begin(sigset_t *old)
{
	sigset_t block;

	if (!atomic_load_explicit(&rt_guard_blocking, memory_order_relaxed) || !rt_active())
		return false;
	rt_signals_sampler_set(&block);
	return !RT_REAL(pthread_sigmask)(SIG_BLOCK, &block, old);
}

static void guard_end(bool on, const sigset_t *old)
{
	if (on) {
		int saved_errno = errno;

		rt_real.pthread_sigmask(SIG_SETMASK, old, NULL);
		errno = saved_errno;
	}
}

/* For calls that take a signal mask of their own: the same mask plus the sampler signals. */
static const sigset_t *guarded_mask(const sigset_t *mask, sigset_t *copy)
{
	sigset_t block;

	if (!atomic_load_explicit(&rt_guard_blocking, memory_order_relaxed) || !rt_active())
		return mask;
	if (mask)
		*copy = *mask;
	else
		RT_REAL(pthread_sigmask)(SIG_BLOCK, NULL, copy);
	rt_signals_sampler_set(&block);
	for (int s = 1; s < _NSIG; s++)
		if (sigismember(&block, s))
			sigaddset(copy, s);
	return copy;
}

/* Wrap `call` (an expression using the real function) between guard_begin and guard_end. */
#define GUARDED(type, call)                    \
	do {                                   \
		sigset_t old_;                 \
		bool on_ = guard_begin(&old_); \
		type rc_ = (call);             \
		guard_end(on_, &old_);         \
		return rc_;                    \
	} while (0)

DECLARE_REAL(int, nanosleep, const struct timespec *, struct timespec *);
RT_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	RESOLVE(nanosleep);
	GUARDED(int, REAL(nanosleep)(req, rem));
}

DECLARE_REAL(int, clock_nanosleep, clockid_t, int, const struct timespec *, struct timespec *);
RT_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
			      struct timespec *rem)
{
	RESOLVE(clock_nanosleep);
	GUARDED(int, REAL(clock_nanosleep)(clock, flags, req, rem));
}

DECLARE_REAL(int, usleep, useconds_t);
RT_EXPORT int usleep(useconds_t usec)
{
	RESOLVE(usleep);
	GUARDED(int, REAL(usleep)(usec));
}

DECLARE_REAL(unsigned, sleep, unsigned);
RT_EXPORT unsigned sleep(unsigned seconds)
{
	RESOLVE(sleep);
	GUARDED(unsigned, REAL(sleep)(seconds));
}

DECLARE_REAL(int, pause, void);
RT_EXPORT int pause(void)
{
	RESOLVE(pause);
	GUARDED(int, REAL(pause)());
}

DECLARE_REAL(int, poll, struct pollfd *, nfds_t, int);
RT_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	RESOLVE(poll);
	GUARDED(int, REAL(poll)(fds, nfds, timeout));
}

DECLARE_REAL(int, ppoll, struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
RT_EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo,
		    const sigset_t *mask)
{
	sigset_t copy;

	RESOLVE(ppoll);
	return REAL(ppoll)(fds, nfds, tmo, guarded_mask(mask, &copy));
}

DECLARE_REAL(int, select, int, fd_set *, fd_set *, fd_set *, struct timeval *);
RT_EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tmo)
{
	RESOLVE(select);
	GUARDED(int, REAL(select)(n, r, w, e, tmo));
}

DECLARE_REAL(int, pselect, int, fd_set *, fd_set *, fd_set *, const struct timespec *,
	     const sigset_t *);
RT_EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo,
		      const sigset_t *mask)
{
	sigset_t copy;

	RESOLVE(pselect);
	return REAL(pselect)(n, r, w, e, tmo, guarded_mask(mask, &copy));
}

DECLARE_REAL(int, epoll_wait, int, struct epoll_event *, int, int);
RT_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	RESOLVE(epoll_wait);
	GUARDED(int, REAL(epoll_wait)(epfd, ev, max, timeout));
}

DECLARE_REAL(int, epoll_pwait, int, struct epoll_event *, int, int, const sigset_t *);
RT_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
			  const sigset_t *mask)
{
	sigset_t copy;

	RESOLVE(epoll_pwait);
	return REAL(epoll_pwait)(epfd, ev, max, timeout, guarded_mask(mask, &copy));
}

DECLARE_REAL(int, sigsuspend, const sigset_t *);
RT_EXPORT int sigsuspend(const sigset_t *mask)
{
	sigset_t copy;

	RESOLVE(sigsuspend);
	return REAL(sigsuspend)(guarded_mask(mask, &copy));
}

DECLARE_REAL(int, sigwaitinfo, const sigset_t *, siginfo_t *);
RT_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	RESOLVE(sigwaitinfo);
	GUARDED(int, REAL(sigwaitinfo)(set, info));
}

DECLARE_REAL(int, sigtimedwait, const sigset_t *, siginfo_t *, const struct timespec *);
RT_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *tmo)
{
	RESOLVE(sigtimedwait);
	GUARDED(int, REAL(sigtimedwait)(set, info, tmo));
}

DECLARE_REAL(int, sem_timedwait, sem_t *, const struct timespec *);
RT_EXPORT int sem_timedwait(sem_t *sem, const struct timespec *abstime)
{
	RESOLVE(sem_timedwait);
	GUARDED(int, REAL(sem_timedwait)(sem, abstime));
}

DECLARE_REAL(int, sem_wait, sem_t *);
RT_EXPORT int sem_wait(sem_t *sem)
{
	RESOLVE(sem_wait);
	GUARDED(int, REAL(sem_wait)(sem));
}
