/* SPDX-License-Identifier: MIT */
/*
 * Every call that signal(7) says a signal handler interrupts whatever SA_RESTART says, each
 * made so that it blocks for about TIMEOUT seconds (default 0.2) and then ends the same way
 * every time: a timeout, or a helper thread that completes it. One line per call, "name rc
 * errno", so that a run under a wall-clock sampler can be compared with a plain one: a call
 * cut short by a sample would print -1 EINTR. pause and sigsuspend end by the program's own
 * SIGUSR1, which must still interrupt them (EINTR in both runs).
 *
 * usage: blocking_calls [TIMEOUT]
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

static double timeout_s = 0.2;
static pthread_t main_thread;

static void report(const char *name, long rc, int err)
{
	printf("%-16s %ld %s\n", name, rc, rc < 0 ? strerrorname_np(err) : "-");
	fflush(stdout);
}

#define CALL(name, expr)                  \
	do {                              \
		long rc_;                 \
		errno = 0;                \
		rc_ = (long)(expr);       \
		report(name, rc_, errno); \
	} while (0)

static struct timespec rel_timeout(void)
{
	struct timespec ts = { (time_t)timeout_s, (long)((timeout_s - (time_t)timeout_s) * 1e9) };

	return ts;
}

static struct timespec abs_timeout(clockid_t clock)
{
	struct timespec now, rel = rel_timeout();

	clock_gettime(clock, &now);
	now.tv_sec += rel.tv_sec;
	now.tv_nsec += rel.tv_nsec;
	if (now.tv_nsec >= 1000000000L) {
		now.tv_sec++;
		now.tv_nsec -= 1000000000L;
	}
	return now;
}

static void set_timeout(int fd, int option)
{
	struct timeval tv = { (time_t)timeout_s, (long)((timeout_s - (time_t)timeout_s) * 1e6) };

	setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv));
}

/* ---- a helper thread that completes a blocked call after the timeout ---- */

enum job {
	JOB_SIGNAL,
	JOB_SIGUSR2,
	JOB_MSGSND,
	JOB_MSGRCV,
	JOB_SEMOP,
	JOB_SEMPOST
};
static int msq, semid;
static sem_t posix_sem;

struct msg {
	long type;
	char text[8192];
};

static void *helper(void *arg)
{
	enum job job = (enum job)(long)arg;
	struct timespec rel = rel_timeout();
	struct msg m = { .type = 1 };
	struct sembuf up = { 0, 1, 0 };

	nanosleep(&rel, NULL);
	switch (job) {
	case JOB_SIGNAL:
		pthread_kill(main_thread, SIGUSR1);
		break;
	case JOB_SIGUSR2:
		pthread_kill(main_thread, SIGUSR2);
		break;
	case JOB_MSGSND:
		msgsnd(msq, &m, 16, 0);
		break;
	case JOB_MSGRCV:
		msgrcv(msq, &m, sizeof(m.text), 0, 0);
		break;
	case JOB_SEMOP:
		semop(semid, &up, 1);
		break;
	case JOB_SEMPOST:
		sem_post(&posix_sem);
		break;
	}
	return NULL;
}

