/* SPDX-License-Identifier: MIT */
/*
 * libsyscope-mpi.so loaded by syscope attach into a running MPI process (dlopen, local:
 * src/runtime/attach_mpi.c). Nothing here is called from the program: libsyscope.so calls
 * syscope_mpi_attach once per attach, then points the program's call entries of MPI_* (and
 * the Fortran bindings) at this library's wrappers. A job already past MPI_Init gets its
 * world (rank, size, group) now, as MPI_Init's wrapper would have noted it.
 */
#include <dlfcn.h>

#include "mpi_record.h"

/* The world rank of this process once MPI is initialized, else -1. */
static int world_rank(void)
{
	int (*initialized)(int *) = (int (*)(int *))mpi_next("PMPI_Initialized");
	int (*finalized)(int *) = (int (*)(int *))mpi_next("PMPI_Finalized");
	int (*rank_of)(MPI_Comm, int *) = (int (*)(MPI_Comm, int *))mpi_next("PMPI_Comm_rank");
	int init = 0, fin = 0, rank = -1;

	if (!initialized || !finalized || !rank_of || initialized(&init) != MPI_SUCCESS ||
	    finalized(&fin) != MPI_SUCCESS || !init || fin)
		return -1;
	return rank_of(MPI_COMM_WORLD, &rank) == MPI_SUCCESS ? rank : -1;
}

/*
 * Start recording through `api` (the runtime's plugin table, which a local dlopen does not
 * let us find by name). Returns the world rank, -1 when MPI_Init has not been called yet
 * (its wrapper notes the world then) or MPI is finalized, -2 when `api` is unusable.
 */
__attribute__((visibility("default"))) int syscope_mpi_attach(const struct sc_plugin_api *api);
int syscope_mpi_attach(const struct sc_plugin_api *api)
{
	static bool world_known;
	int rank;

	mpi_attached = true;
	if (!mpi_use_api(api))
		return -2;
	rank = world_rank();
	if (rank >= 0 && !world_known) {
		mpi_job_started(); /* once: the world's group stays valid until MPI_Finalize */
		world_known = true;
	}
	return rank;
}
