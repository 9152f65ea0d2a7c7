/* SPDX-License-Identifier: MIT */
/* The Fortran bindings (added below). */
#include "mpi_record.h"