static pthread_t later(enum job job)
{
	pthread_t t;

	pthread_create(&t, NULL, helper, (void *)(long)job);
	return t;
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* ---- sockets ---- */

static void socket_calls(void)
{
	int sv[2], full[2], dup_fd, l;
	char buf[4096] = { 0 };
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct mmsghdr mm = { .msg_hdr = mh };
	struct timespec tmo = rel_timeout();
	struct sockaddr_un addr = { .sun_family = AF_UNIX };

	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	set_timeout(sv[0], SO_RCVTIMEO);
	CALL("read", read(sv[0], buf, sizeof(buf)));
	CALL("readv", readv(sv[0], &iov, 1));
	CALL("recv", recv(sv[0], buf, sizeof(buf), 0));
	CALL("recvfrom", recvfrom(sv[0], buf, sizeof(buf), 0, NULL, NULL));
	CALL("recvmsg", recvmsg(sv[0], &mh, 0));
	CALL("recvmmsg", recvmmsg(sv[0], &mm, 1, 0, NULL));
	CALL("recvmmsg_tmo", recvmmsg(sv[0], &mm, 1, 0, &tmo));
	/* A duplicate: syscope did not see its timeout being set. */
	dup_fd = dup(sv[0]);
	CALL("read_dup", read(dup_fd, buf, sizeof(buf)));
	CALL("read_dup_again", read(dup_fd, buf, sizeof(buf)));

	/* A socket whose send buffer is full. */
	socketpair(AF_UNIX, SOCK_STREAM, 0, full);
	while (send(full[0], buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	set_timeout(full[0], SO_SNDTIMEO);
	CALL("write", write(full[0], buf, sizeof(buf)));
	CALL("writev", writev(full[0], &iov, 1));
	CALL("send", send(full[0], buf, sizeof(buf), 0));
	CALL("sendto", sendto(full[0], buf, sizeof(buf), 0, NULL, 0));
	CALL("sendmsg", sendmsg(full[0], &mh, 0));
	CALL("sendmmsg", sendmmsg(full[0], &mm, 1, 0));

	/* accept with nobody connecting; connect to a listener whose backlog is full. */
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "blocking_calls-%d", getpid());
	bind(l, (struct sockaddr *)&addr, sizeof(addr));
	listen(l, 0);
	set_timeout(l, SO_RCVTIMEO);
	CALL("accept", accept(l, NULL, NULL));
	CALL("accept4", accept4(l, NULL, NULL, SOCK_CLOEXEC));
	for (int i = 0; i < 8; i++) {
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

		if (connect(c, (struct sockaddr *)&addr, sizeof(addr)))
			break;
	}
	{
		int c = socket(AF_UNIX, SOCK_STREAM, 0);

		set_timeout(c, SO_SNDTIMEO);
		CALL("connect", connect(c, (struct sockaddr *)&addr, sizeof(addr)));
	}
}

/* ---- System V IPC ---- */

static void sysv_calls(void)
{
	struct msg m = { .type = 1 };
	struct sembuf down = { 0, -1, 0 };
	struct timespec tmo = rel_timeout();
	pthread_t t;

	msq = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	t = later(JOB_MSGSND);
	CALL("msgrcv", msgrcv(msq, &m, sizeof(m.text), 0, 0));
	pthread_join(t, NULL);
	while (msgsnd(msq, &m, sizeof(m.text), IPC_NOWAIT) == 0)
		;
	t = later(JOB_MSGRCV);
	CALL("msgsnd", msgsnd(msq, &m, sizeof(m.text), 0));
	pthread_join(t, NULL);
	msgctl(msq, IPC_RMID, NULL);

	semid = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	t = later(JOB_SEMOP);
	CALL("semop", semop(semid, &down, 1));
	pthread_join(t, NULL);
	CALL("semtimedop", semtimedop(semid, &down, 1, &tmo));
	semctl(semid, 0, IPC_RMID);
}

/* ---- sleeping, waiting for signals, multiplexing, POSIX semaphores ---- */

static void waiting_calls(void)
{
	struct timespec rel = rel_timeout(), abs;
	int ms = (int)(timeout_s * 1000), p[2], ep;
	struct timeval tv;
	struct pollfd pfd;
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t usr2, empty;
	fd_set r;
	pthread_t t;

	CALL("nanosleep", nanosleep(&rel, NULL));
	CALL("clock_nanosleep", clock_nanosleep(CLOCK_MONOTONIC, 0, &rel, NULL));
	CALL("usleep", usleep((useconds_t)(timeout_s * 1e6)));

	pipe(p);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	CALL("poll", poll(&pfd, 1, ms));
	CALL("ppoll", ppoll(&pfd, 1, &rel, NULL));
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	tv = (struct timeval){ 0, ms * 1000 };
	CALL("select", select(p[0] + 1, &r, NULL, NULL, &tv));
	FD_SET(p[0], &r);
	CALL("pselect", pselect(p[0] + 1, &r, NULL, NULL, &rel, NULL));
	ep = epoll_create1(0);
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
	CALL("epoll_wait", epoll_wait(ep, &ev, 1, ms));
	CALL("epoll_pwait", epoll_pwait(ep, &ev, 1, ms, NULL));
	CALL("epoll_pwait2", epoll_pwait2(ep, &ev, 1, &rel, NULL));

	sem_init(&posix_sem, 0, 0);
	abs = abs_timeout(CLOCK_REALTIME);
	CALL("sem_timedwait", sem_timedwait(&posix_sem, &abs));
	abs = abs_timeout(CLOCK_MONOTONIC);
	CALL("sem_clockwait", sem_clockwait(&posix_sem, CLOCK_MONOTONIC, &abs));
	t = later(JOB_SEMPOST);
	CALL("sem_wait", sem_wait(&posix_sem));
	pthread_join(t, NULL);

	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);
	CALL("sigtimedwait", sigtimedwait(&usr2, NULL, &rel));
	t = later(JOB_SIGUSR2);
	CALL("sigwaitinfo", sigwaitinfo(&usr2, NULL));
	pthread_join(t, NULL);

	/* Woken by the program's own signal: EINTR, with or without syscope. */
	signal(SIGUSR1, on_usr1);
	t = later(JOB_SIGNAL);
	CALL("pause", pause());
	pthread_join(t, NULL);
	sigemptyset(&empty);
	t = later(JOB_SIGNAL);
	CALL("sigsuspend", sigsuspend(&empty));
	pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	double start = fixture_now();

	timeout_s = fixture_seconds(argc, argv, 1, 0.2);
	main_thread = pthread_self();
	socket_calls();
	sysv_calls();
	waiting_calls();
	fprintf(stderr, "blocking_calls: %.2f s\n", fixture_now() - start);
	return 0;
}
