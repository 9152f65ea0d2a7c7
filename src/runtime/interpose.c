/* SPDX-License-Identifier: MIT */
/*
 * The libc functions the runtime wraps, resolved once to their next definition (libc's).
 * Resolution happens in the constructor; a wrapper called earlier (another preloaded
 * library's constructor) resolves on first use through RT_REAL().
 */
#include "rt.h"

#include <dlfcn.h>

struct rt_real rt_real;

void *rt_real_lookup(const char *name)
{
	return dlsym(RTLD_NEXT, name);
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
