/* SPDX-License-Identifier: MIT */
/* MPI calls (SC_REC_MPI_CALL) as regions of category "mpi" with their arguments (mpi.c). */
#ifndef SYSCOPE_MODEL_MPI_H
#define SYSCOPE_MODEL_MPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../store/format.h"
#include "timeline.h"

#define SC_MPI_CATEGORY "mpi"

/* The name of function `fn` ("MPI_Send"), or NULL for a number this reader does not know. */
const char *sc_mpi_fn_name(unsigned fn);
/* Its kind (SC_MPIK_*), SC_MPIK_LOCAL when unknown. */
enum sc_mpi_kind sc_mpi_fn_kind(unsigned fn);

/* The completions that follow `c`. */
static inline const struct sc_mpi_done *sc_mpi_dones(const struct sc_rec_mpi_call *c)
{
	return (const struct sc_mpi_done *)(c + 1);
}

/* `ev` as the region of call `c`: name, category and arguments rendered into `buf`
 * (valid while buf is). */
void sc_mpi_region(struct sc_region_ev *ev, const struct sc_rec_mpi_call *c, char *buf, size_t cap);

/* Short call `s` as the MPI_CALL record it abbreviates, in `out` (returned); `world_size` is
 * the job's size (MPI_Init's record), the size of communicator 1. */
const struct sc_rec_mpi_call *sc_mpi_unshort(const struct sc_rec_mpi_short *s, int32_t world_size,
					     struct sc_rec_mpi_call *out);

/* The region of a clock measurement: SC_MPI_CLOCK_REGION, category "syscope", its numbers as
 * arguments (peer, offset_ns, rtt_ns, when, rounds) for `syscope merge`. */
#define SC_MPI_CLOCK_REGION "MPI clock sync"
#define SC_MPI_CLOCK_CATEGORY "syscope"
void sc_mpi_clock_region(struct sc_region_ev *ev, const struct sc_rec_clock_sync *c, char *buf,
			 size_t cap);

/* One end of a point-to-point message: both ends name it alike (world ranks). */
struct sc_mpi_message {
	int32_t src, dst, tag;
	uint32_t comm;
	bool send; /* the send end; else the receive end */
};

/*
 * The message ends in MPI region `ev` of rank `rank`, read from its arguments (so regions
 * read back from a database give the same): a send's, a receive's, a Sendrecv's two, the
 * receives a wait completed. Returns how many were put in `out` (at most `max`).
 */
unsigned sc_mpi_messages(const struct sc_region_ev *ev, int rank, struct sc_mpi_message *out,
			 unsigned max);

#endif /* SYSCOPE_MODEL_MPI_H */
