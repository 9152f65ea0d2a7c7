/* SPDX-License-Identifier: MIT */
/*
 * The libc functions the runtime wraps (real.def), resolved once to their next definition
 * (libc's), before any constructor of the program; a wrapper called earlier (another
 * preloaded library's constructor) resolves on first use through RT_REAL(). And the
 * definition a hook's caller would reach from its own scope (rt_real_find).
 */
#include "rt.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <unistd.h>

struct rt_real rt_real;

void *rt_real_lookup(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* Whether `p` is inside libsyscope.so itself (our own hook, reached through some scope). */
static bool ours(const void *p)
{
	Dl_info self, at;

	return dladdr((const void *)ours, &self) && dladdr(p, &at) &&
	       self.dli_fbase == at.dli_fbase;
}

/* `name` as the object `lm` sees it: its own local scope (itself and its dependencies). */
static void *lookup_in(const struct link_map *lm, const char *name)
{
	void *h, *p = NULL;

	if (!lm || !lm->l_name || !*lm->l_name)
		return NULL; /* the program: its scope is the global one, searched already */
	h = dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		p = dlsym(h, name);
		dlclose(h);
	}
	return p && !ours(p) ? p : NULL;
}

static void *lookup_from(const void *code, const char *name)
{
	Dl_info info;
	struct link_map *lm = NULL;

	if (!code || !dladdr1(code, &info, (void **)&lm, RTLD_DL_LINKMAP))
		return NULL;
	return lookup_in(lm, name);
}

#define MAX_OBJECTS 512

struct objects {
	const void *inside[MAX_OBJECTS]; /* an address inside each loaded object */
	unsigned n;
};

static int gather_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct objects *o = arg;

	(void)size;
	if (info->dlpi_name && *info->dlpi_name && o->n < MAX_OBJECTS)
		o->inside[o->n++] = info->dlpi_phdr;
	return 0;
}

/* Any loaded object that defines `name`. The addresses are gathered first and looked up
 * after: dlopen must not run inside dl_iterate_phdr, which holds another loader lock. */
static void *lookup_anywhere(const char *name)
{
	struct objects o = { .n = 0 };
	void *p = NULL;

	dl_iterate_phdr(gather_object, &o);
	for (unsigned i = 0; !p && i < o.n; i++)
		p = lookup_from(o.inside[i], name);
	return p;
}

/* glibc's lock-free lookup of the object at an address (2.35 and later), found at run time
 * so that the runtime still loads on an older C library. */
typedef int (*find_object_fn)(void *, struct dl_find_object *);

static find_object_fn find_object(void)
{
	static find_object_fn fn;
	static bool looked;

	if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&fn, (find_object_fn)dlsym(RTLD_DEFAULT, "_dl_find_object"),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&looked, true, __ATOMIC_RELEASE);
	}
	return __atomic_load_n(&fn, __ATOMIC_RELAXED);
}

/* The object (link map) and mapping start of code at `p`, without the loader's locks. */
static bool object_at(const void *p, const void **object, const void **start)
{
	find_object_fn fn = find_object();
	struct dl_find_object fo;

	if (!fn || fn((void *)(uintptr_t)p, &fo))
		return false;
	*object = fo.dlfo_link_map;
	*start = fo.dlfo_map_start;
	return true;
}

/* A definition found earlier for the caller's object, still where it was: both objects at
 * the same place (a library unloaded since, and its dependency with it, no longer
 * matches). */
static void *cached_for(struct rt_real_cache *cache, const void *object, const void *start)
{
	for (unsigned i = 0; i < RT_REAL_SCOPES; i++) {
		struct rt_real_scope *e = &cache->scope[i];
		const void *fn_object, *fn_start;

		if (atomic_load_explicit(&e->caller, memory_order_acquire) != object ||
		    e->caller_start != start)
			continue;
		if (object_at(e->fn, &fn_object, &fn_start) && fn_object == e->fn_object &&
		    fn_start == e->fn_start)
			return e->fn;
	}
	return NULL;
}

/* Keep `fn` for callers in `object`, in a free entry (entries are written once). */
static void cache_for(struct rt_real_cache *cache, const void *object, const void *start, void *fn)
{
	const void *fn_object, *fn_start;

	if (!object_at(fn, &fn_object, &fn_start))
		return;
	for (unsigned i = 0; i < RT_REAL_SCOPES; i++) {
		struct rt_real_scope *e = &cache->scope[i];
		const void *expect = NULL;

		if (!atomic_compare_exchange_strong(&e->caller, &expect, (const void *)1))
			continue;
		e->caller_start = start;
		e->fn = fn;
		e->fn_object = fn_object;
		e->fn_start = fn_start;
		atomic_store_explicit(&e->caller, object, memory_order_release);
		return;
	}
}

/*
 * The real `name` for a hook called from `caller`: the next definition in the global scope
 * (kept once found, looked up again while missing: the library may be loaded since), else
 * the one the caller's own object reaches (a library loaded RTLD_LOCAL, such as libstdc++
 * and libgcc_s under a Python extension, is in no global scope), else any loaded object's.
 * NULL only when nothing loaded defines it. What the caller's scope gave is kept per
 * caller object, checked with glibc's lock-free _dl_find_object, so that a program throwing
 * often does not take the loader's lock at every throw. Not for signal handlers.
 */
void *rt_real_find(const char *name, struct rt_real_cache *cache, const void *caller)
{
	void *p = __atomic_load_n(&cache->global, __ATOMIC_ACQUIRE);
	const void *object = NULL, *start = NULL;
	bool known;

	if (p)
		return p;
	known = caller && object_at(caller, &object, &start);
	if (known && (p = cached_for(cache, object, start)))
		return p;
	p = dlsym(RTLD_NEXT, name);
	if (p) {
		__atomic_store_n(&cache->global, p, __ATOMIC_RELEASE);
		return p;
	}
	p = lookup_from(caller, name);
	if (p && known)
		cache_for(cache, object, start, p);
	return p ? p : lookup_anywhere(name);
}

/* A hook whose function no loaded object defines, with no way to report failure: what the
 * missing function would have done (the program could not have linked without it). */
void rt_real_missing(const char *name)
{
	static const char msg[] = "syscope: a function the program calls is defined by no loaded "
				  "object; aborting\n";

	rt_note(SC_NOTE_WARN, "%s: defined by no loaded object; aborting", name);
	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	abort();
}

bool rt_real_resolved;

void rt_real_resolve(void)
{
#define RT_REAL_FN(name) rt_real.name = (__typeof__(rt_real.name))rt_real_lookup(#name);
#include "real.def"
#undef RT_REAL_FN
	__atomic_store_n(&rt_real_resolved, true, __ATOMIC_RELEASE);
}
