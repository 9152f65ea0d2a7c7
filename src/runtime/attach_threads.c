/* SPDX-License-Identifier: MIT */
/*
 * syscope attach: the threads of a process the runtime did not start (attach.c runs this on
 * its own thread). Each is armed from outside with a CPU-time sampler; the table says which
 * descriptor is whose until the thread adopts it in its first sample's handler, and at the
 * detach which threads' recorder state to reset.
 */
#include "attach.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "sources/source.h"

/* A thread attach armed: its sampler's descriptor until the thread adopts it. */
struct armed {
	_Atomic pid_t tid; /* written last: a handler matching it sees the rest; -1: free */
	int fd;
	uint32_t index;
	struct rt_thread *_Atomic adopted; /* set by the thread itself, in its handler */
	bool seen;			   /* in the last scan */
	unsigned pmc_n;			   /* its --cpu-events group, handed over with the fd */
	int pmc_fd[SC_PMC_MAX];
	uint8_t pmc_event[SC_PMC_MAX];
};

static struct {
	struct armed threads[ATTACH_MAX_THREADS];
	_Atomic unsigned n;
	pid_t own_tid;	     /* attach.c's thread */
	uint32_t main_index; /* the main thread is thread 0, as in a launched process */
	unsigned failures;   /* threads not armed */
	int error;
} tt;

/* Threads that registered themselves before their first sample (attach_wrap.c's wrappers
 * recorded on them, or they started through its pthread_create): the detach resets them
 * too. */
static struct {
	struct early {
		struct rt_thread *_Atomic t;
		_Atomic pid_t tid;
	} v[ATTACH_MAX_THREADS];
	_Atomic unsigned n;
} early;

atomic_bool rt_attach_on;

void rt_attach_threads_begin(pid_t own_tid)
{
	atomic_store(&early.n, 0);
	atomic_store(&rt_attach_on, true);
	tt.own_tid = own_tid;
	tt.failures = 0;
	tt.main_index = atomic_fetch_add(&rt_proc.next_thread_index, 1);
}

void rt_attach_threads_fork_child(pid_t own_tid, struct rt_thread *main)
{
	struct armed *a = &tt.threads[0];

	/* The parent's table: its descriptors were not inherited (closed in the child). */
	atomic_store(&early.n, 0); /* the parent's threads are not here */
	tt.own_tid = own_tid;
	tt.failures = 0;
	tt.main_index = main->index;
	a->fd = -1;
	a->pmc_n = 0;
	a->index = main->index;
	a->seen = true;
	atomic_store(&a->adopted, main);
	atomic_store(&a->tid, getpid());
	atomic_store(&tt.n, 1);
}

/*
 * A program's thread that records before its first sample registers here, its sampler
 * signals blocked meanwhile (a first sample would register it a second time). Its armed
 * descriptor, if any, is still adopted by its first sample. Async-signal-safe.
 */
void rt_attach_register_self(struct rt_thread *t, pid_t creator, uint32_t index)
{
	sigset_t samplers, old;
	unsigned slot;

	rt_signals_sampler_set(&samplers);
	RT_REAL(pthread_sigmask)(SIG_BLOCK, &samplers, &old);
	if (t->state == RT_THREAD_UNKNOWN && atomic_load(&rt_attach_on)) {
		if (rt_gettid() == rt_proc.pid)
			index = tt.main_index;
		rt_thread_begin(t, creator, index);
		rt_thread_adopt_key(t);
		slot = atomic_fetch_add(&early.n, 1);
		if (slot < ATTACH_MAX_THREADS) {
			atomic_store(&early.v[slot].t, t);
			atomic_store(&early.v[slot].tid, t->tid);
		}
	}
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &old, NULL);
}

