/* SPDX-License-Identifier: MIT */
/*
 * Thread registry: every thread of the program gets its rt_thread (TLS) registered when it
 * starts (threads created through pthread_create), or lazily on its first record (threads
 * the runtime did not see start: created before it loaded or by raw clone). Registration is
 * async-signal-safe; the sources' per-thread start (timers) happens only in normal context.
 */
#include "rt.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "parallel/pthread.h"
#include "sources/source.h"

RT_TLS struct rt_thread rt_self;

static pthread_key_t exit_key;
static bool exit_key_ok;

static void thread_identity_record(uint16_t type, struct rt_thread *t)
{
	struct sc_rec_thread rec = {
		.ts = rt_now_ns(),
		.cpu_ns = rt_thread_cpu_ns(),
		.tid = t->tid,
		.index = t->index,
		.creator_tid = t->creator_tid,
	};

	rt_record(type, 0, &rec.ts, sizeof(rec) - sizeof(rec.hdr), NULL, 0);
}

static void thread_name_record(void)
{
	struct sc_rec_thread_name rec = { .ts = rt_now_ns() };

	if (prctl(PR_GET_NAME, rec.name, 0, 0, 0))
		return;
	rt_record(SC_REC_THREAD_NAME, 0, &rec.ts, sizeof(rec) - sizeof(rec.hdr), NULL, 0);
}

void rt_thread_begin(struct rt_thread *t, pid_t creator, uint32_t index)
{
	t->tid = rt_gettid();
	t->perf_fd = -1;
	t->overflow_fd = -1;
	t->creator_tid = creator;
	t->index = index != RT_INDEX_NEXT ? index : atomic_fetch_add(&rt_proc.next_thread_index, 1);
	t->state = RT_THREAD_ACTIVE;
	atomic_fetch_add(&rt_proc.threads_alive, 1);
	if (rt_header())
		__atomic_fetch_add(&rt_header()->threads_seen, 1, __ATOMIC_RELAXED);
	thread_identity_record(SC_REC_THREAD_BEGIN, t);
}

struct rt_thread *rt_thread_self(void)
{
	struct rt_thread *t = &rt_self;

	if (t->state == RT_THREAD_UNKNOWN) {
		if (!atomic_load_explicit(&rt_proc.active, memory_order_relaxed))
			return NULL;
		if (atomic_load_explicit(&rt_attach_on, memory_order_relaxed)) {
			rt_attach_register_self(t, 0, RT_INDEX_NEXT);
			return t->state == RT_THREAD_ACTIVE ? t : NULL;
		}
		rt_thread_begin(t, 0, RT_INDEX_NEXT);
	}
	return t;
}

/* Normal-context part of a thread's start: stack bounds, exit hook, sources. */
void rt_thread_setup(struct rt_thread *t)
{
	pthread_attr_t attr;

	if (!pthread_getattr_np(pthread_self(), &attr)) {
		void *addr;
		size_t size;

		if (!pthread_attr_getstack(&attr, &addr, &size)) {
			t->stack_lo = (uintptr_t)addr;
			t->stack_hi = (uintptr_t)addr + size;
		}
		pthread_attr_destroy(&attr);
	}
	if (exit_key_ok)
		pthread_setspecific(exit_key, t);
	thread_name_record();
	rt_sources_thread_start(t);
}

void rt_thread_end(void)
{
	struct rt_thread *t = &rt_self;

	if (t->state != RT_THREAD_ACTIVE)
		return;
	rt_sources_thread_stop(t);
	thread_name_record();
	thread_identity_record(SC_REC_THREAD_END, t);
	t->state = RT_THREAD_EXITED;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rt_release_thread_chunk();
	atomic_fetch_sub(&rt_proc.threads_alive, 1);
}

/* pthread key destructor: runs when a thread returns, calls pthread_exit or is cancelled. */
static void on_thread_exit(void *arg)
{
	(void)arg;
	rt_thread_end();
}

void rt_threads_init(void)
{
	struct rt_thread *t = &rt_self;

	exit_key_ok = !pthread_key_create(&exit_key, on_thread_exit);
	atomic_store(&rt_proc.next_thread_index, 0);
	rt_thread_begin(t, 0, RT_INDEX_NEXT);
}

void rt_threads_attach_init(void)
{
	if (!exit_key_ok)
		exit_key_ok = !pthread_key_create(&exit_key, on_thread_exit);
	atomic_store(&rt_proc.next_thread_index, 0);
	atomic_store(&rt_proc.threads_alive, 0);
}

/* Keys below 32 live in the thread's descriptor: setting one allocates nothing, so it may be
 * done in a handler; its destructor then ends the thread when it exits. */
void rt_thread_adopt_key(struct rt_thread *t)
{
	if (exit_key_ok && exit_key < 32)
		pthread_setspecific(exit_key, t);
}

/* A thread that registered itself before its first sample (attach_threads.c) is begun
 * already: its sampler is only handed over. */
void rt_thread_adopt(struct rt_thread *t, uint32_t index)
{
	if (t->state == RT_THREAD_ACTIVE)
		return;
	rt_thread_begin(t, 0, index);
	rt_thread_adopt_key(t);
}

void rt_threads_fork_child(void)
{
	struct rt_thread *t = &rt_self;

	/* The forking thread is the only one in the child; it becomes thread 0 there. */
	t->state = RT_THREAD_UNKNOWN;
	t->perf_fd = -1;
	t->overflow_fd = -1;
	t->has_cpu_timer = t->has_wall_timer = false;
	atomic_store(&rt_proc.next_thread_index, 0);
	atomic_store(&rt_proc.threads_alive, 0);
	rt_thread_begin(t, 0, RT_INDEX_NEXT);
}

struct trampoline {
	void *(*fn)(void *);
	void *arg;
	pid_t creator;
	uint32_t index; /* taken at pthread_create, so indices follow creation order */
};

static void *thread_trampoline(void *p)
{
	struct trampoline tr = *(struct trampoline *)p;

	free(p);
	if (rt_active() && atomic_load(&rt_attach_on)) {
		/* Attached: the thread is armed by attach's scan, not by the sources here. */
		rt_attach_register_self(&rt_self, tr.creator, tr.index);
		rt_pthread_thread_started(tr.creator, tr.index);
	} else if (rt_active()) {
		rt_thread_begin(&rt_self, tr.creator, tr.index);
		rt_thread_setup(&rt_self);
		rt_pthread_thread_started(tr.creator, tr.index);
	}
	return tr.fn(tr.arg);
}

RT_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
			     void *arg)
{
	struct trampoline *tr;
	uint64_t start = rt_now_ns();
	uint32_t index;
	int rc;

	if (!rt_active() || !(tr = malloc(sizeof(*tr))))
		return RT_REAL(pthread_create)(thread, attr, fn, arg);
	tr->fn = fn;
	tr->arg = arg;
	tr->creator = rt_self.tid ? rt_self.tid : rt_gettid(); /* attached: may be unregistered */
	tr->index = index = atomic_fetch_add(&rt_proc.next_thread_index, 1);
	rc = RT_REAL(pthread_create)(thread, attr, thread_trampoline, tr);
	if (rc)
		free(tr);
	else
		rt_pthread_created(start, *thread, index); /* tr is the new thread's now */
	return rc;
}

RT_EXPORT int pthread_setname_np(pthread_t thread, const char *name)
{
	int rc = RT_REAL(pthread_setname_np)(thread, name);

	if (!rc && rt_active() && pthread_equal(thread, pthread_self()))
		thread_name_record();
	return rc;
}
