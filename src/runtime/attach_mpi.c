/* SPDX-License-Identifier: MIT */
/*
 * syscope attach --parallel=mpi: libsyscope-mpi-attach.so (libsyscope-mpi.so built with
 * dynamic TLS), beside this library, is loaded (local, never unloaded) into a process that
 * has an MPI library, and each MPI function it wraps that the process defines becomes a
 * hook of attach_wrap.c: the program's call entries of MPI_Send (and of the Fortran
 * bindings' mpi_send_, ...) are pointed at its wrapper while attached. The wrappers are the
 * tracer's own exported functions, read from its dynamic symbol table, so this file keeps
 * no second list of them.
 */
#include "attach.h"

#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "got_patch.h"
#include "plugin.h"
#include "python/dynsym.h"

RT_EXPORT const struct sc_plugin_api *syscope_plugin_api(uint32_t abi);

typedef int (*mpi_attach_fn)(const struct sc_plugin_api *);

/* An MPI binding: the C one (MPI_Send) or a Fortran one (mpi_send_, mpi_send_f08_). The
 * tracer's helpers (mpi_write...) have no trailing underscore. */
static bool binding_name(const char *name)
{
	size_t n = strlen(name);

	return !strncmp(name, "MPI_", 4) || (!strncmp(name, "mpi_", 4) && name[n - 1] == '_');
}

/* Each wrapper of the tracer whose function the process defines, as a hook. */
static unsigned wrappers_of(void *tracer, struct rt_got_hook *out, unsigned max)
{
	struct link_map *lm = NULL;
	struct rt_dynsym d;
	unsigned n = 0;

	if (dlinfo(tracer, RTLD_DI_LINKMAP, &lm) || !lm ||
	    !rt_dynsym_open_dynamic(&d, lm->l_addr, lm->l_ld))
		return 0;
	for (size_t i = 1, count = rt_dynsym_count(&d); i < count && n < max; i++) {
		const ElfW(Sym) *s = &d.symtab[i];
		const char *name = d.strtab + s->st_name;
		void *target;

		if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC ||
		    !binding_name(name) || !(target = dlsym(RTLD_DEFAULT, name)))
			continue; /* not a wrapper, or a function this MPI lacks */
		out[n++] = (struct rt_got_hook){ .name = name,
						 .wrapper = (void *)(d.base + s->st_value),
						 .target = target };
	}
	return n;
}

/* The tracer, loaded once and kept (RTLD_NODELETE), since a thread may still be inside one of
 * its wrappers after a detach. */
static void *load_tracer(char *why, size_t whylen)
{
	static void *h;
	char path[PATH_MAX + 32], *slash;

	if (h)
		return h;
	snprintf(path, sizeof(path), "%s", rt_proc.self_path);
	slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof(path) - (size_t)(slash ? slash + 1 - path : 0),
		 "libsyscope-mpi-attach.so");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!h)
		snprintf(why, whylen, "%s", dlerror());
	return h;
}

unsigned rt_attach_mpi_hooks(struct rt_got_hook *out, unsigned max)
{
	char why[512] = "";
	void *tracer;
	mpi_attach_fn start;
	unsigned n;
	int rank;

	if (!dlsym(RTLD_DEFAULT, "PMPI_Init")) {
		rt_note(SC_NOTE_WARN, "attach: --parallel=mpi: no MPI library in the process (no "
				      "object of it defines PMPI_Init): no MPI call is recorded; "
				      "everything else goes on");
		return 0;
	}
	tracer = load_tracer(why, sizeof(why));
	*(void **)&start = tracer ? dlsym(tracer, "syscope_mpi_attach") : NULL;
	if (!start) {
		rt_note(SC_NOTE_WARN,
			"attach: --parallel=mpi: libsyscope-mpi-attach.so cannot be loaded (%s): no MPI "
			"call is recorded",
			tracer ? "it has no attach entry" : why);
		return 0;
	}
	rank = start(syscope_plugin_api(SC_PLUGIN_ABI));
	if (rank == -2)
		return 0;
	n = wrappers_of(tracer, out, max);
	if (rank >= 0)
		rt_note(SC_NOTE_INFO,
			"attach: --parallel=mpi: rank %d; %u MPI functions wrapped (the job's "
			"clocks are not aligned: only this rank is traced)",
			rank, n);
	else
		rt_note(SC_NOTE_INFO,
			"attach: --parallel=mpi: MPI not initialized (or finalized) at the attach; "
			"%u MPI functions wrapped",
			n);
	return n;
}
