/* SPDX-License-Identifier: MIT */
/*
 * An MPI program for 2 ranks that syscope attaches to while it runs
 * (tests/integration/test_attach_mpi.py). Each round: rank 0 sends 1000 ints (tag 5) to
 * rank 1, which checks them; both exchange 10 doubles (tag 6) with MPI_Isend, MPI_Irecv and
 * MPI_Waitall; an MPI_Allreduce tells both whether to stop (rank 0 stops once the file
 * argv[1] exists, or after argv[2] seconds of its CPU time, so it never runs forever); every
 * 16th round ends in an MPI_Barrier. Made before the first round (so before any attach):
 * a communicator of both ranks in reverse order (world rank 1 is its rank 0), on which rank 0
 * sends 1 int (tag 7) to rank 1 each round, and rank 0's receive of 1 int (tag 9) from rank
 * 1, which rank 1 sends and rank 0 waits for (MPI_Wait) once the file STOP_FILE.early
 * exists. At the end rank 0 prints the rounds and the errors both ranks found ("done
 * rounds=N errors=0"), the answer the test checks after a detach. Rank 0 prints "pid=PID"
 * first, "round=N" after its first round, "early=V" when the early receive completed.
 *
 * Built as a program and, with MPI_ATTACH_PLUGIN, as a library whose mpi_attach_main a
 * program without MPI calls after a local dlopen (mpi_dlopen.c).
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

#define N_INTS 1000
#define N_DOUBLES 10
#define STOP 1	/* the Allreduce's bits: rank 0 stops the job */
#define EARLY 2 /* the early receive is to be completed */

#ifdef MPI_ATTACH_PLUGIN
#define main mpi_attach_main
__attribute__((visibility("default"))) int mpi_attach_main(int argc, char **argv);
#endif

static int rank;
static MPI_Comm reversed; /* made before any attach: world rank 1 is its rank 0 */

/* Rank 0 to rank 1: N_INTS ints of values round + i; the errors rank 1 finds. */
static int send_round(int round)
{
	static int data[N_INTS];
	int errors = 0;

	if (rank == 0) {
		for (int i = 0; i < N_INTS; i++)
			data[i] = round + i;
		MPI_Send(data, N_INTS, MPI_INT, 1, 5, MPI_COMM_WORLD);
		return 0;
	}
	MPI_Recv(data, N_INTS, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	for (int i = 0; i < N_INTS; i++)
		errors += data[i] != round + i;
	return errors;
}

/* Rank 0 to rank 1 on the reversed communicator: 1 int (tag 7) of value round; the errors. */
static int send_reversed(int round)
{
	int v = round;

	if (rank == 0) {
		MPI_Send(&v, 1, MPI_INT, 0, 7, reversed);
		return 0;
	}
	MPI_Recv(&v, 1, MPI_INT, 1, 7, reversed, MPI_STATUS_IGNORE);
	return v != round;
}

/* The early receive (posted at the start), completed once asked: rank 1 sends 42. */
static void complete_early(MPI_Request *early, int *value)
{
	int v = 42;

	if (rank == 1) {
		MPI_Send(&v, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
		return;
	}
	MPI_Wait(early, MPI_STATUS_IGNORE);
	printf("early=%d\n", *value);
	fflush(stdout);
}

/* Both ways: N_DOUBLES doubles of value rank + round; the errors in what came back. */
static int exchange(int round)
{
	double out[N_DOUBLES], in[N_DOUBLES];
	MPI_Request reqs[2];
	int peer = 1 - rank, errors = 0;

	for (int i = 0; i < N_DOUBLES; i++)
		out[i] = rank + round;
	MPI_Irecv(in, N_DOUBLES, MPI_DOUBLE, peer, 6, MPI_COMM_WORLD, &reqs[0]);
	MPI_Isend(out, N_DOUBLES, MPI_DOUBLE, peer, 6, MPI_COMM_WORLD, &reqs[1]);
	MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
	for (int i = 0; i < N_DOUBLES; i++)
		errors += in[i] != peer + round;
	return errors;
}

int main(int argc, char **argv)
{
	const char *stop_file = argc > 1 ? argv[1] : "/nonexistent";
	double end = fixture_cpu_now() + fixture_seconds(argc, argv, 2, 300);
	struct timespec pause = { 0, 2000000 };
	int size, errors = 0, total = 0, round = 0, bits = 0, early_value = 0;
	MPI_Request early = MPI_REQUEST_NULL;
	char early_file[4096];
	bool early_done = false;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		fprintf(stderr, "mpi_attach: run it with 2 ranks (mpirun -np 2), not %d\n", size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Comm_split(MPI_COMM_WORLD, 0, 1 - rank, &reversed);
	if (rank == 0)
		MPI_Irecv(&early_value, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, &early);
	snprintf(early_file, sizeof(early_file), "%s.early", stop_file);
	if (rank == 0) {
		printf("pid=%d\n", (int)getpid());
		fflush(stdout);
	}
	while (!(bits & STOP)) {
		int want = 0;

		errors += send_round(round) + exchange(round) + send_reversed(round);
		if (rank == 0 && (!access(stop_file, F_OK) || fixture_cpu_now() >= end))
			want |= STOP;
		if (rank == 0 && !access(early_file, F_OK))
			want |= EARLY;
		MPI_Allreduce(&want, &bits, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
		if ((bits & EARLY) && !early_done) {
			complete_early(&early, &early_value);
			early_done = true;
		}
		if (round % 16 == 15)
			MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0 && round == 0) {
			printf("round=1\n");
			fflush(stdout);
		}
		round++;
		nanosleep(&pause, NULL); /* a few hundred rounds a second, not millions */
	}
	if (!early_done)
		complete_early(&early, &early_value);
	errors += rank == 0 && early_value != 42;
	MPI_Comm_free(&reversed);
	MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("done rounds=%d errors=%d\n", round, total);
	MPI_Finalize();
	return total ? 1 : 0;
}
