/* SPDX-License-Identifier: MIT */
/*
 * Linked into mpi_attach (exported with -rdynamic): counts the fork handlers that syscope's
 * libraries register in the process (pthread_atfork is glibc's __register_atfork, which a
 * library calls through its PLT, so the program's definition comes first), and prints the
 * counts to stderr at the process's end: "atfork pid=PID mpi-tracer=N runtime=M". A tracer
 * started again at each attach must register its handler once (test_attach_mpi.py).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((visibility("default"))) int
__register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso);

static int tracer_handlers, runtime_handlers;

int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso)
{
	static int (*real)(void (*)(void), void (*)(void), void (*)(void), void *);
	Dl_info where;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "__register_atfork");
	if (dladdr(dso, &where) && where.dli_fname) {
		if (strstr(where.dli_fname, "/libsyscope-mpi"))
			tracer_handlers++;
		else if (strstr(where.dli_fname, "/libsyscope.so"))
			runtime_handlers++;
	}
	return real ? real(prepare, parent, child, dso) : -1;
}

__attribute__((destructor)) static void print_counts(void)
{
	fprintf(stderr, "atfork pid=%d mpi-tracer=%d runtime=%d\n", (int)getpid(), tracer_handlers,
		runtime_handlers);
}
