/* SPDX-License-Identifier: MIT */
/*
 * The cost syscope adds to an MPI call: N calls of MPI_Comm_rank (no work: what is left is
 * the wrapper), then N rounds of a self message (MPI_Irecv + MPI_Isend + MPI_Waitall on
 * MPI_COMM_SELF), timed by the program itself in thread CPU time. Run alone (a singleton), with and without
 * `syscope run --parallel=mpi`.
 *
 * Usage: mpi_calls [N]; prints "comm_rank_ns=X self_message_ns_per_call=Y".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* CPU time of the calling thread, in seconds: on a shared machine, wall time counts the
 * time others run too. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000000;
	int rank = 0, a = 0, b = 0;
	double t0, t1, t2;
	MPI_Request reqs[2];

	MPI_Init(&argc, &argv);
	t0 = cpu_now();
	for (long i = 0; i < n; i++)
		MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	t1 = cpu_now();
	for (long i = 0; i < n / 10; i++) {
		MPI_Irecv(&a, 1, MPI_INT, 0, 1, MPI_COMM_SELF, &reqs[0]);
		MPI_Isend(&b, 1, MPI_INT, 0, 1, MPI_COMM_SELF, &reqs[1]);
		MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
	}
	t2 = cpu_now();
	printf("comm_rank_ns=%.2f self_message_ns_per_call=%.2f\n", (t1 - t0) * 1e9 / (double)n,
	       (t2 - t1) * 1e9 / (double)(n / 10) / 3.0);
	MPI_Finalize();
	return rank;
}
