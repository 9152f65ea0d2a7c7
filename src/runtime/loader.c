/* SPDX-License-Identifier: MIT */
/*
 * The dynamic loader's list of loaded objects, for signal handlers that must not ask the
 * loader for it.
 *
 * dl_iterate_phdr takes the loader's recursive lock (dl_load_write_lock, a pthread mutex).
 * A sampling signal that lands while its own thread is taking or releasing that lock (inside
 * glibc's mutex code, with the owner field and the futex word out of step) and asks for the
 * list again waits for itself forever. So samples never call the loader: they read a copy
 * of the list made in normal context, at process start and at every loader event (the
 * loader calls _dl_debug_state, r_debug's r_brk, with r_state RT_ADD or RT_DELETE before it
 * changes the list and RT_CONSISTENT after), hooked by loader_hook_*.c. libunwind reaches
 * the copy too: libsyscope.so is preloaded, so its dl_iterate_phdr below is the one that
 * libunwind's PLT call binds to; inside a sample it serves the copy, elsewhere it forwards.
 *
 * The copy is published lock-free: two buffers, the current one's index, and per buffer the
 * number of handlers reading it. A writer fills the buffer nobody reads and switches to it.
 * While objects are being unloaded (RT_DELETE until RT_CONSISTENT) the published list holds
 * only the objects loaded before the program started, never unmapped, and the writer waits
 * for the handlers still reading the full one before the loader goes on to unmap: a sample
 * then sees no frame of a library being unloaded (its stack may end early: counted).
 *
 * Where the loader cannot be hooked, samples call the loader as before, except where the
 * thread is seen changing the list or in a mutex lock or unlock (a narrower guard that does
 * not close the window: said in a note).
 */
#include "rt.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sched.h>
#include <string.h>

#ifdef SYSCOPE_HAVE_PATCHING
#include "patch/patch.h"
#endif

#define LOADER_MAX_OBJECTS 1024
#define WAIT_READERS_NS 1000000000ull /* a handler reads in microseconds: a bound, not a wait */

struct loaded_object {
	struct dl_phdr_info info; /* dlpi_tls_data left NULL: it is each thread's own */
	bool initial;		  /* there before the program started: never unloaded */
};

struct loader_list {
	unsigned n;
	bool partial; /* only the initial objects: a library is being unloaded */
	struct loaded_object obj[LOADER_MAX_OBJECTS];
};

static struct loader_list lists[2];
static atomic_uint current;    /* index of the published list */
static atomic_uint readers[2]; /* handlers reading each list */
static pthread_mutex_t writer = PTHREAD_MUTEX_INITIALIZER;
static bool hooked; /* loader events keep the copy: samples use it */
/* A fork child setting itself up: a thread of the parent that no longer exists may have held
 * the loader's lock at the fork (a dlopen, a walk), so it must not be asked for the list;
 * the copy is the list as it was (rt_loader_fork_child_done ends this). */
static bool child_walks_copy;
static atomic_ulong partial_walks; /* samples served the initial objects only */
static atomic_ulong slow_readers;  /* unloads that went on before every reader had left */
static atomic_ulong stale_lists;   /* changes not copied: a reader held the spare list */
static bool overflowed;		   /* more objects than LOADER_MAX_OBJECTS */

/* ---- the loader's state, readable without its lock ---- */

/* Every namespace's r_debug (one per dlmopen namespace, chained from r_version 2 on). */
static int loader_states(void)
{
	const struct r_debug_extended *r = (const struct r_debug_extended *)(void *)&_r_debug;
	int states = 0;

	for (unsigned i = 0; r && i < 256; i++) {
		states |= 1 << __atomic_load_n(&r->base.r_state, __ATOMIC_ACQUIRE);
		r = __atomic_load_n(&r->base.r_version, __ATOMIC_RELAXED) >= 2
			    ? __atomic_load_n(&r->r_next, __ATOMIC_ACQUIRE)
			    : NULL;
	}
	return states;
}

bool rt_loader_settled(void)
{
	return loader_states() == 1 << RT_CONSISTENT;
}

/* ---- writers (normal context, one at a time) ---- */

static int copy_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct loader_list *l = data;
	struct loaded_object *o;

	if (l->n == LOADER_MAX_OBJECTS) {
		overflowed = true;
		return 1;
	}
	o = &l->obj[l->n++];
	memset(o, 0, sizeof(*o));
	memcpy(&o->info, info, size < sizeof(o->info) ? size : sizeof(o->info));
	o->info.dlpi_tls_data = NULL;
	return 0;
}

