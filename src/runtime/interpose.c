/* SPDX-License-Identifier: MIT */
/*
 * The libc functions the runtime wraps, resolved once to their next definition (libc's).
 * Resolution happens in the constructor; a wrapper called earlier (another preloaded
 * library's constructor) resolves on first use through RT_REAL().
 */
#include "rt.h"

#include <dlfcn.h>
#include <link.h>

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

/*
 * The real `name` for a hook called from `caller`: the next definition in the global scope
 * (kept in `cache` once found), else the one the caller's own object reaches (a library
 * loaded RTLD_LOCAL, such as libstdc++ and libgcc_s under a Python extension, is found in
 * no global scope), else any loaded object's. NULL only when nothing loaded defines it.
 * Not for signal handlers: the loader's functions take its locks.
 */
void *rt_real_find(const char *name, void **cache, const void *caller)
{
	void *p = __atomic_load_n(cache, __ATOMIC_ACQUIRE);

	if (p)
		return p;
	/* Looked up again each time it is missing: the library may be loaded since. */
	p = dlsym(RTLD_NEXT, name);
	if (p) {
		__atomic_store_n(cache, p, __ATOMIC_RELEASE);
		return p;
	}
	p = lookup_from(caller, name);
	return p ? p : lookup_anywhere(name);
}

#define RESOLVE(field) rt_real.field = (__typeof__(rt_real.field))rt_real_lookup(#field)

void rt_real_resolve(void)
{
	RESOLVE(pthread_create);
	RESOLVE(sigaction);
	RESOLVE(sigprocmask);
	RESOLVE(pthread_sigmask);
	RESOLVE(close);
	RESOLVE(close_range);
	RESOLVE(closefrom);
	RESOLVE(dup2);
	RESOLVE(dup3);
	RESOLVE(execve);
	RESOLVE(execvpe);
	RESOLVE(fexecve);
	RESOLVE(posix_spawn);
	RESOLVE(posix_spawnp);
	RESOLVE(fork);
	RESOLVE(exit);
	RESOLVE(_exit);
	RESOLVE(_Exit);
	RESOLVE(pthread_setname_np);
}
