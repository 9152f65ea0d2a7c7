/* SPDX-License-Identifier: MIT */
/* A library with OpenMP in it (linked with libgomp), for omp_dlopen.c. */
#include <omp.h>

int omp_lib_members(void);

int omp_lib_members(void)
{
	int members = 0;

	omp_set_dynamic(0);
#pragma omp parallel num_threads(2) reduction(+ : members)
	members++;
	return members;
}