static bool was_initial(const struct loader_list *old, const struct dl_phdr_info *info)
{
	for (unsigned i = 0; i < old->n; i++)
		if (old->obj[i].initial && old->obj[i].info.dlpi_addr == info->dlpi_addr &&
		    old->obj[i].info.dlpi_phdr == info->dlpi_phdr)
			return true;
	return false;
}

/* Wait until no handler reads list `i` (one retired); false if one still does after a while
 * (its thread stopped in the middle, by a debugger say). */
static bool wait_for_readers(unsigned i)
{
	uint64_t start = rt_now_ns();

	while (atomic_load(&readers[i])) {
		if (rt_now_ns() - start > WAIT_READERS_NS)
			return false;
		sched_yield();
	}
	return true;
}

/* Fill the list nobody reads: the loader's list (`partial` false) or the initial objects of
 * the published one; publish it. Called with `writer` held. */
static void publish(bool partial, bool initial)
{
	unsigned cur = atomic_load(&current), next = cur ^ 1;
	struct loader_list *old = &lists[cur], *l = &lists[next];

	if (!wait_for_readers(next)) { /* a handler that took it before the last switch */
		atomic_fetch_add(&stale_lists, 1); /* the published list stays as it is */
		return;
	}
	l->n = 0;
	l->partial = partial;
	if (partial) {
		for (unsigned i = 0; i < old->n; i++)
			if (old->obj[i].initial)
				l->obj[l->n++] = old->obj[i];
	} else {
		RT_REAL(dl_iterate_phdr)(copy_object, l);
		for (unsigned i = 0; i < l->n; i++)
			l->obj[i].initial = initial || was_initial(old, &l->obj[i].info);
	}
	atomic_store(&current, next);
	if (partial && !wait_for_readers(cur)) /* none may walk objects about to be unmapped */
		atomic_fetch_add(&slow_readers, 1);
}

/* The loader calls this (through loader_hook_*.c) before and after it changes its list,
 * holding its own lock, in normal context. */
void rt_loader_event(void)
{
	int states = loader_states();

	if (states & (1 << RT_DELETE)) {
		pthread_mutex_lock(&writer);
		if (!lists[atomic_load(&current)].partial)
			publish(true, false);
		pthread_mutex_unlock(&writer);
		return;
	}
	if (states != 1 << RT_CONSISTENT)
		return; /* RT_ADD: nothing is unmapped before the list is consistent again */
	pthread_mutex_lock(&writer);
	publish(false, false);
	pthread_mutex_unlock(&writer);
	if (!rt_active())
		return;
	/* The new (or gone) module is recorded now, before any of its code runs: records
	 * from it are named even when no sample ever looks at the map. */
	rt_modules_check();
#ifdef SYSCOPE_HAVE_PATCHING
	rt_patch_loader_event();
#endif
}

/* ---- readers ---- */

/* The published list, held until release_list(): async-signal-safe, lock-free. */
static unsigned take_list(void)
{
	for (;;) {
		unsigned i = atomic_load(&current);

		atomic_fetch_add(&readers[i], 1);
		if (atomic_load(&current) == i)
			return i;
		atomic_fetch_sub(&readers[i], 1); /* switched meanwhile: take the new one */
	}
}

static void release_list(unsigned i)
{
	atomic_fetch_sub(&readers[i], 1);
}

static int walk_copy(rt_phdr_callback cb, void *data, bool *complete)
{
	unsigned i = take_list();
	const struct loader_list *l = &lists[i];
	int rc = 0;

	*complete = !l->partial;
	if (l->partial)
		atomic_fetch_add(&partial_walks, 1);
	for (unsigned k = 0; k < l->n && !rc; k++) {
		struct dl_phdr_info info = l->obj[k].info; /* the callback may write to it */

		rc = cb(&info, sizeof(info), data);
	}
	release_list(i);
	return rc;
}

/* ---- without the hook: the loader itself, guarded ---- */

static RT_TLS int inside; /* this thread is in the loader's dl_iterate_phdr */

/* The code of pthread_mutex_lock and _unlock, which the loader's lock goes through. */
static uintptr_t lock_code[2][2];

static void find_lock_code(void)
{
	static const char *const names[2] = { "pthread_mutex_lock", "pthread_mutex_unlock" };
	/* The C library's own: with --parallel=pthread the next definition after ours is the
	 * wrapper in libsyscope-pthread.so. */
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);

	for (int i = 0; i < 2; i++) {
		void *fn = libc ? dlsym(libc, names[i]) : NULL;
		const ElfW(Sym) *sym = NULL;
		Dl_info info;

		fn = fn ? fn : rt_real_lookup(names[i]);
		if (fn && dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) && sym &&
		    sym->st_size) {
			lock_code[i][0] = (uintptr_t)fn;
			lock_code[i][1] = (uintptr_t)fn + sym->st_size;
		}
	}
	if (libc)
		dlclose(libc);
}

