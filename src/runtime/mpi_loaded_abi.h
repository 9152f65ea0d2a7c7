/* SPDX-License-Identifier: MIT */
/*
 * Which MPI ABI the process has loaded, read from the process itself: Open MPI defines the
 * object ompi_mpi_comm_world; MPICH, Intel MPI and MVAPICH (MPICH's ABI) do not. Read by
 * attach, to load the tracer of that ABI, and by the tracer, to leave a process of the other
 * ABI alone (src/cmd/mpi_abi.h chooses for the launcher, from the program's file).
 */
#ifndef SYSCOPE_RUNTIME_MPI_LOADED_ABI_H
#define SYSCOPE_RUNTIME_MPI_LOADED_ABI_H

#include <dlfcn.h>
#include <stdbool.h>

static inline bool sc_loaded_mpi_is_openmpi(void)
{
	return dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world") != NULL;
}

#endif /* SYSCOPE_RUNTIME_MPI_LOADED_ABI_H */