bool rt_attach_claim(int fd, struct rt_thread *t, uint32_t *index)
{
	pid_t tid = rt_gettid();
	unsigned n = atomic_load_explicit(&tt.n, memory_order_acquire);

	for (unsigned i = 0; i < n; i++) {
		struct armed *a = &tt.threads[i];
		struct rt_thread *none = NULL;

		if (atomic_load_explicit(&a->tid, memory_order_acquire) != tid || a->fd != fd)
			continue;
		if (!atomic_compare_exchange_strong(&a->adopted, &none, t))
			return false;
		*index = a->index;
		for (unsigned k = 0; k < a->pmc_n; k++) {
			t->pmc_fd[k] = a->pmc_fd[k];
			t->pmc_event[k] = a->pmc_event[k];
			t->pmc_last[k] = 0;
		}
		t->pmc_n = (uint8_t)a->pmc_n;
		a->pmc_n = 0; /* the thread's now */
		return true;
	}
	return false;
}

/* syscope's own threads (telemetry, this one) are not sampled. */
static bool is_syscope_thread(pid_t tid)
{
	char path[64], name[32] = "";
	int fd;
	ssize_t n;

	if (tid == tt.own_tid)
		return true;
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, name, sizeof(name) - 1);
	RT_REAL(close)(fd);
	name[n > 0 ? n : 0] = '\0';
	return !strncmp(name, "syscope-", 8);
}

static struct armed *find_armed(pid_t tid)
{
	unsigned n = atomic_load(&tt.n);

	for (unsigned i = 0; i < n; i++)
		if (tt.threads[i].tid == tid)
			return &tt.threads[i];
	return NULL;
}

/* A slot for a new thread: one a gone thread left (its tid is -1), else the next. */
static struct armed *free_slot(void)
{
	unsigned n = atomic_load(&tt.n);

	for (unsigned i = 0; i < n; i++)
		if (atomic_load(&tt.threads[i].tid) == -1)
			return &tt.threads[i];
	return n < ATTACH_MAX_THREADS ? &tt.threads[n] : NULL;
}

void rt_attach_arm(pid_t tid)
{
	unsigned n = atomic_load(&tt.n);
	struct armed *a;
	int fd = -1, err;

	if (is_syscope_thread(tid))
		return;
	a = free_slot();
	err = a ? rt_sampling_arm_tid(tid, &fd) : -ENOSPC;
	if (err) {
		tt.failures++;
		tt.error = -err;
		return;
	}
	a->fd = fd;
	a->pmc_n = rt_counters_open_for(tid, a->pmc_fd, a->pmc_event);
	a->seen = true;
	a->index = tid == rt_proc.pid ? tt.main_index
				      : atomic_fetch_add(&rt_proc.next_thread_index, 1);
	atomic_store(&a->adopted, NULL);
	atomic_store_explicit(&a->tid, tid, memory_order_release);
	if (a == &tt.threads[n])
		atomic_store_explicit(&tt.n, n + 1, memory_order_release);
}

void rt_attach_note_failures(void)
{
	if (tt.failures)
		rt_note(SC_NOTE_WARN,
			"attach: the CPU-time sampler could not be armed on %u thread(s) (%s); they "
			"are not sampled",
			tt.failures, strerror(tt.error));
}

/* A thread that ended before its first sample: its descriptor is ours to close. An adopted
 * thread closed its own at its end (the thread key's destructor). */
static void release_group(struct armed *a)
{
	for (unsigned k = a->pmc_n; k-- > 0;)
		rt_fd_release(a->pmc_fd[k]);
	a->pmc_n = 0;
}

static void release_thread_group(struct rt_thread *t)
{
	for (unsigned k = t->pmc_n; k-- > 0;)
		rt_fd_release(t->pmc_fd[k]);
	t->pmc_n = 0;
}

static void forget_gone(struct armed *a)
{
	if (!atomic_load(&a->adopted) && a->fd >= 0)
		rt_fd_release(a->fd);
	if (!atomic_load(&a->adopted))
		release_group(a);
	a->fd = -1;
	a->tid = -1; /* never matches a thread again */
}