/* A sample that interrupted an iteration of the list, the loader changing it, or a lock or
 * unlock, must leave the loader alone. */
static bool sample_must_not_iterate(void)
{
	uintptr_t pc = rt_self.sample_pc;

	if (inside || !rt_loader_settled())
		return true;
	for (int i = 0; i < 2; i++)
		if (pc >= lock_code[i][0] && pc < lock_code[i][1])
			return true;
	return false;
}

static int walk_loader(rt_phdr_callback cb, void *data)
{
	int rc;

	inside++;
	rc = RT_REAL(dl_iterate_phdr)(cb, data);
	inside--;
	return rc;
}

/* ---- the interface ---- */

#ifndef SYSCOPE_HAVE_LOADER_HOOK
bool rt_loader_hook_install(void)
{
	return false; /* no hook for this architecture: samples call the loader, guarded */
}
#endif

bool rt_loader_walk(rt_phdr_callback cb, void *data, int *rc)
{
	bool complete = true;
	int r = 0;

	if (child_walks_copy)
		r = walk_copy(cb, data, &complete);
	else if (!rt_self.in_sampler)
		r = walk_loader(cb, data);
	else if (hooked)
		r = walk_copy(cb, data, &complete);
	else if (sample_must_not_iterate())
		complete = false; /* nothing: the stack ends there instead of waiting forever */
	else
		r = walk_loader(cb, data);
	if (rc)
		*rc = r;
	return complete;
}

/* What libunwind (and anything else in the process) calls. */
RT_EXPORT int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
	int rc;

	rt_loader_walk(cb, data, &rc);
	return rc;
}

/* Only this thread goes on in a fork child: nobody reads, nobody writes (whether the child
 * is recorded or not: the hook stays in its loader). */
static void fork_child(void)
{
	pthread_mutex_init(&writer, NULL);
	atomic_store(&readers[0], 0);
	atomic_store(&readers[1], 0);
	atomic_store(&partial_walks, 0);
	atomic_store(&slow_readers, 0);
	atomic_store(&stale_lists, 0);
	child_walks_copy = hooked;
}

void rt_loader_fork_child_done(void)
{
	child_walks_copy = false;
}

void rt_loader_init(void)
{
	find_lock_code();
	pthread_atfork(NULL, NULL, fork_child);
	pthread_mutex_lock(&writer);
	publish(false, true);
	pthread_mutex_unlock(&writer);
	/* The hook last: an event between the copy and the hook is caught by the copy made at
	 * the first event after it (a library loaded meanwhile is recorded by its samples). */
	hooked = rt_loader_hook_install();
	if (hooked) {
		pthread_mutex_lock(&writer);
		publish(false, false);
		pthread_mutex_unlock(&writer);
	} else {
		rt_note(SC_NOTE_WARN,
			"the dynamic loader could not be hooked (its _dl_debug_state is not the "
			"kind syscope knows, or this architecture has no hook): samples ask it for "
			"its list of objects, and one landing while its lock changes hands in a "
			"program that keeps calling dlopen/dlclose may wait forever");
	}
}

void rt_loader_process_stop(void)
{
	unsigned long partial = atomic_load(&partial_walks), slow = atomic_load(&slow_readers);
	unsigned long stale = atomic_load(&stale_lists);

	if (partial)
		rt_note(SC_NOTE_INFO,
			"loader: %lu looks at the list of loaded objects from samples came while a "
			"library was being unloaded and saw only those loaded at start (their call "
			"stacks may end early)",
			partial);
	if (slow)
		rt_note(SC_NOTE_WARN,
			"loader: %lu library unloads went on while a sample still read the list of "
			"loaded objects (after waiting 1 s for it)",
			slow);
	if (stale)
		rt_note(SC_NOTE_WARN,
			"loader: %lu changes of the list of loaded objects were not copied for "
			"samples (a sample held the copy for over 1 s): stacks through libraries "
			"loaded since may end early",
			stale);
	if (overflowed)
		rt_note(SC_NOTE_WARN,
			"loader: more than %d objects were loaded: samples see the "
			"first %d only",
			LOADER_MAX_OBJECTS, LOADER_MAX_OBJECTS);
}
