/* SPDX-License-Identifier: MIT */
/*
 * Descriptors the runtime owns (the raw file, perf events) live at high numbers, close on
 * exec, and are protected from programs that close every descriptor (daemons, shells,
 * sandboxes): close() of one of ours pretends to succeed, close_range()/closefrom() skip
 * them, and dup2()/dup3() onto one of ours is let through but remembered, so we never later
 * close or ioctl the program's file by mistake.
 *
 * Libraries syscope calls (libunwind keeps a pipe to validate addresses, and closes and
 * recreates it when a read from it fails) reach these wrappers too, since libsyscope.so is
 * preloaded. While syscope's own code runs on a thread (rt_fd_enter_library), pipes made
 * there become ours like the raw file (high, spared by the program's close loops), and a
 * close() there really closes ours but never a number the program took over: otherwise the
 * library would close the program's files, or take their numbers, once the program closed
 * every descriptor.
 */
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <unistd.h>

#define FD_TRACKED 65536 /* descriptors above this are not protected */
#define WORD_BITS (8 * sizeof(unsigned long))

static _Atomic unsigned long ours[FD_TRACKED / WORD_BITS];
static _Atomic unsigned long clobbered[FD_TRACKED / WORD_BITS];
static _Atomic unsigned long library[FD_TRACKED / WORD_BITS]; /* a library's, kept at fork */

static void set_bit(_Atomic unsigned long *map, int fd, bool on)
{
	unsigned long bit = 1ul << ((unsigned)fd % WORD_BITS);

	if (on)
		atomic_fetch_or(&map[(unsigned)fd / WORD_BITS], bit);
	else
		atomic_fetch_and(&map[(unsigned)fd / WORD_BITS], ~bit);
}

static bool test_bit(_Atomic unsigned long *map, int fd)
{
	if (fd < 0 || fd >= FD_TRACKED)
		return false;
	return atomic_load_explicit(&map[(unsigned)fd / WORD_BITS], memory_order_relaxed) &
	       (1ul << ((unsigned)fd % WORD_BITS));
}

bool rt_fd_is_ours(int fd)
{
	return test_bit(ours, fd);
}

bool rt_fd_was_clobbered(int fd)
{
	return test_bit(clobbered, fd);
}

/* Lowest number we move our descriptors to: out of the way of programs that expect small
 * numbers, below the soft limit so the move cannot fail for that reason. */
static int high_base(void)
{
	struct rlimit rl;
	rlim_t lim = 1024;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		lim = rl.rlim_cur;
	if (lim > 4096)
		lim = 4096;
	return lim / 2 > 10 ? (int)(lim / 2) : 10;
}

int rt_fd_adopt(int fd)
{
	static int base;
	int nfd;

	if (fd < 0)
		return fd;
	if (!base)
		base = high_base();
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, base);
	if (nfd >= 0) {
		RT_REAL(close)(fd);
		fd = nfd;
	} else {
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	if (fd < FD_TRACKED) {
		set_bit(clobbered, fd, false);
		set_bit(ours, fd, true);
	}
	return fd;
}

void rt_fd_release(int fd)
{
	if (fd < 0)
		return;
	if (test_bit(clobbered, fd)) {
		set_bit(clobbered, fd, false); /* the number is the program's now */
		return;
	}
	set_bit(ours, fd, false);
	set_bit(library, fd, false);
	RT_REAL(close)(fd);
}

void rt_fd_close_all_inherited(int keep)
{
	for (unsigned w = 0; w < FD_TRACKED / WORD_BITS; w++) {
		unsigned long bits = atomic_exchange(&ours[w], 0);

		atomic_store(&clobbered[w], 0);
		while (bits) {
			int fd = (int)(w * WORD_BITS) + __builtin_ctzl(bits);

			bits &= bits - 1;
			/* A library's descriptors are in its own state, which the child inherits. */
			if (fd == keep || test_bit(library, fd))
				set_bit(ours, fd, true);
			else
				RT_REAL(close)(fd);
		}
	}
}

/* The number is no longer ours (closed behind our back), and must not be closed by us. */
void rt_fd_forget(int fd)
{
	if (fd < 0 || fd >= FD_TRACKED)
		return;
	set_bit(ours, fd, false);
	set_bit(clobbered, fd, false);
	set_bit(library, fd, false);
}

int rt_fd_enter_library(void)
{
	return rt_self.in_library++;
}

void rt_fd_leave_library(int saved)
{
	rt_self.in_library = saved;
}

/* close() from a library syscope called: its own descriptors (ours, or files it opened and
 * closes itself), never one the program put on a number of ours (dup2 onto it). */
static int library_close(int fd)
{
	if (test_bit(clobbered, fd)) {
		errno = EBADF;
		return -1;
	}
	if (test_bit(ours, fd)) {
		set_bit(ours, fd, false);
		set_bit(library, fd, false);
	}
	return RT_REAL(close)(fd);
}

RT_EXPORT int close(int fd)
{
	if (rt_self.in_library)
		return library_close(fd);
	if (test_bit(ours, fd))
		return 0; /* the program never knew about it; it stays ours */
	return RT_REAL(close)(fd);
}

static int adopt_pair(int rc, int fds[2])
{
	if (rc == 0 && rt_self.in_library) {
		for (int i = 0; i < 2; i++) {
			fds[i] = rt_fd_adopt(fds[i]);
			if (fds[i] >= 0 && fds[i] < FD_TRACKED)
				set_bit(library, fds[i], true);
		}
	}
	return rc;
}

RT_EXPORT int pipe2(int fds[2], int flags)
{
	return adopt_pair(RT_REAL(pipe2)(fds, flags), fds);
}

RT_EXPORT int pipe(int fds[2])
{
	return adopt_pair(RT_REAL(pipe)(fds), fds);
}

/* Close [first, last] except our descriptors, as close_range(2) with `flags` would. */
static int close_range_sparing_ours(unsigned first, unsigned last, int flags)
{
	unsigned lo = first;
	int rc = 0;

	if (!RT_REAL(close_range)) {
		errno = ENOSYS;
		return -1;
	}
	for (unsigned fd = first; fd <= last && fd < FD_TRACKED; fd++) {
		if (!test_bit(ours, (int)fd))
			continue;
		if (fd > lo && rt_real.close_range(lo, fd - 1, flags))
			rc = -1;
		lo = fd + 1;
	}
	if (lo <= last && lo >= first && rt_real.close_range(lo, last, flags))
		rc = -1;
	return rc;
}

RT_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	if (first > last) {
		errno = EINVAL;
		return -1;
	}
	return close_range_sparing_ours(first, last, flags);
}

RT_EXPORT void closefrom(int lowfd)
{
	if (lowfd < 0)
		lowfd = 0;
	if (close_range_sparing_ours((unsigned)lowfd, ~0u, 0))
		for (int fd = lowfd; fd < FD_TRACKED; fd++) /* old kernels: slow path */
			if (!test_bit(ours, fd))
				RT_REAL(close)(fd);
}

static void note_clobber(int newfd, int oldfd)
{
	if (newfd != oldfd && test_bit(ours, newfd)) {
		set_bit(ours, newfd, false);
		set_bit(library, newfd, false);
		set_bit(clobbered, newfd, true);
	}
}

RT_EXPORT int dup2(int oldfd, int newfd)
{
	int rc = RT_REAL(dup2)(oldfd, newfd);

	if (rc >= 0)
		note_clobber(newfd, oldfd);
	return rc;
}

RT_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	int rc = RT_REAL(dup3)(oldfd, newfd, flags);

	if (rc >= 0)
		note_clobber(newfd, oldfd);
	return rc;
}
