/* SPDX-License-Identifier: MIT */
/*
 * The writer thread's take-back (src/runtime/chunk_writer.c), linked alone with stubs of
 * what it calls: a chunk taken back while the writer thread writes it makes its owner sleep
 * in the kernel until the write is done (a futex wait), never spin on sched_yield, and the
 * owner learns whether the write succeeded.
 *
 * The stub write holds the writer thread inside the write until it sees the owner thread
 * blocked in the futex system call (/proc/self/task/TID/syscall), with a bounded deadline: a
 * spinning owner is never seen there, so the check below fails instead of hanging. This
 * executable's own sched_yield counts the calls made to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "runtime/rt.h"

#define DEADLINE_S 20

/* What chunk_writer.c needs of the runtime. */
struct rt_real rt_real;
bool rt_real_resolved = true;
atomic_bool rt_attach_on;

void rt_real_resolve(void)
{
}

static atomic_int yields, in_write, owner_tid, write_ok, saw_owner_asleep;

int sched_yield(void)
{
	atomic_fetch_add(&yields, 1);
	return (int)syscall(SYS_sched_yield);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Whether thread `tid` is blocked in the futex system call now. */
static bool in_futex(int tid)
{
	char path[64], buf[64] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return atoi(buf) == SYS_futex && buf[0] != '-';
}

bool rt_recorder_write_chunk(const char *base, uint32_t index, uint32_t used, uint32_t known)
{
	double end = now_s() + DEADLINE_S;
	struct timespec ms = { .tv_nsec = 1000000 };

	(void)base, (void)index, (void)used, (void)known;
	atomic_store(&in_write, 1);
	while (!atomic_load(&owner_tid) && now_s() < end)
		nanosleep(&ms, NULL);
	while (now_s() < end) {
		if (in_futex(atomic_load(&owner_tid))) {
			atomic_store(&saw_owner_asleep, 1);
			break;
		}
		nanosleep(&ms, NULL);
	}
	return atomic_load(&write_ok);
}

/* One chunk posted, taken back while the writer thread writes it. */
static bool post_and_take_back(void)
{
	static char chunk[4096];
	struct timespec ms = { .tv_nsec = 1000000 };
	double end = now_s() + DEADLINE_S;
	uint32_t handle;
	bool written;

	atomic_store(&in_write, 0);
	atomic_store(&owner_tid, 0);
	handle = rt_writer_post(chunk, 7, 0, sizeof(chunk));
	CHECK(handle != 0);
	while (!atomic_load(&in_write) && now_s() < end)
		nanosleep(&ms, NULL);
	CHECK(atomic_load(&in_write));
	atomic_store(&owner_tid, (int)syscall(SYS_gettid));
	errno = 1234;
	written = rt_writer_take_back(handle);
	CHECK(errno == 1234); /* a signal handler may take a chunk back */
	return written;
}

int main(void)
{
	rt_real.pthread_sigmask = pthread_sigmask;
	rt_real.pthread_create = pthread_create;
	rt_writer_start();

	atomic_store(&write_ok, 1);
	atomic_store(&saw_owner_asleep, 0);
	CHECK(post_and_take_back());
	CHECK(atomic_load(&saw_owner_asleep));

	atomic_store(&write_ok, 0); /* a failed write: the owner is told */
	atomic_store(&saw_owner_asleep, 0);
	CHECK(!post_and_take_back());
	CHECK(atomic_load(&saw_owner_asleep));

	CHECK(atomic_load(&yields) == 0);
	if (atomic_load(&yields))
		fprintf(stderr, "the owner called sched_yield %d times while it waited\n",
			atomic_load(&yields));
	rt_writer_stop();
	printf("%d checks, %d failed\n", check_count, check_failures);
	return check_failures;
}
