/* SPDX-License-Identifier: MIT */
/*
 * syscope attach --parallel=mpi: libsyscope-mpi-attach.so (libsyscope-mpi.so built with
 * dynamic TLS), beside this library, is loaded (local, never unloaded) into a process that
 * has an MPI library, and each MPI function it wraps that the process defines becomes a
 * hook of attach_wrap.c: the program's call entries of MPI_Send (and of the Fortran
 * bindings' mpi_send_, ...) are pointed at its wrapper while attached. The wrappers are the
 * tracer's own exported functions, read from its dynamic symbol table, so this file keeps
 * no second list of them. An MPI library loaded local (RTLD_LOCAL: by Python's mpi4py, by a
 * plugin) is found in the link maps and made global first: the tracer's handles
 * (MPI_COMM_WORLD is an object of Open MPI's library) and its PMPI_* look-ups need it there.
 */
#include "attach.h"

#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "got_patch.h"
#include "mpi_loaded_abi.h"
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

/* Functions whose definitions are the MPI libraries: the C one, the two Fortran ones. */
static const char *const mpi_entry[] = { "PMPI_Init", "pmpi_init_", "pmpi_init_f08_" };

/*
 * No MPI in the global scope: the first loaded object whose own scope (it and what it
 * needs) defines PMPI_Init, and the objects defining mpi_entry's functions there made global
 * (dlopen RTLD_NOLOAD | RTLD_GLOBAL, which adds an object and what it needs to the global
 * scope). Names the MPI library and the object that loaded it in `lib`, `by`; false when no
 * object has MPI.
 */
static bool promote_local_mpi(char *lib, size_t liblen, char *by, size_t bylen)
{
	void *self = dlopen(NULL, RTLD_LAZY);
	struct link_map *lm = NULL;
	bool found = false;

	if (!self || dlinfo(self, RTLD_DI_LINKMAP, &lm))
		lm = NULL;
	for (; lm && !found; lm = lm->l_next) {
		void *h;

		if (!lm->l_name || !lm->l_name[0] || strstr(lm->l_name, "/libsyscope"))
			continue;
		h = dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		for (size_t i = 0; i < sizeof(mpi_entry) / sizeof(mpi_entry[0]); i++) {
			void *f = dlsym(h, mpi_entry[i]), *g;
			Dl_info where;

			if (!f || !dladdr(f, &where) || !where.dli_fname)
				continue;
			if (!found) {
				snprintf(lib, liblen, "%s", where.dli_fname);
				snprintf(by, bylen, "%s", lm->l_name);
			}
			found = true;
			g = dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_GLOBAL);
			if (g)
				dlclose(g); /* it stays: the program loaded it */
		}
		dlclose(h);
	}
	if (self)
		dlclose(self);
	return found && dlsym(RTLD_DEFAULT, "PMPI_Init");
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

#ifndef SYSCOPE_MPI_DEFAULT_ABI
#define SYSCOPE_MPI_DEFAULT_ABI "openmpi"
#endif

/* The tracer of the process's MPI ABI: libsyscope-mpi-attach.so is built for one,
 * libsyscope-mpi-attach-mpich.so, where it was built, for MPICH's (src/cmd/mpi_abi.h). */
static const char *tracer_name(void)
{
	bool mpich = !sc_loaded_mpi_is_openmpi();

	if (mpich == !strcmp(SYSCOPE_MPI_DEFAULT_ABI, "mpich"))
		return "libsyscope-mpi-attach.so";
	return mpich ? "libsyscope-mpi-attach-mpich.so" : "libsyscope-mpi-attach-openmpi.so";
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
		 "%s", tracer_name());
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!h)
		snprintf(why, whylen, "%s", dlerror());
	return h;
}

unsigned rt_attach_mpi_hooks(struct rt_got_hook *out, unsigned max)
{
	char why[512] = "", lib[PATH_MAX] = "", by[PATH_MAX] = "";
	void *tracer;
	mpi_attach_fn start;
	unsigned n;
	int rank;

	if (!dlsym(RTLD_DEFAULT, "PMPI_Init")) {
		if (!promote_local_mpi(lib, sizeof(lib), by, sizeof(by))) {
			rt_note(SC_NOTE_WARN,
				"attach: --parallel=mpi: no MPI library in the process (no object "
				"of it defines PMPI_Init): no MPI call is recorded; everything "
				"else goes on");
			return 0;
		}
		rt_note(SC_NOTE_INFO,
			"attach: --parallel=mpi: %s was loaded local (RTLD_LOCAL, with %s): made "
			"global so that the MPI tracer reaches it; calls through pointers the "
			"program took with dlsym before the attach are not seen",
			lib, by);
	}
	tracer = load_tracer(why, sizeof(why));
	*(void **)&start = tracer ? dlsym(tracer, "syscope_mpi_attach") : NULL;
	if (!start) {
		rt_note(SC_NOTE_WARN,
			"attach: --parallel=mpi: %s (the tracer for this process's MPI) cannot be "
			"loaded (%s): no MPI call is recorded",
			tracer_name(), tracer ? "it has no attach entry" : why);
		return 0;
	}
	rank = start(syscope_plugin_api(SC_PLUGIN_ABI));
	if (rank == -2)
		return 0;
	n = wrappers_of(tracer, out, max);
	if (rank >= 0)
		rt_note(SC_NOTE_INFO,
			"attach: --parallel=mpi: rank %d; %u MPI functions wrapped; no clock sync "
			"(rank 0's clock is measured at MPI_Init, which this rank passed before the "
			"attach): merged with other ranks its times are this host's clock, right "
			"for ranks of one host, not aligned across hosts; communicators and "
			"requests made before the attach are named so",
			rank, n);
	else
		rt_note(SC_NOTE_INFO,
			"attach: --parallel=mpi: MPI not initialized (or finalized) at the attach; "
			"%u MPI functions wrapped",
			n);
	return n;
}
