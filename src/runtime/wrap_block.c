/* SPDX-License-Identifier: MIT */
/*
 * Blocking calls that a signal handler would cut short even with SA_RESTART, every one that
 * signal(7) lists: sleeps, pause, poll, select, epoll, sigsuspend, sigwaitinfo, sem waits,
 * System V semaphores and messages, and socket calls on a socket with a timeout
 * (SO_RCVTIMEO, SO_SNDTIMEO). A wall-clock sampler interrupts blocked threads, so without
 * these wrappers sleep(1) could return early under syscope. While such a call blocks, the
 * sampler signals are blocked too; the sample that comes due is taken when the call returns,
 * and its weight covers the time blocked. (io_getevents has no libc entry point to wrap.)
 *
 * Socket calls and read/write: blocking around every one would cost two system calls each,
 * so only sockets known to have a timeout are guarded: those the program gave one with
 * setsockopt and those accepted from them. A socket we did not see get its timeout (a
 * duplicate, one inherited or received) is learned the first time one of our samples alone
 * cuts a call on it short: the call is then made again, guarded, as the kernel would have
 * gone on without us.
 *
 * Only active when a sampler that can interrupt blocked threads is on (rt_guard_blocking),
 * and under causal profiling, where a read or write that blocks on a pipe or socket is
 * credited as a wake-up (CAUSAL_IO).
 */
#include "rt.h"
#include "causal/causal.h"
#include "parallel/pthread.h"

#include <errno.h>
#include <poll.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <sys/msg.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static bool guard_wanted(void)
{
	return atomic_load_explicit(&rt_guard_blocking, memory_order_relaxed) && rt_active();
}

static bool guard_begin(sigset_t *old)
{
	sigset_t block;

	if (!guard_wanted())
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

	if (!guard_wanted())
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

RT_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	GUARDED(int, RT_REAL(nanosleep)(req, rem));
}

RT_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
			      struct timespec *rem)
{
	GUARDED(int, RT_REAL(clock_nanosleep)(clock, flags, req, rem));
}

RT_EXPORT int usleep(useconds_t usec)
{
	GUARDED(int, RT_REAL(usleep)(usec));
}

RT_EXPORT unsigned sleep(unsigned seconds)
{
	GUARDED(unsigned, RT_REAL(sleep)(seconds));
}

RT_EXPORT int pause(void)
{
	GUARDED(int, RT_REAL(pause)());
}

RT_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	GUARDED(int, RT_REAL(poll)(fds, nfds, timeout));
}

RT_EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo,
		    const sigset_t *mask)
{
	sigset_t copy;

	return RT_REAL(ppoll)(fds, nfds, tmo, guarded_mask(mask, &copy));
}

RT_EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tmo)
{
	GUARDED(int, RT_REAL(select)(n, r, w, e, tmo));
}

RT_EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo,
		      const sigset_t *mask)
{
	sigset_t copy;

	return RT_REAL(pselect)(n, r, w, e, tmo, guarded_mask(mask, &copy));
}

RT_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	GUARDED(int, RT_REAL(epoll_wait)(epfd, ev, max, timeout));
}

RT_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
			  const sigset_t *mask)
{
	sigset_t copy;

	return RT_REAL(epoll_pwait)(epfd, ev, max, timeout, guarded_mask(mask, &copy));
}

RT_EXPORT int sigsuspend(const sigset_t *mask)
{
	sigset_t copy;

	return RT_REAL(sigsuspend)(guarded_mask(mask, &copy));
}

RT_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	GUARDED(int, RT_REAL(sigwaitinfo)(set, info));
}

RT_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *tmo)
{
	GUARDED(int, RT_REAL(sigtimedwait)(set, info, tmo));
}

/*
 * With --parallel=pthread, a semaphore wait also becomes a region when it blocked long
 * enough (parallel/pthread.c); sem_trywait first, so one that does not block is not timed.
 * Under causal profiling a wait that blocked and was ended by a post is credited with the
 * delays inserted meanwhile (causal/block.c).
 */
