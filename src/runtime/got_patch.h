/* SPDX-License-Identifier: MIT */
/* GOT rewriting for syscope attach (got_patch.c): the program's calls to some functions sent
 * to our wrappers, in a process whose objects were bound before libsyscope.so was loaded. */
#ifndef SYSCOPE_RT_GOT_PATCH_H
#define SYSCOPE_RT_GOT_PATCH_H

#include <stdbool.h>

struct rt_got_hook {
	const char *name;
	void *wrapper;	     /* what the entries point to while patched */
	void *target;	     /* what the wrapper calls: entries bound elsewhere are left alone */
	const char *version; /* the symbol version the wrapper calls, or NULL */
	bool parallel;	     /* a --parallel wrapper: its entries counted apart too */
};

struct rt_got_counts {
	unsigned objects, entries; /* patched */
	unsigned parallel_entries; /* of them, those of --parallel wrappers */
	unsigned elsewhere;	   /* entries bound to another definition: left alone */
	unsigned refused;	   /* entries whose page could not be made writable */
	char refused_object[256];  /* the first object refused */
	bool table_full;
};

/* Every object loaded now and not patched yet (the program, its libraries; never
 * libsyscope*, the loader, the vDSO, libc): its entries for `hooks` (sorted by name, strcmp)
 * point to the wrappers. */
void rt_got_patch_loaded(const struct rt_got_hook *hooks, unsigned n);
/* Whether objects were loaded since the last call (a cheap look at the loader's counter). */
bool rt_got_loads_changed(void);
/* Every patched entry back to what it was (of objects still loaded, and still ours). */
void rt_got_restore(void);
const struct rt_got_counts *rt_got_counts(void);

#endif
