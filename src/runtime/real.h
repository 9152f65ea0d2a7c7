/* SPDX-License-Identifier: MIT */
/*
 * The real C library functions behind the runtime's wrappers: one table (rows in real.def),
 * each entry typed as the function itself, resolved once to the next definition after ours
 * (interpose.c). A wrapper calls RT_REAL(name)(...). Not for the unwinding hooks and
 * makecontext, whose definition depends on the caller's scope (rt_real_find, rt.h).
 */
#ifndef SYSCOPE_RUNTIME_REAL_H
#define SYSCOPE_RUNTIME_REAL_H

#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/msg.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* Declared by no header: glibc's program start, and the fortified (_FORTIFY_SOURCE) entry
 * points that programs call instead of read, recv and recvfrom. */
int __libc_start_main(int (*main)(int, char **, char **), int argc, char **argv, void (*init)(void),
		      void (*fini)(void), void (*rtld_fini)(void), void *stack_end);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, __SOCKADDR_ARG addr,
		       socklen_t *len);

struct rt_real {
#define RT_REAL_FN(name) __typeof__(&name) name;
#include "real.def"
#undef RT_REAL_FN
};
extern struct rt_real rt_real;
extern bool rt_real_resolved; /* every entry looked up (a NULL one: not in this libc) */
void rt_real_resolve(void);
#define RT_REAL(fn) (rt_real.fn || rt_real_resolved ? rt_real.fn : (rt_real_resolve(), rt_real.fn))

#endif /* SYSCOPE_RUNTIME_REAL_H */
