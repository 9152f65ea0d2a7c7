/* SPDX-License-Identifier: MIT */
/*
 * What a sample of the launching thread says it was doing in a GPU idle interval
 * (gpu_idle.h), from its path (Python frames spliced in): waiting for the GIL, in a data
 * loader or queue get, in MPI, NCCL or a CUDA synchronization, in I/O, blocked, or
 * computing. Each distinct stack is classified once.
 */
#include "idle_classify.h"

#include <stdlib.h>
#include <string.h>

static bool name_in(const char *name, const char *const *list)
{
	while (*name == '_')
		name++;
	if (!strncmp(name, "libc_", 5))
		name += 5;
	for (; *list; list++)
		if (!strcmp(name, *list))
			return true;
	return false;
}

static const char *const io_calls[] = {
	"read",	    "write",	"pread",   "pread64",	"pwrite",     "pwrite64",    "readv",
	"writev",   "preadv",	"pwritev", "recv",	"recvfrom",   "recvmsg",     "send",
	"sendto",   "sendmsg",	"poll",	   "ppoll",	"epoll_wait", "epoll_pwait", "select",
	"pselect",  "pselect6", "fsync",   "fdatasync", "open",	      "open64",	     "openat",
	"openat64", "fread",	"fwrite",  "fflush",	NULL,
};

static const char *const blocking_calls[] = {
	"nanosleep",
	"clock_nanosleep",
	"usleep",
	"sleep",
	"pause",
	"futex",
	"pthread_cond_wait",
	"pthread_cond_timedwait",
	"sem_wait",
	"sem_timedwait",
	"pthread_join",
	"pthread_mutex_lock",
	"lll_lock_wait",
	"futex_abstimed_wait_common",
	"futex_wait",
	"waitpid",
	"wait4",
	"sigwait",
	"sigtimedwait",
	"sched_yield",
	NULL,
};

static bool is_loader(const struct sc_func *f)
{
	static const char *const names[] = { "DataLoader", "__getitem__", "_worker_loop",
					     "Queue.get",  "queue.get",	  "fetch",
					     NULL };
	static const char *const modules[] = { "multiprocessing", "dataloader", "queue", NULL };

	for (const char *const *n = names; *n; n++)
		if (strstr(f->name, *n))
			return !strcmp(*n, "fetch") ? strstr(f->name, "Fetcher") != NULL : true;
	for (const char *const *n = modules; f->module && *n; n++)
		if (strstr(f->module, *n))
			return true;
	return false;
}

static struct sc_idle_class classify_path(struct sc_profile_set *set, const uint32_t *funcs,
					  size_t n, unsigned gil)
{
	const char *leaf = n ? sc_func_of(set, funcs[n - 1])->name : "?";
	const char *loader = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct sc_func *f = sc_func_of(set, funcs[i]);

		if (!strcmp(f->name, "[waiting for the GIL]") || !strcmp(f->name, "take_gil"))
			gil = SC_GIL_WAITING;
		else if (is_loader(f))
			loader = f->name; /* the innermost one */
	}
	if (gil == SC_GIL_WAITING)
		return (struct sc_idle_class){ SC_IDLE_GIL, "[waiting for the GIL]" };
	if (loader)
		return (struct sc_idle_class){ SC_IDLE_LOADER, loader };
	for (size_t i = n; i-- > 0;) {
		const char *f = sc_func_of(set, funcs[i])->name;

		if (!strncmp(f, "MPI_", 4) || !strncmp(f, "PMPI_", 5))
			return (struct sc_idle_class){ SC_IDLE_MPI, f };
		if (!strncmp(f, "nccl", 4))
			return (struct sc_idle_class){ SC_IDLE_NCCL, f };
		if (strstr(f, "ynchronize"))
			return (struct sc_idle_class){ SC_IDLE_SYNC, f };
	}
	/* The leaf or the two frames above it: a wrapper's, or the libc internals below. */
	for (size_t i = n, k = 0; i-- > 0 && k < 3; k++) {
		const char *f = sc_func_of(set, funcs[i])->name;

		if (name_in(f, io_calls))
			return (struct sc_idle_class){ SC_IDLE_IO, f };
		if (name_in(f, blocking_calls))
			return (struct sc_idle_class){ SC_IDLE_NOT_RUNNING, f };
	}
	return (struct sc_idle_class){ SC_IDLE_COMPUTE, leaf };
}

struct sc_idle_class sc_idle_classify(struct sc_idle_classifier *k, uint32_t stack)
{
	while (k->by_stack.n <= stack)
		*VEC_PUSH(&k->by_stack) = (struct sc_idle_class){ 0, NULL };
	if (!k->by_stack.v[stack].name) {
		const struct sc_stack *st = &k->set->model->stacks.v[stack];
		unsigned gil = sc_stack_gil(k->set, stack);
		uint32_t *funcs;
		size_t n = sc_stack_path(k->set, st, &funcs, NULL);

		k->by_stack.v[stack] = classify_path(k->set, funcs, n, gil);
	}
	return k->by_stack.v[stack];
}

void sc_idle_classifier_free(struct sc_idle_classifier *k)
{
	VEC_FREE(&k->by_stack);
}