#define SEM_WAIT(call, sem, wait)                                                           \
	do {                                                                                \
		sigset_t sem_old_;                                                          \
		uint64_t sem_start_;                                                        \
		int sem_saved_ = errno, sem_rc_, sem_causal_;                               \
		bool sem_on_;                                                               \
		if (!rt_pthread_tracing() && !rt_causal_blocking())                         \
			GUARDED(int, wait);                                                 \
		if (!RT_REAL(sem_trywait)(sem))                                             \
			return 0;                                                           \
		errno = sem_saved_;                                                         \
		sem_causal_ = __syscope_causal_pre_block();                                 \
		sem_start_ = rt_now_ns();                                                   \
		sem_on_ = guard_begin(&sem_old_);                                           \
		sem_rc_ = (wait);                                                           \
		guard_end(sem_on_, &sem_old_);                                              \
		if (sem_causal_)                                                            \
			__syscope_causal_post_block(sem_rc_ == 0);                          \
		rt_pthread_waited(call, "semaphore", sem, sem_start_, sem_rc_ ? errno : 0); \
		return sem_rc_;                                                             \
	} while (0)

RT_EXPORT int sem_timedwait(sem_t *sem, const struct timespec *abstime)
{
	SEM_WAIT("sem_timedwait", sem, RT_REAL(sem_timedwait)(sem, abstime));
}

RT_EXPORT int sem_wait(sem_t *sem)
{
	SEM_WAIT("sem_wait", sem, RT_REAL(sem_wait)(sem));
}

RT_EXPORT int sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *abstime)
{
	SEM_WAIT("sem_clockwait", sem, RT_REAL(sem_clockwait)(sem, clock, abstime));
}

RT_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo,
			   const sigset_t *mask)
{
	sigset_t copy;

	return RT_REAL(epoll_pwait2)(epfd, ev, max, tmo, guarded_mask(mask, &copy));
}

/* ---- System V IPC: never restarted after a handler ---- */

RT_EXPORT int semop(int id, struct sembuf *ops, size_t n)
{
	GUARDED(int, RT_REAL(semop)(id, ops, n));
}

RT_EXPORT int semtimedop(int id, struct sembuf *ops, size_t n, const struct timespec *tmo)
{
	GUARDED(int, RT_REAL(semtimedop)(id, ops, n, tmo));
}

RT_EXPORT ssize_t msgrcv(int id, void *msg, size_t size, long type, int flags)
{
	GUARDED(ssize_t, RT_REAL(msgrcv)(id, msg, size, type, flags));
}

RT_EXPORT int msgsnd(int id, const void *msg, size_t size, int flags)
{
	GUARDED(int, RT_REAL(msgsnd)(id, msg, size, flags));
}

/* ---- sockets with a timeout ---- */

#define TIMED_FD_LIMIT 65536
#define BITS_PER_WORD (8 * sizeof(unsigned long))

/* Descriptors known to be sockets with a timeout; a stale bit only costs a guard. */
static _Atomic unsigned long timed_sockets[TIMED_FD_LIMIT / BITS_PER_WORD];

enum sock_dir {
	SOCK_RECV,
	SOCK_SEND
};

static bool timed_socket_known(int fd)
{
	return fd >= 0 && fd < TIMED_FD_LIMIT &&
	       (atomic_load_explicit(&timed_sockets[fd / BITS_PER_WORD], memory_order_relaxed) &
		(1ul << (fd % BITS_PER_WORD)));
}

static void mark_timed_socket(int fd, bool timed)
{
	unsigned long bit;

	if (fd < 0 || fd >= TIMED_FD_LIMIT)
		return;
	bit = 1ul << (fd % BITS_PER_WORD);
	if (timed)
		atomic_fetch_or_explicit(&timed_sockets[fd / BITS_PER_WORD], bit,
					 memory_order_relaxed);
	else
		atomic_fetch_and_explicit(&timed_sockets[fd / BITS_PER_WORD], ~bit,
					  memory_order_relaxed);
}

/*
 * After a call on `fd` failed with EINTR: was it cut short by our samples alone (no signal
 * reached the program's handlers through us), on a socket whose timeout keeps the kernel from
 * restarting it? Then the socket is remembered, and the caller makes the call again, guarded.
 */
