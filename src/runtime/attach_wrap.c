/* SPDX-License-Identifier: MIT */
/*
 * syscope attach: the wrappers the launcher preloads, put in front of the program's calls
 * by GOT rewriting (got_patch.c) instead. Always: _exit and _Exit (lifecycle.c's, so the end
 * reason and status are recorded), the exec family, posix_spawn and fork (exec.c's: an exec,
 * of the process or of a fork child of it, flushes the recording and records its end, and
 * a fork or spawn is recorded in the parent), sigaction and signal (signals.c's: a program
 * that gives a signal its default back to raise it again after its cleanup, as xz and gzip
 * do, ends through the recorder that keeps the end and the last records; the sampler
 * signals stay syscope's while attached). With --parallel=pthread: pthread_create
 * (threads.c's: a thread made while attached is recorded with its creator), the semaphore
 * waits (wrap_block.c's) and the lock, condition, barrier and join wrappers of
 * libsyscope-pthread.so, built here a second time under names of their own. With
 * --parallel=mpi: the MPI wrappers of libsyscope-mpi.so (attach_mpi.c).
 *
 * Objects loaded while attached are patched by the attach thread as soon as it sees the
 * loader's counter move (every 10 ms; the loader's own hook runs before a new object is
 * relocated, too early to write its entries). At the detach every entry gets its old value
 * back; a thread inside a wrapper then finishes its call through the real function, and
 * the wrappers, which stay loaded, pass straight through (their tracing is off).
 */
#include "attach.h"

#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "got_patch.h"

#define EXPORT static
#define PTHREAD_WRAP_ATTACH
#define WRAPPER_NAME(fn) attach_##fn
#include "parallel/pthread_wrap.c"

/* A wrapper of this file: its own "real" pointer set now, to the hook's target. */
#define LOCAL_HOOK(fn, version)                                       \
	{                                                             \
#fn, (void *)attach_##fn, (void *)&real_##fn, version \
	}
/* A wrapper libsyscope.so exports (found by name in it). */
#define EXPORTED_HOOK(fn)             \
	{                             \
#fn, NULL, NULL, NULL \
	}

struct hook_source {
	const char *name;
	void *wrapper;
	void *real_var; /* the wrapper's pointer to the function it calls, or NULL */
	const char *version;
};

/* The ends of a recording (exec.c's wrappers flush it and record the end, as with `run`, in
 * the process and in its fork children; they leave the new program's environment alone; the
 * signal wrappers let the recorders of ending signals come back with the default), and the
 * forks and spawns (recorded in the parent). */
static const struct hook_source always[] = {
	EXPORTED_HOOK(_exit),	EXPORTED_HOOK(_Exit),	    EXPORTED_HOOK(execve),
	EXPORTED_HOOK(execv),	EXPORTED_HOOK(execvp),	    EXPORTED_HOOK(execvpe),
	EXPORTED_HOOK(execl),	EXPORTED_HOOK(execlp),	    EXPORTED_HOOK(execle),
	EXPORTED_HOOK(fexecve), EXPORTED_HOOK(posix_spawn), EXPORTED_HOOK(posix_spawnp),
	EXPORTED_HOOK(fork),	EXPORTED_HOOK(sigaction),   EXPORTED_HOOK(signal),
};

static const struct hook_source pthread_hooks[] = {
	EXPORTED_HOOK(pthread_create),
	EXPORTED_HOOK(sem_wait),
	EXPORTED_HOOK(sem_timedwait),
	EXPORTED_HOOK(sem_clockwait),
	LOCAL_HOOK(pthread_join, NULL),
	LOCAL_HOOK(pthread_mutex_lock, NULL),
	LOCAL_HOOK(pthread_mutex_timedlock, NULL),
	LOCAL_HOOK(pthread_mutex_clocklock, NULL),
	LOCAL_HOOK(pthread_rwlock_rdlock, NULL),
	LOCAL_HOOK(pthread_rwlock_wrlock, NULL),
	LOCAL_HOOK(pthread_rwlock_timedrdlock, NULL),
	LOCAL_HOOK(pthread_rwlock_timedwrlock, NULL),
	LOCAL_HOOK(pthread_rwlock_clockrdlock, NULL),
	LOCAL_HOOK(pthread_rwlock_clockwrlock, NULL),
	LOCAL_HOOK(pthread_cond_wait, "GLIBC_2.3.2"),
	LOCAL_HOOK(pthread_cond_timedwait, "GLIBC_2.3.2"),
	LOCAL_HOOK(pthread_cond_clockwait, NULL),
	LOCAL_HOOK(pthread_barrier_wait, NULL),
};

