/* SPDX-License-Identifier: MIT */
/*
 * pthread tracing (--parallel=pthread), libsyscope.so's side: the records. Each wait in a
 * mutex, rwlock, condition variable, barrier or semaphore that lasts at least
 * --pthread-min-wait becomes one REGION_SPAN of category "pthread" on the waiting thread,
 * named after the call, with the object's address as an argument; pthread_create and
 * pthread_join are recorded whatever they take, with the other thread's creation index and
 * thread id, and every new thread starts with a "thread start" mark naming its creator.
 *
 * The lock wrappers are in libsyscope-pthread.so (pthread_wrap.c), preloaded only with
 * --parallel=pthread, and call the __syscope_pthread_* functions below; the semaphore waits
 * are wrap_block.c's, pthread_create is threads.c's. A span is written after its wait, when
 * its length is known: nothing is recorded while the thread blocks, and a wait the thread
 * never returns from (cancellation) leaves nothing.
 */
#include "pthread.h"

#include "../rt.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#define CATEGORY "pthread"
#define TEXT_MAX 384

static bool tracing;
RT_EXPORT int __syscope_pthread_on; /* tracing, for libsyscope-pthread.so's fast path */
static uint64_t min_wait_ns;
static RT_TLS bool recording_now; /* a wrapper reached from our own recording passes by */

bool rt_pthread_tracing(void)
{
	/* Not a wait of syscope's sampler (its unwinder's locks): the program's only. */
	return tracing && !recording_now && !rt_self.in_sampler && rt_recording();
}

/* ---- the records ---- */

struct text {
	char buf[TEXT_MAX];
	uint32_t len;
};

static void put(struct text *t, const char *s)
{
	size_t n = strnlen(s, 64);

	if (t->len + n + 1 > sizeof(t->buf))
		n = 0; /* cannot happen with our short constant names */
	memcpy(t->buf + t->len, s, n);
	t->len += (uint32_t)n;
	t->buf[t->len++] = 0;
}

/* A number as text, without the C library's formatting (allocation-free, no locale). */
static void put_number(struct text *t, uint64_t v, bool hex, bool negative)
{
	char digits[24];
	unsigned n = 0, base = hex ? 16 : 10;

	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (t->len + n + 4 > sizeof(t->buf))
		return;
	if (negative)
		t->buf[t->len++] = '-';
	if (hex) {
		t->buf[t->len++] = '0';
		t->buf[t->len++] = 'x';
	}
	while (n)
		t->buf[t->len++] = digits[--n];
	t->buf[t->len++] = 0;
}

struct arg {
	char type; /* enum sc_arg_type */
	const char *name;
	uint64_t value;
};

static void put_args(struct text *t, struct sc_rec_region *r, const struct arg *args, unsigned n)
{
	uint32_t before = t->len;

	for (unsigned i = 0; i < n; i++) {
		char type[2] = { args[i].type, 0 };
		bool negative = args[i].type == SC_ARG_INT && (int64_t)args[i].value < 0;
		uint64_t v = negative ? (uint64_t) - (int64_t)args[i].value : args[i].value;

		put(t, type);
		put(t, args[i].name);
		put_number(t, v, args[i].type == SC_ARG_POINTER, negative);
	}
	r->args_len = t->len - before;
	r->nargs = n;
}

static void name_and_category(struct text *t, struct sc_rec_region *r, const char *name)
{
	t->len = 0;
	put(t, name);
	r->name_len = t->len;
	put(t, CATEGORY);
	r->cat_len = t->len - r->name_len;
}

static void record_span(const char *name, uint64_t start, uint64_t end, const struct arg *args,
			unsigned nargs)
{
	struct sc_rec_region_span sp = { .r = { .ts = start }, .end = end, .tid = rt_gettid() };
	struct text t;

	recording_now = true;
	name_and_category(&t, &sp.r, name);
	put_args(&t, &sp.r, args, nargs);
	rt_record(SC_REC_REGION_SPAN, 0, &sp.r.ts, sizeof(sp) - sizeof(sp.r.hdr), t.buf, t.len);
	recording_now = false;
}

static void record_mark(const char *name, const struct arg *args, unsigned nargs)
{
	struct sc_rec_region r = { .ts = rt_now_ns() };
	struct text t;

	recording_now = true;
	name_and_category(&t, &r, name);
	put_args(&t, &r, args, nargs);
	rt_record(SC_REC_MARK, 0, &r.ts, sizeof(r) - sizeof(r.hdr), t.buf, t.len);
	recording_now = false;
}

void rt_pthread_waited(const char *call, const char *object_name, const void *object,
		       uint64_t start, int error)
{
	uint64_t end = rt_now_ns();
	struct arg args[2] = { { SC_ARG_POINTER, object_name, (uint64_t)(uintptr_t)object },
			       { SC_ARG_INT, "error", (uint64_t)(int64_t)error } };
	int saved_errno = errno;

	if (end - start < min_wait_ns || !rt_pthread_tracing())
		return;
	record_span(call, start, end, args, error ? 2 : 1);
	errno = saved_errno;
}

