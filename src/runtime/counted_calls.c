/* SPDX-License-Identifier: MIT */
/*
 * Per-thread tables of counted calls (counted_calls.h). A table is one reserved mapping
 * (pages appear as slots are first used): a header, the counts, which only the owning
 * thread writes (one unlocked add, which a signal handler of that thread cannot split),
 * and what of each count was folded already, which only folds write, by compare-and-swap,
 * since the owner's end and the image's end may fold the same table at once. Tables sit
 * on a list that only grows; a thread's end marks its table free, and a later thread
 * continues its counts where they stand, so nothing counted waits on an exited thread.
 */
#include "counted_calls.h"

#include <sys/mman.h>

#include "patch/patch.h"

#define HEADER_BYTES 4096u

struct count_table {
	struct count_table *next; /* set before the table is published, then never changed */
	_Atomic bool in_use;
	uint64_t *counts; /* written by the owner only */
	uint64_t *taken;  /* counts[i] already folded; written by folds only */
};

RT_TLS uint64_t *rt_counted_here;
static RT_TLS struct count_table *mine;
static RT_TLS bool claiming, ended;
/* No table could be had (address space limits, strict overcommit): the shared words from then
 * on, without another mmap at every counted call. */
static RT_TLS bool claim_failed;
static _Atomic(struct count_table *) tables;

static size_t nslots(void)
{
	return (size_t)RT_FUNC_IDS + (rt_patch_built() ? RT_PATCH_MAX_IDS : 0);
}

static struct count_table *new_table(void)
{
	size_t bytes = HEADER_BYTES + 2 * nslots() * sizeof(uint64_t);
	struct count_table *t = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (t == MAP_FAILED)
		return NULL;
	t->counts = (uint64_t *)((char *)t + HEADER_BYTES);
	t->taken = t->counts + nslots();
	atomic_store_explicit(&t->in_use, true, memory_order_relaxed);
	t->next = atomic_load_explicit(&tables, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&tables, &t->next, t, memory_order_release,
						      memory_order_relaxed))
		;
	return t;
}

static struct count_table *free_table(void)
{
	for (struct count_table *t = atomic_load_explicit(&tables, memory_order_acquire); t;
	     t = t->next) {
		bool no = false;

		if (!atomic_load_explicit(&t->in_use, memory_order_relaxed) &&
		    atomic_compare_exchange_strong_explicit(
			    &t->in_use, &no, true, memory_order_acquire, memory_order_relaxed))
			return t;
	}
	return NULL;
}

uint64_t *rt_counted_claim(void)
{
	struct count_table *t;

	if (ended || claiming || claim_failed)
		return NULL; /* a handler inside a claim counts in the shared word */
	claiming = true;
	__asm__ __volatile__("" ::: "memory");
	if (!(t = free_table()))
		t = new_table();
	if (t) {
		mine = t;
		rt_counted_here = t->counts;
	} else {
		claim_failed = true;
	}
	__asm__ __volatile__("" ::: "memory");
	claiming = false;
	return t ? t->counts : NULL;
}

/* What slot `i` of `t` counted since the last fold, taken exactly once. A slot counting from
 * `bias` (patch ids: 1 + the calls, so that 0 says "not counted here") that was never
 * folded has taken 0. */
static uint64_t take(struct count_table *t, size_t i, uint64_t bias)
{
	uint64_t c = __atomic_load_n(&t->counts[i], __ATOMIC_RELAXED);
	uint64_t k = __atomic_load_n(&t->taken[i], __ATOMIC_RELAXED);

	while (c > (k ? k : bias)) {
		if (__atomic_compare_exchange_n(&t->taken[i], &k, c, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return c - (k ? k : bias);
		/* Another fold took up to k meanwhile; the count may have grown past it. */
		c = __atomic_load_n(&t->counts[i], __ATOMIC_RELAXED);
	}
	return 0;
}

static void fold(struct count_table *t)
{
	uint32_t npatch = rt_patch_counted_ids();
	uint64_t n;

	/* The hooks count only throttled functions: the others' slots stay untouched pages. */
	for (uint32_t id = 0; id < RT_FUNC_IDS; id++)
		if (rt_func_throttled(id) && (n = take(t, id, 0)))
			rt_func_count_untimed(id, n);
	for (uint32_t id = 0; id < npatch; id++)
		if ((n = take(t, RT_COUNTED_PATCH_BASE + (size_t)id, 1)))
			rt_patch_add_counted(id, n);
}

void rt_counted_fold_all(void)
{
	for (struct count_table *t = atomic_load_explicit(&tables, memory_order_acquire); t;
	     t = t->next)
		fold(t);
}

void rt_counted_thread_end(void)
{
	struct count_table *t = mine;

	ended = true;
	rt_counted_here = NULL;
	mine = NULL;
	if (!t)
		return;
	fold(t);
	atomic_store_explicit(&t->in_use, false, memory_order_release);
}

/* Slot `i` of `t` back to 0, written only when it is not: it may be an untouched page. */
static void clear(struct count_table *t, size_t i)
{
	if (t->counts[i])
		t->counts[i] = 0;
	if (t->taken[i])
		t->taken[i] = 0;
}

void rt_counted_patch_reset(uint32_t id)
{
	for (struct count_table *t = atomic_load_explicit(&tables, memory_order_acquire); t;
	     t = t->next) {
		uint64_t n = take(t, RT_COUNTED_PATCH_BASE + (size_t)id, 1);

		if (n)
			rt_patch_add_counted(id, n);
		clear(t, RT_COUNTED_PATCH_BASE + (size_t)id);
	}
}

void rt_counted_fork_child(void)
{
	uint32_t npatch = rt_patch_counted_ids();

	/* Every slot back to 0: a patched function is recorded again until the child
	 * throttles it. */
	for (struct count_table *t = atomic_load_explicit(&tables, memory_order_acquire); t;
	     t = t->next) {
		for (uint32_t id = 0; id < RT_FUNC_IDS; id++)
			if (rt_func_throttled(id))
				clear(t, id);
		for (uint32_t id = 0; id < npatch; id++)
			clear(t, RT_COUNTED_PATCH_BASE + (size_t)id);
		if (t != mine)
			atomic_store_explicit(&t->in_use, false, memory_order_relaxed);
	}
}
