/* SPDX-License-Identifier: MIT */
/*
 * An MPI program with known answers for 2 ranks (tests/integration/test_mpi.py): each call
 * below is made a fixed number of times with fixed sizes, so the test checks every count,
 * byte total, peer and tag exactly.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ALLREDUCES 5
#define LATE_BARRIERS 3

static int rank, size;

static void point_to_point(void)
{
	int data[100] = { 0 }, one = rank, got = -1;
	double out[10] = { 0 }, in[10];
	MPI_Request reqs[2];
	MPI_Status st;
	int peer = 1 - rank;

	if (rank == 0) /* 400 bytes, tag 7, 0 -> 1 */
		MPI_Send(data, 100, MPI_INT, 1, 7, MPI_COMM_WORLD);
	else
		MPI_Recv(data, 100, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
	/* 80 bytes each way, tag 3, completed by one MPI_Waitall */
	MPI_Irecv(in, 10, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, &reqs[0]);
	MPI_Isend(out, 10, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, &reqs[1]);
	MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
	/* 4 bytes each way, tag 5 */
	MPI_Sendrecv(&one, 1, MPI_INT, peer, 5, &got, 1, MPI_INT, peer, 5, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	/* one MPI_Wait per request: 2 bytes, tag 9 */
	MPI_Irecv(in, 2, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &reqs[0]);
	MPI_Isend(out, 2, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &reqs[1]);
	MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
	MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
}

static void collectives(void)
{
	int ints[64] = { 0 }, two[2] = { rank, rank }, all[4], counts[2] = { 2, 2 },
	    displs[2] = { 0, 2 }, one[2] = { 0 }, sum[4] = { 0 }, part[4];
	double d[8] = { 0 }, dsum[8];

	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Bcast(ints, 64, MPI_INT, 0, MPI_COMM_WORLD);		/* 256 bytes */
	MPI_Reduce(d, dsum, 8, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); /* 64 bytes */
	for (int i = 0; i < ALLREDUCES; i++)
		MPI_Allreduce(two, sum, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* 8 bytes */
	MPI_Gather(two, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Gatherv(two, 2, MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Scatter(all, 2, MPI_INT, two, 2, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Scatterv(all, counts, displs, MPI_INT, two, 2, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Allgather(two, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
	MPI_Allgatherv(two, 2, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
	MPI_Alltoall(two, 1, MPI_INT, one, 1, MPI_INT, MPI_COMM_WORLD);
	MPI_Alltoallv(all, counts, displs, MPI_INT, part, counts, displs, MPI_INT, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, sum, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* 16 bytes */
	if (sum[0] != 2 * (rank + 0) + 2 * (1 - rank) + 0 && size == 2)
		printf("wrong in-place sum %d\n", sum[0]);
}

static void communicators(void)
{
	MPI_Comm half, copy;
	int r, token = 0;

	MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &half); /* ranks reversed */
	MPI_Comm_dup(half, &copy);
	MPI_Comm_rank(copy, &r);
	/* rank 0 of `copy` is world rank 1: its 4 bytes go to world rank 0 */
	if (r == 0)
		MPI_Send(&token, 1, MPI_INT, 1, 11, copy);
	else
		MPI_Recv(&token, 1, MPI_INT, 0, 11, copy, MPI_STATUS_IGNORE);
	MPI_Comm_free(&copy);
	MPI_Comm_free(&half);
}

/* The other send modes, any-of completion, probes, scans, non-blocking collectives. */
static void more(void)
{
	int three[3] = { 1, 2, 3 }, one = rank, got[2], four[4] = { 0 }, two[2] = { 1, 1 },
	    counts[2] = { 1, 1 }, out = 0, index;
	int peer = 1 - rank;
	MPI_Request reqs[2];
	MPI_Status st;

	if (rank == 0) { /* 12 bytes, tag 21 */
		MPI_Ssend(three, 3, MPI_INT, 1, 21, MPI_COMM_WORLD);
	} else {
		MPI_Probe(0, 21, MPI_COMM_WORLD, &st);
		MPI_Recv(three, 3, MPI_INT, 0, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	/* 4 bytes each way, tag 22, completed one at a time */
	MPI_Irecv(&got[0], 1, MPI_INT, peer, 22, MPI_COMM_WORLD, &reqs[0]);
	MPI_Issend(&one, 1, MPI_INT, peer, 22, MPI_COMM_WORLD, &reqs[1]);
	MPI_Waitany(2, reqs, &index, MPI_STATUS_IGNORE);
	MPI_Waitany(2, reqs, &index, MPI_STATUS_IGNORE);
	/* a ready send: its receive is posted before the barrier; 4 bytes, tag 23 */
	if (rank == 1)
		MPI_Irecv(&got[1], 1, MPI_INT, 0, 23, MPI_COMM_WORLD, &reqs[0]);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		MPI_Rsend(&one, 1, MPI_INT, 1, 23, MPI_COMM_WORLD);
	else
		MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
	MPI_Ibarrier(MPI_COMM_WORLD, &reqs[0]);
	MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
	MPI_Iallreduce(MPI_IN_PLACE, two, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[0]);
	MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
	MPI_Ibcast(four, 4, MPI_INT, 0, MPI_COMM_WORLD, &reqs[0]); /* 16 bytes */
	MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
	MPI_Scan(&one, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Exscan(&one, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Reduce_scatter(two, &out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* 8 in, 4 */
}

/* Rank 1 comes late to each barrier: rank 0 waits for it there. */
static void late_rank(void)
{
	for (int i = 0; i < LATE_BARRIERS; i++) {
		if (rank == 1)
			usleep(50 * 1000);
		MPI_Barrier(MPI_COMM_WORLD);
	}
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_basic: run with 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	point_to_point();
	collectives();
	communicators();
	more();
	late_rank();
	MPI_Finalize();
	printf("mpi_basic rank %d done\n", rank);
	return 0;
}
