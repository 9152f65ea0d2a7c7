/* SPDX-License-Identifier: MIT */
/* The `use mpi_f08` bindings: mpi_fortran.c's wrappers under the _f08_ names. */
#define SYSCOPE_MPI_F08 1
#include "mpi_fortran.c"
