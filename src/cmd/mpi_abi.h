/* SPDX-License-Identifier: MIT */
/*
 * Which MPI a program is built for. Open MPI's and MPICH's ABIs differ (a communicator is a
 * pointer in one, an int in the other; MPI_Status differs), so libsyscope-mpi.so is built
 * once per ABI (CMakeLists.txt) and the launcher preloads the one that matches: never a
 * wrapper of the other ABI, which would hand the library garbage handles.
 */
#ifndef SYSCOPE_CMD_MPI_ABI_H
#define SYSCOPE_CMD_MPI_ABI_H

#include <stddef.h>

enum sc_mpi_abi {
	SC_MPI_ABI_UNKNOWN,
	SC_MPI_ABI_OPENMPI, /* libmpi.so.40 */
	SC_MPI_ABI_MPICH,   /* libmpich.so.12, libmpi.so.12: MPICH, Intel MPI, MVAPICH */
};

/* The ABI of `program`, from the MPI libraries it names (DT_NEEDED), else from the launcher
 * that started us (mpirun's or mpiexec's environment; srun's names no MPI, so a script under
 * srun gets the default build's tracer); `why` says which (static text, or a library's
 * name in `buf`). */
enum sc_mpi_abi sc_mpi_abi_of(const char *program, char *buf, size_t buflen, const char **why);
const char *sc_mpi_abi_name(enum sc_mpi_abi abi);
/* The ABI libsyscope-mpi.so was built for (SYSCOPE_MPI_DEFAULT_ABI). */
enum sc_mpi_abi sc_mpi_abi_built(void);

#endif /* SYSCOPE_CMD_MPI_ABI_H */