#define MAX_HOOKS 1024 /* the MPI bindings: C and two Fortran sets */
static struct rt_got_hook hooks[MAX_HOOKS];
static unsigned nhooks;
static uint64_t patch_ns; /* the attach thread's time in got_patch.c: for the note */

static void patch_loaded(void)
{
	uint64_t start = rt_now_ns();

	rt_got_patch_loaded(hooks, nhooks);
	patch_ns += rt_now_ns() - start;
}

/* The try functions the lock wrappers call first (not patched: a try never waits). */
static void resolve_tries(void)
{
	RESOLVE(pthread_mutex_trylock);
	RESOLVE(pthread_rwlock_tryrdlock);
	RESOLVE(pthread_rwlock_trywrlock);
}

static void *next_definition(const char *name, const char *version)
{
	void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;

	return p ? p : dlsym(RTLD_NEXT, name);
}

static void add_hooks(void *self, const struct hook_source *src, unsigned n, bool parallel)
{
	for (unsigned i = 0; i < n && nhooks < MAX_HOOKS; i++) {
		struct rt_got_hook *h = &hooks[nhooks];

		h->name = src[i].name;
		h->version = src[i].version;
		h->parallel = parallel;
		h->target = next_definition(src[i].name, src[i].version);
		h->wrapper = src[i].wrapper ? src[i].wrapper : dlsym(self, src[i].name);
		if (!h->target || !h->wrapper || h->wrapper == h->target)
			continue; /* this C library lacks it (sem_clockwait before 2.30) */
		if (src[i].real_var)
			*(void **)src[i].real_var = h->target;
		nhooks++;
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct rt_got_hook *)a)->name, ((const struct rt_got_hook *)b)->name);
}

void rt_attach_wrap_begin(void)
{
	void *self = dlopen(rt_proc.self_path, RTLD_LAZY | RTLD_NOLOAD);

	nhooks = 0;
	if (!self) {
		rt_note(SC_NOTE_WARN,
			"attach: libsyscope.so cannot find itself (%s): no wrapper "
			"is put in front of the program's calls",
			dlerror());
		return;
	}
	add_hooks(self, always, sizeof(always) / sizeof(always[0]), false);
	if (sc_bool(&rt_proc.settings, SC_SET_USE_PTHREAD)) {
		resolve_tries();
		add_hooks(self, pthread_hooks, sizeof(pthread_hooks) / sizeof(pthread_hooks[0]),
			  true);
	}
	dlclose(self); /* it stays: loaded by the attach */
	if (sc_bool(&rt_proc.settings, SC_SET_USE_MPI)) {
		unsigned from = nhooks;

		nhooks += rt_attach_mpi_hooks(hooks + nhooks, MAX_HOOKS - nhooks);
		for (unsigned i = from; i < nhooks; i++)
			hooks[i].parallel = true;
	}
	qsort(hooks, nhooks, sizeof(hooks[0]), by_name); /* got_patch.c looks them up */
	patch_ns = 0;
	patch_loaded();
}

void rt_attach_wrap_rescan(void)
{
	if (nhooks && rt_got_loads_changed())
		patch_loaded();
}

/* What could not be patched, said once at the detach (a static program has nothing). */
void rt_attach_wrap_end(void)
{
	const struct rt_got_counts *c = rt_got_counts();

	if (!nhooks)
		return;
	if (c->entries)
		rt_note(SC_NOTE_INFO,
			"attach: syscope's wrappers (GOT rewriting) took %u call entr%s in %u "
			"object%s (%.2f ms on syscope's thread); given back at the detach",
			c->entries, c->entries == 1 ? "y" : "ies", c->objects,
			c->objects == 1 ? "" : "s", (double)patch_ns / 1e6);
	if (!c->parallel_entries && (sc_bool(&rt_proc.settings, SC_SET_USE_PTHREAD) ||
				     sc_bool(&rt_proc.settings, SC_SET_USE_MPI)))
		rt_note(SC_NOTE_WARN, "attach: --parallel recorded nothing: no object of "
				      "the program calls the wrapped functions through its GOT");
	if (c->refused)
		rt_note(SC_NOTE_WARN,
			"attach: %u call entries of %s (and others) could not be made writable "
			"(mprotect refused): those calls bypass syscope's wrappers",
			c->refused, c->refused_object);
	if (c->elsewhere)
		rt_note(SC_NOTE_INFO,
			"attach: %u call entries bound to another definition than the C library's "
			"(an interposer, an old symbol version) were left alone",
			c->elsewhere);
	if (c->table_full)
		rt_note(SC_NOTE_WARN, "attach: more call entries than syscope's table holds: "
				      "the last objects' calls bypass its wrappers");
	rt_got_restore();
	nhooks = 0;
}
