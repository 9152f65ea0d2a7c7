/* SPDX-License-Identifier: MIT */
/*
 * The writer thread: writes closed chunks into the raw file for the threads that filled them.
 *
 * A chunk of small records costs its thread about as much in the pwrite that takes it to the
 * file (fresh page-cache pages) as in recording them: 40-120 ns per 64-byte OpenMP region on
 * the development VM. When a thread closes a chunk with no record of its own half-written
 * (rt_thread.writing: a signal handler may close it under an interrupted writer, which then
 * finishes its record there), it posts the chunk here; this thread writes it while the owner
 * fills its other buffer. When the owner needs that buffer again it takes the chunk back: not
 * yet written, it writes it itself as before; being written, it sleeps on a futex until the
 * write is done (rt_writer_take_back).
 *
 * The owner's memory is never touched but the chunk's buffer, and only while an entry is
 * WRITING, which the owner waits out before reusing or unmapping the buffer. An entry becomes
 * FREE again only in its owner's hands.
 *
 * A thread of ours changes what some programs may do (unshare(CLONE_NEWUSER) wants a single
 * thread; set*id calls reach every thread), so it is started only where the program runs a
 * multithreaded runtime anyway: by the OpenMP recorder at the first region recorded on a
 * thread other than the initial one (omp_record.c), in the process syscope started (a
 * fork child's threads write their own chunks, as do those of a process under `syscope
 * attach`, where the recorder is not this one's to keep).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt.h"

#define ENTRIES 256

enum entry_state {
	FREE,
	FILLING,
	POSTED,
	WRITING,
	WRITING_WAITED, /* being written, and its owner sleeps on the state until it is */
	WRITTEN,
	FAILED
};

#define TAKE_BACK_NAP_NS 10000000 /* a lost wake-up (none should be) costs this at most */

struct entry {
	atomic_uint state;
	uint32_t index, used, known; /* known: bytes of whole records the file holds already */
	const char *base;
};

static struct {
	struct entry ring[ENTRIES];
	atomic_uint next;   /* where the next post looks for a free entry */
	atomic_uint posts;  /* the futex word the thread sleeps on */
	atomic_int waiting; /* the thread is about to sleep, or sleeps */
	atomic_int stop;
	atomic_bool running;
	pthread_t thread;
} w;

static void futex(atomic_uint *word, int op, unsigned val, const struct timespec *timeout)
{
	syscall(SYS_futex, word, op | FUTEX_PRIVATE_FLAG, val, timeout, NULL, 0);
}

/* Every posted chunk written; true if there was one. */
static bool write_posted(void)
{
	bool any = false;

	for (unsigned i = 0; i < ENTRIES; i++) {
		struct entry *e = &w.ring[i];
		unsigned posted = POSTED;

		if (atomic_load_explicit(&e->state, memory_order_relaxed) != POSTED ||
		    !atomic_compare_exchange_strong(&e->state, &posted, WRITING))
			continue;
		any = true;
		if (atomic_exchange(&e->state,
				    rt_recorder_write_chunk(e->base, e->index, e->used, e->known)
					    ? WRITTEN
					    : FAILED) == WRITING_WAITED)
			futex(&e->state, FUTEX_WAKE, INT_MAX, NULL);
	}
	return any;
}

static void *writer_main(void *arg)
{
	const struct timespec nap = { .tv_sec = 1 }; /* looks at `stop` at least this often */

	cpu_set_t any;

	(void)arg;
	prctl(PR_SET_NAME, "syscope-writer", 0, 0, 0);
	/* Not the binding the OpenMP runtime may have given the thread that started this one
	 * (OMP_PROC_BIND): its core is the one this thread should keep free. The kernel keeps
	 * the process's own limits (cpusets). */
	CPU_ZERO(&any);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		CPU_SET(cpu, &any);
	sched_setaffinity(0, sizeof(any), &any);
	while (!atomic_load(&w.stop)) {
		unsigned seen = atomic_load(&w.posts);

		if (write_posted())
			continue;
		atomic_store(&w.waiting, 1);
		if (atomic_load(&w.posts) == seen && !atomic_load(&w.stop))
			futex(&w.posts, FUTEX_WAIT, seen, &nap);
		atomic_store(&w.waiting, 0);
	}
	return NULL;
}

void rt_writer_start(void)
{
	static atomic_bool started;
	sigset_t all, old;

	if (atomic_exchange(&started, true) || atomic_load(&rt_attach_on))
		return; /* once a process: not again in a fork child */
	for (unsigned i = 0; i < ENTRIES; i++)
		atomic_store(&w.ring[i].state, FREE);
	atomic_store(&w.stop, 0);
	sigfillset(&all);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &all, &old); /* the thread inherits: no signals */
	atomic_store(&w.running, RT_REAL(pthread_create)(&w.thread, NULL, writer_main, NULL) == 0);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &old, NULL);
}

void rt_writer_stop(void)
{
	if (!atomic_exchange(&w.running, false))
		return;
	atomic_store(&w.stop, 1);
	atomic_fetch_add(&w.posts, 1);
	futex(&w.posts, FUTEX_WAKE, 1, NULL);
	pthread_join(w.thread, NULL);
}

void rt_writer_forget(void)
{
	atomic_store(&w.running, false); /* a fork child: the thread stayed in the parent */
}

uint32_t rt_writer_post(const char *base, uint32_t index, uint32_t known, uint32_t used)
{
	unsigned at, free_state = FREE;
	struct entry *e;

	if (!atomic_load_explicit(&w.running, memory_order_relaxed))
		return 0;
	at = atomic_fetch_add(&w.next, 1) % ENTRIES;
	e = &w.ring[at];
	if (!atomic_compare_exchange_strong(&e->state, &free_state, FILLING))
		return 0; /* the ring is full of others' chunks: the owner writes this one */
	e->base = base;
	e->index = index;
	e->used = used;
	e->known = known;
	atomic_store(&e->state, POSTED);
	atomic_fetch_add(&w.posts, 1);
	if (atomic_load(&w.waiting))
		futex(&w.posts, FUTEX_WAKE, 1, NULL);
	return at + 1;
}

/*
 * Being written: the owner sleeps on the entry's state until the writer thread stores the
 * result (one pwrite; the writer wakes it only when it said it sleeps, WRITING_WAITED). Each
 * sleep is bounded, so even a lost wake-up costs one nap. A signal handler may be here (an
 * exchange in a sample): FUTEX_WAIT is a plain system call, and errno is kept.
 */
bool rt_writer_take_back(uint32_t handle)
{
	const struct timespec nap = { .tv_nsec = TAKE_BACK_NAP_NS };
	struct entry *e = &w.ring[(handle - 1) % ENTRIES];
	unsigned state = POSTED;
	int saved_errno;

	if (atomic_compare_exchange_strong(&e->state, &state, FREE))
		return false; /* not begun: the owner writes it */
	saved_errno = errno;
	while ((state = atomic_load(&e->state)) == WRITING || state == WRITING_WAITED) {
		if (state == WRITING &&
		    !atomic_compare_exchange_strong(&e->state, &state, WRITING_WAITED))
			continue; /* written meanwhile */
		futex(&e->state, FUTEX_WAIT, WRITING_WAITED, &nap);
	}
	errno = saved_errno;
	atomic_store(&e->state, FREE);
	return state == WRITTEN;
}
