/* SPDX-License-Identifier: MIT */
/*
 * For test_attach_wrap.py: a pthread_mutex_lock of the program's own, preloaded in front of
 * the C library's (as a program's lock profiler or debugging allocator would be). syscope
 * attach must leave the entries bound to it alone.
 */
#include <dlfcn.h>
#include <pthread.h>

int pthread_mutex_lock(pthread_mutex_t *m)
{
	static int (*real)(pthread_mutex_t *);

	if (!real)
		real = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
	return real(m);
}
