/* SPDX-License-Identifier: MIT */
/*
 * Known counts for tests/integration/test_parallel_cost2.py: on rank 0, 1 + 100 000 calls of
 * MPI_Comm_rank and 1 + 1 000 of MPI_Comm_size on the world, 50 of MPI_Comm_rank on
 * MPI_COMM_SELF, and 10 000 of MPI_Comm_rank on the world from a second thread (while the
 * first waits for it: MPI_THREAD_SERIALIZED); the other ranks make the first two calls only.
 * Then rank 0 sends rank 1 a message and enters MPI_Barrier, which rank 1 enters 100 ms
 * after the message arrived: rank 0's barrier lasts at least that long.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define RANK_CALLS 100000
#define SIZE_CALLS 1000
#define SELF_CALLS 50
#define THREAD_CALLS 10000

static void *ask_rank(void *arg)
{
	int r = 0;

	for (int i = 0; i < THREAD_CALLS; i++)
		MPI_Comm_rank(MPI_COMM_WORLD, &r);
	return arg;
}

int main(int argc, char **argv)
{
	int rank = 0, size = 0, dummy = 0, provided = 0, token = 7;
	struct timespec pause = { 0, 100 * 1000 * 1000 };
	pthread_t t;

	MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (rank == 0) {
		for (int i = 0; i < RANK_CALLS; i++)
			MPI_Comm_rank(MPI_COMM_WORLD, &dummy);
		for (int i = 0; i < SIZE_CALLS; i++)
			MPI_Comm_size(MPI_COMM_WORLD, &dummy);
		for (int i = 0; i < SELF_CALLS; i++)
			MPI_Comm_rank(MPI_COMM_SELF, &dummy);
		if (pthread_create(&t, NULL, ask_rank, NULL) == 0)
			pthread_join(t, NULL);
		if (size > 1)
			MPI_Send(&token, 1, MPI_INT, 1, 9, MPI_COMM_WORLD);
	} else if (rank == 1) {
		MPI_Recv(&token, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		nanosleep(&pause, NULL);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	printf("mpi_queries: rank %d of %d done (thread level %d)\n", rank, size, provided);
	return 0;
}