/* ---- threads: who made whom, for joins ---- */

/*
 * Whom a join waits for, from two direct-mapped tables: pthread_t -> creation index, written
 * by the creator as pthread_create returns (before anyone can join that thread, and again
 * when a later thread reuses the handle), and creation index -> tid, written by each new
 * thread as it starts (before its join can return). Keys are checked, so a slot another
 * thread took makes a join recorded without the other thread, never with a wrong one.
 */
#define KNOWN_THREADS 4096 /* a power of two */

struct handle_slot {
	_Atomic uintptr_t handle;
	_Atomic uint32_t index;
};

static struct handle_slot handles[KNOWN_THREADS];
static _Atomic uint64_t tids[KNOWN_THREADS]; /* (index + 1) << 32 | tid */

static struct handle_slot *slot_of(pthread_t handle)
{
	uint64_t x = (uint64_t)handle;

	x ^= x >> 23;
	return &handles[(x * 0x9e3779b97f4a7c15ull) >> 52]; /* 12 bits: KNOWN_THREADS */
}

static void remember_handle(pthread_t handle, uint32_t index)
{
	struct handle_slot *h = slot_of(handle);

	atomic_store_explicit(&h->handle, 0, memory_order_relaxed);
	atomic_store_explicit(&h->index, index, memory_order_release);
	atomic_store_explicit(&h->handle, (uintptr_t)handle, memory_order_release);
}

static bool index_of(pthread_t handle, uint32_t *index)
{
	struct handle_slot *h = slot_of(handle);

	if (atomic_load_explicit(&h->handle, memory_order_acquire) != (uintptr_t)handle)
		return false;
	*index = atomic_load_explicit(&h->index, memory_order_acquire);
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&h->handle, memory_order_relaxed) == (uintptr_t)handle;
}

static bool tid_of(uint32_t index, int32_t *tid)
{
	uint64_t v = atomic_load_explicit(&tids[index % KNOWN_THREADS], memory_order_acquire);

	if (v >> 32 != (uint64_t)index + 1)
		return false;
	*tid = (int32_t)(uint32_t)v;
	return true;
}

void rt_pthread_thread_started(pid_t creator, uint32_t index)
{
	struct arg args[2] = { { SC_ARG_INT, "created_by", (uint64_t)(int64_t)creator },
			       { SC_ARG_UINT, "thread_index", index } };

	if (!tracing)
		return;
	atomic_store_explicit(&tids[index % KNOWN_THREADS],
			      ((uint64_t)index + 1) << 32 | (uint32_t)rt_gettid(),
			      memory_order_release);
	if (rt_recording())
		record_mark("thread start", args, 2);
}

void rt_pthread_created(uint64_t start, pthread_t handle, uint32_t index)
{
	struct arg args[1] = { { SC_ARG_UINT, "thread_index", index } };

	if (!tracing)
		return;
	remember_handle(handle, index);
	if (rt_pthread_tracing())
		record_span("pthread_create", start, rt_now_ns(), args, 1);
}

/* ---- what libsyscope-pthread.so's wrappers call (pthread_wrap.c) ---- */

RT_EXPORT bool __syscope_pthread_timing(void)
{
	return rt_pthread_tracing();
}

RT_EXPORT uint64_t __syscope_pthread_now(void)
{
	return rt_now_ns();
}

RT_EXPORT void __syscope_pthread_waited(const char *call, const char *object_name,
					const void *object, uint64_t start, int error)
{
	rt_pthread_waited(call, object_name, object, start, error);
}

RT_EXPORT bool __syscope_pthread_index(pthread_t thread, uint32_t *index)
{
	return index_of(thread, index);
}

RT_EXPORT bool __syscope_pthread_tid(uint32_t index, int32_t *tid)
{
	return tid_of(index, tid);
}

/* A join is recorded whatever it took: it says which thread the caller waited for. */
RT_EXPORT void __syscope_pthread_joined(uint64_t start, bool found, int32_t tid, uint32_t index)
{
	struct arg args[2] = { { SC_ARG_INT, "thread", (uint64_t)(int64_t)tid },
			       { SC_ARG_UINT, "thread_index", index } };

	if (rt_pthread_tracing())
		record_span("pthread_join", start, rt_now_ns(), args, found ? 2 : 0);
}

/* ---- the source ---- */

static bool enabled(const struct sc_settings *s)
{
	return sc_bool(s, SC_SET_USE_PTHREAD);
}

static int process_start(void)
{
	min_wait_ns = (uint64_t)(sc_double(&rt_proc.settings, SC_SET_PTHREAD_MIN_WAIT) * 1e9);
	tracing = true;
	__atomic_store_n(&__syscope_pthread_on, 1, __ATOMIC_RELAXED);
	return 0;
}

static void process_stop(void)
{
	tracing = false;
	__atomic_store_n(&__syscope_pthread_on, 0, __ATOMIC_RELAXED);
}

const struct rt_source rt_source_pthread = {
	.name = "pthread",
	.enabled = enabled,
	.process_start = process_start,
	.process_stop = process_stop,
};
