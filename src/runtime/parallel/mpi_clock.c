/* SPDX-License-Identifier: MIT */
/*
 * Clock offsets of the ranks (mpi_record.h, mpi_clock_sync): at MPI_Init's end and at
 * MPI_Finalize's start, rank 0 answers a few pings of every other rank in turn with its own
 * time, on a duplicate of MPI_COMM_WORLD (PMPI calls only: nothing here is recorded as an
 * MPI call, and the program's communicators keep their numbers). Each other rank keeps the
 * round with the shortest round trip, whose midpoint is closest to the moment rank 0 read
 * its clock, and writes one CLOCK_SYNC record; `syscope merge` interpolates between the two.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_record.h"

#define SYNC_ROUNDS 8
#define SYNC_TAG 0x5c0c

static MPI_Comm sync_comm;
static bool have_sync_comm;

static bool sync_wanted(void)
{
	const char *v = getenv("SYSCOPE_MPI_CLOCK_SYNC");

	return !v ||
	       !(!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off"));
}

/* Rank 0: each other rank in turn sends SYNC_ROUNDS pings; each gets rank 0's time. */
static void answer(int size)
{
	PMPI_FN(send, int, "PMPI_Send", (const void *, int, MPI_Datatype, int, int, MPI_Comm));
	PMPI_FN(recv, int, "PMPI_Recv",
		(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *));
	uint64_t ping, now;

	for (int r = 1; r < size; r++)
		for (int k = 0; k < SYNC_ROUNDS; k++) {
			if (recv(&ping, 8, MPI_BYTE, r, SYNC_TAG, sync_comm, MPI_STATUS_IGNORE) !=
			    MPI_SUCCESS)
				return;
			now = mpi_now();
			if (send(&now, 8, MPI_BYTE, r, SYNC_TAG, sync_comm) != MPI_SUCCESS)
				return;
		}
}

/* Another rank: its pings, the best round kept; false when the exchange failed. */
static bool ask(struct sc_rec_clock_sync *c)
{
	PMPI_FN(send, int, "PMPI_Send", (const void *, int, MPI_Datatype, int, int, MPI_Comm));
	PMPI_FN(recv, int, "PMPI_Recv",
		(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *));

	c->rtt = UINT64_MAX;
	for (int k = 0; k < SYNC_ROUNDS; k++) {
		uint64_t t1 = mpi_now(), t2, theirs = 0;

		if (send(&t1, 8, MPI_BYTE, 0, SYNC_TAG, sync_comm) != MPI_SUCCESS ||
		    recv(&theirs, 8, MPI_BYTE, 0, SYNC_TAG, sync_comm, MPI_STATUS_IGNORE) !=
			    MPI_SUCCESS)
			return false;
		t2 = mpi_now();
		if (t2 - t1 < c->rtt) {
			c->rtt = t2 - t1;
			c->when = t1 + (t2 - t1) / 2;
			c->offset = (int64_t)(theirs - c->when);
		}
		c->rounds++;
	}
	return true;
}

void mpi_clock_sync(bool at_init)
{
	PMPI_FN(dup, int, "PMPI_Comm_dup", (MPI_Comm, MPI_Comm *));
	PMPI_FN(free_comm, int, "PMPI_Comm_free", (MPI_Comm *));
	PMPI_FN(rank_of, int, "PMPI_Comm_rank", (MPI_Comm, int *));
	PMPI_FN(size_of, int, "PMPI_Comm_size", (MPI_Comm, int *));
	struct sc_rec_clock_sync c = { .peer = 0 };
	int rank = 0, size = 0;

	if (at_init) {
		/* Attached, this rank is alone in syscope: the others would never answer. */
		if (have_sync_comm || mpi_attached || !sync_wanted() ||
		    dup(MPI_COMM_WORLD, &sync_comm) != MPI_SUCCESS)
			return;
		have_sync_comm = true;
	} else if (!have_sync_comm) {
		return;
	}
	c.ts = mpi_now();
	if (rank_of(sync_comm, &rank) == MPI_SUCCESS && size_of(sync_comm, &size) == MPI_SUCCESS &&
	    size > 1) {
		if (rank == 0)
			answer(size);
		else if (ask(&c) && mpi_api->active()) {
			c.end = mpi_now();
			mpi_api->record(SC_REC_CLOCK_SYNC, at_init ? 0 : SC_CLOCK_SYNC_FINALIZE,
					&c.ts, sizeof(c) - sizeof(c.hdr), NULL, 0);
		}
	}
	if (!at_init) {
		free_comm(&sync_comm);
		have_sync_comm = false;
	}
}