static bool cut_short_by_sample(int fd, enum sock_dir dir, unsigned samples_before,
				unsigned program_before)
{
	int saved_errno = errno;
	struct timeval tv = { 0 };
	socklen_t len = sizeof(tv);
	bool ours = rt_sampler_interrupts != samples_before &&
		    rt_program_interrupts == program_before &&
		    !getsockopt(fd, SOL_SOCKET, dir == SOCK_RECV ? SO_RCVTIMEO : SO_SNDTIMEO, &tv,
				&len) &&
		    (tv.tv_sec || tv.tv_usec);

	if (ours)
		mark_timed_socket(fd, true);
	errno = saved_errno;
	return ours;
}

/* Under causal profiling, a call about to block on a pipe or socket waits for the other end:
 * made once, guarded, and credited as a wake-up when it returns (causal/block.c). A write
 * pays the writer's owed delays first, since it may wake a reader. */
#define CAUSAL_IO(type, fd, dir, call)                                     \
	do {                                                               \
		sigset_t cold_;                                            \
		bool con_;                                                 \
		type crc_;                                                 \
		if (!rt_causal_blocking())                                 \
			break;                                             \
		if ((dir) == SOCK_SEND)                                    \
			rt_causal_catch_up(); /* it may wake the reader */ \
		if (!rt_causal_io_begin(fd, (dir) == SOCK_SEND))           \
			break;                                             \
		con_ = guard_begin(&cold_);                                \
		crc_ = (call);                                             \
		guard_end(con_, &cold_);                                   \
		rt_causal_io_end(crc_ >= 0);                               \
		return crc_;                                               \
	} while (0)

/* A call on descriptor `fd` that only a socket timeout makes interruptible. */
#define SOCKET_CALL(type, fd, dir, call)                              \
	do {                                                          \
		unsigned samples_, program_;                          \
		type rc1_;                                            \
		CAUSAL_IO(type, fd, dir, call);                       \
		if (!guard_wanted())                                  \
			return (call);                                \
		if (timed_socket_known(fd))                           \
			GUARDED(type, call);                          \
		samples_ = rt_sampler_interrupts;                     \
		program_ = rt_program_interrupts;                     \
		rc1_ = (call);                                        \
		if (rc1_ == -1 && errno == EINTR &&                   \
		    cut_short_by_sample(fd, dir, samples_, program_)) \
			GUARDED(type, call);                          \
		return rc1_;                                          \
	} while (0)

static bool is_timeout_option(int level, int name)
{
	return level == SOL_SOCKET && (name == SO_RCVTIMEO || name == SO_SNDTIMEO
#ifdef SO_RCVTIMEO_NEW
				       || name == SO_RCVTIMEO_NEW || name == SO_SNDTIMEO_NEW
#endif
#ifdef SO_RCVTIMEO_OLD
				       || name == SO_RCVTIMEO_OLD || name == SO_SNDTIMEO_OLD
#endif
				      );
}

static bool nonzero(const void *value, socklen_t len)
{
	const unsigned char *b = value;

	for (socklen_t i = 0; value && i < len; i++)
		if (b[i])
			return true;
	return false;
}

RT_EXPORT int setsockopt(int fd, int level, int name, const void *value, socklen_t len)
{
	int rc;

	rc = RT_REAL(setsockopt)(fd, level, name, value, len);
	if (!rc && is_timeout_option(level, name) && nonzero(value, len))
		mark_timed_socket(fd, true);
	return rc;
}

/* An accepted socket inherits the listening socket's timeouts. */
static int accepted(int listener, int fd)
{
	if (fd >= 0)
		mark_timed_socket(fd, timed_socket_known(listener));
	return fd;
}

static int accept_call(int fd, __SOCKADDR_ARG addr, socklen_t *len)
{
	SOCKET_CALL(int, fd, SOCK_RECV, RT_REAL(accept)(fd, addr, len));
}

RT_EXPORT int accept(int fd, __SOCKADDR_ARG addr, socklen_t *restrict len)
{
	return accepted(fd, accept_call(fd, addr, len));
}