/* Every thread of the process, main thread first; new ones armed, gone ones forgotten. */
void rt_attach_scan(void)
{
	unsigned n = atomic_load(&tt.n);
	DIR *d;
	struct dirent *de;

	for (unsigned i = 0; i < n; i++)
		tt.threads[i].seen = false;
	if (!find_armed(rt_proc.pid))
		rt_attach_arm(rt_proc.pid);
	d = opendir("/proc/self/task");
	if (!d)
		return;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		struct armed *a;

		if (tid <= 0)
			continue;
		a = find_armed(tid);
		if (a)
			a->seen = true;
		else
			rt_attach_arm(tid);
	}
	closedir(d);
	n = atomic_load(&tt.n);
	for (unsigned i = 0; i < n; i++)
		if (tt.threads[i].tid > 0 && !tt.threads[i].seen)
			forget_gone(&tt.threads[i]);
}

/* Whether a sampler signal is still pending on one of the threads (then the program must not
 * get its old handler back yet: a pending SIGSTKFLT would end it). */
bool rt_attach_signal_pending(void)
{
	sigset_t set;
	unsigned n = atomic_load(&tt.n);

	rt_signals_sampler_set(&set);
	for (unsigned i = 0; i < n; i++) {
		char path[64], buf[2048], *p;
		unsigned long long mask;
		int fd;
		ssize_t len;

		if (tt.threads[i].tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tt.threads[i].tid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		RT_REAL(close)(fd);
		buf[len > 0 ? len : 0] = '\0';
		p = strstr(buf, "SigPnd:");
		if (!p || sscanf(p + 7, "%llx", &mask) != 1)
			continue;
		for (int s = 1; s < 64; s++)
			if (sigismember(&set, s) && (mask & (1ull << (s - 1))))
				return true;
	}
	return false;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void rt_attach_threads_quiet(void)
{
	unsigned n = atomic_load(&tt.n);

	for (unsigned i = 0; i < n; i++) {
		struct armed *a = &tt.threads[i];
		struct rt_thread *t = atomic_load(&a->adopted);

		if (a->tid <= 0)
			continue;
		if (t)
			rt_sampling_disarm_adopted(t);
		else if (a->fd >= 0)
			ioctl(a->fd, PERF_EVENT_IOC_DISABLE, 0);
	}
	for (int tries = 0; tries < 20; tries++) {
		bool busy = false;

		for (unsigned i = 0; i < n; i++) {
			struct rt_thread *t = atomic_load(&tt.threads[i].adopted);

			busy |= tt.threads[i].tid > 0 && t && t->in_sampler;
		}
		if (!busy)
			break;
		sleep_ms(1);
	}
}

static void reset_thread(struct rt_thread *t)
{
	if (t->perf_fd >= 0)
		rt_fd_release(t->perf_fd);
	t->perf_fd = -1;
	release_thread_group(t);
	rt_recorder_detach_thread(t);
	t->state = RT_THREAD_UNKNOWN; /* registers again at a later attach */
}

/* The threads that registered themselves and are still there (an exited one's state says
 * so; one whose memory a later thread took has another tid). */
static void release_early(void)
{
	unsigned n = atomic_load(&early.n);

	atomic_store(&rt_attach_on, false);
	for (unsigned i = 0; i < n && i < ATTACH_MAX_THREADS; i++) {
		struct rt_thread *t = atomic_load(&early.v[i].t);

		if (t && t->tid == atomic_load(&early.v[i].tid) && t->state == RT_THREAD_ACTIVE)
			reset_thread(t);
	}
	atomic_store(&early.n, 0);
}

void rt_attach_threads_release(void)
{
	unsigned n = atomic_load(&tt.n);

	for (unsigned i = 0; i < n; i++) {
		struct armed *a = &tt.threads[i];
		struct rt_thread *t = atomic_load(&a->adopted);

		if (a->tid <= 0) {
			continue;
		} else if (!t) {
			rt_fd_release(a->fd);
			release_group(a);
		} else if (t->state == RT_THREAD_ACTIVE) {
			reset_thread(t);
		}
		a->tid = 0;
	}
	atomic_store(&tt.n, 0);
	release_early();
}
