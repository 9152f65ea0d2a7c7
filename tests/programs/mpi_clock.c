/* SPDX-License-Identifier: MIT */
/*
 * Known counts for tests/integration/test_parallel_cost.py: rank 1 sends 3 messages to rank 0
 * (MPI_Send, tag 5), then each rank makes 100 calls of no work (MPI_Comm_rank on the world)
 * and one MPI_Barrier. After MPI_Finalize it sleeps 200 ms, so that a rank whose clock a test
 * shifted (SYSCOPE_TEST_CLOCK_SHIFT_NS) still records its calls inside its own lifetime.
 */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

#define MESSAGES 3
#define NO_WORK_CALLS 100

int main(int argc, char **argv)
{
	int rank = 0, size = 0, value = 0, dummy = 0;
	struct timespec pause = { 0, 200 * 1000 * 1000 };

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 0; i < MESSAGES && size > 1; i++) {
		if (rank == 1) {
			value = i;
			MPI_Send(&value, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
		} else if (rank == 0) {
			MPI_Recv(&value, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
	}
	for (int i = 0; i < NO_WORK_CALLS; i++)
		MPI_Comm_rank(MPI_COMM_WORLD, &dummy);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	nanosleep(&pause, NULL);
	printf("mpi_clock: rank %d of %d done\n", rank, size);
	return 0;
}