static int accept4_call(int fd, __SOCKADDR_ARG addr, socklen_t *len, int flags)
{
	SOCKET_CALL(int, fd, SOCK_RECV, RT_REAL(accept4)(fd, addr, len, flags));
}

RT_EXPORT int accept4(int fd, __SOCKADDR_ARG addr, socklen_t *restrict len, int flags)
{
	return accepted(fd, accept4_call(fd, addr, len, flags));
}

/* connect cannot be made again once cut short (the connection goes on), so it is always
 * guarded: a blocking connect with SO_SNDTIMEO would otherwise return EINTR. */
RT_EXPORT int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t len)
{
	GUARDED(int, RT_REAL(connect)(fd, addr, len));
}

RT_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	SOCKET_CALL(ssize_t, fd, SOCK_RECV, RT_REAL(recv)(fd, buf, n, flags));
}

RT_EXPORT ssize_t recvfrom(int fd, void *restrict buf, size_t n, int flags, __SOCKADDR_ARG addr,
			   socklen_t *restrict len)
{
	SOCKET_CALL(ssize_t, fd, SOCK_RECV, RT_REAL(recvfrom)(fd, buf, n, flags, addr, len));
}

RT_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	SOCKET_CALL(ssize_t, fd, SOCK_RECV, RT_REAL(recvmsg)(fd, msg, flags));
}

/* With a timeout of its own, recvmmsg is never restarted, whatever the socket's timeouts. */
RT_EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned n, int flags, struct timespec *tmo)
{
	if (tmo)
		GUARDED(int, RT_REAL(recvmmsg)(fd, v, n, flags, tmo));
	SOCKET_CALL(int, fd, SOCK_RECV, RT_REAL(recvmmsg)(fd, v, n, flags, tmo));
}

RT_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	SOCKET_CALL(ssize_t, fd, SOCK_SEND, RT_REAL(send)(fd, buf, n, flags));
}

RT_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG addr,
			 socklen_t len)
{
	SOCKET_CALL(ssize_t, fd, SOCK_SEND, RT_REAL(sendto)(fd, buf, n, flags, addr, len));
}

RT_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	SOCKET_CALL(ssize_t, fd, SOCK_SEND, RT_REAL(sendmsg)(fd, msg, flags));
}

RT_EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags)
{
	SOCKET_CALL(int, fd, SOCK_SEND, RT_REAL(sendmmsg)(fd, v, n, flags));
}

/* read and write on a socket behave as recv and send. */
RT_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	SOCKET_CALL(ssize_t, fd, SOCK_RECV, RT_REAL(read)(fd, buf, n));
}

RT_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	SOCKET_CALL(ssize_t, fd, SOCK_RECV, RT_REAL(readv)(fd, iov, n));
}

RT_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	SOCKET_CALL(ssize_t, fd, SOCK_SEND, RT_REAL(write)(fd, buf, n));
}

RT_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	SOCKET_CALL(ssize_t, fd, SOCK_SEND, RT_REAL(writev)(fd, iov, n));
}

/* The fortified entry points (_FORTIFY_SOURCE) that programs call instead (real.h). */

RT_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	SOCKET_CALL(ssize_t, fd, SOCK_RECV, RT_REAL(__read_chk)(fd, buf, n, buflen));
}

RT_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	SOCKET_CALL(ssize_t, fd, SOCK_RECV, RT_REAL(__recv_chk)(fd, buf, n, buflen, flags));
}

RT_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
				 __SOCKADDR_ARG addr, socklen_t *len)
{
	SOCKET_CALL(ssize_t, fd, SOCK_RECV,
		    RT_REAL(__recvfrom_chk)(fd, buf, n, buflen, flags, addr, len));
}

/*
 * The runtime itself reads and writes (a PMC group in the sampler's handler, /proc files),
 * and those calls reach the wrappers above: resolve them before any sampler is armed (a
 * priority before the runtime's constructor), since dlsym is not async-signal-safe.
 */
__attribute__((constructor(101))) static void resolve_io_calls(void)
{
	rt_real_resolve();
}
