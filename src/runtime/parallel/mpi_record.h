/* SPDX-License-Identifier: MIT */
/*
 * libsyscope-mpi.so, the MPI tracer: wrappers of the C (mpi_c.c) and Fortran (mpi_fortran.c)
 * bindings that call the PMPI_* entry points and write one SC_REC_MPI_CALL per call
 * (mpi_record.c). It is preloaded only with --parallel=mpi, and is never linked with an
 * MPI library: every PMPI_* function is looked up when first called, so it loads in any
 * process and a program that is not MPI never reaches it.
 */
#ifndef SYSCOPE_RUNTIME_MPI_RECORD_H
#define SYSCOPE_RUNTIME_MPI_RECORD_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../store/format.h"
#include "../plugin.h"

/* Open MPI's handles are addresses of objects in libmpi: weak references keep this library
 * loadable in a process without it (MPICH's handles are plain numbers). */
#ifdef OPEN_MPI
#pragma weak ompi_mpi_comm_world
#pragma weak ompi_mpi_comm_self
#pragma weak ompi_mpi_comm_null
#pragma weak ompi_mpi_group_null
#pragma weak ompi_request_null
#pragma weak ompi_mpi_datatype_null
#pragma weak ompi_mpi_byte
#pragma weak MPI_F_STATUS_IGNORE
#pragma weak MPI_F_STATUSES_IGNORE
#endif

/* The next definition of PMPI_X `name` after this library (the MPI library's), else of
 * MPI_X, or NULL. */
void *mpi_next(const char *name);

/* A PMPI_* function, found at its first use; a program that calls a wrapper of an MPI it
 * does not have gets a clear message and exit status 127 from mpi_missing. `var` names
 * the pointer. */
#define PMPI_FN(var, ret, name, params)              \
	static ret(*var) params;                     \
	if (__builtin_expect(!var, 0)) {             \
		var = (ret(*) params)mpi_next(name); \
		if (!var)                            \
			mpi_missing(name);           \
	}

_Noreturn void mpi_missing(const char *name);

/* Calls made through a Fortran binding set this, so that the C wrappers an MPI library's
 * Fortran layer may call (Open MPI 5, MPICH) do not record them a second time. */
extern _Thread_local int mpi_in_fortran;

/* The runtime's plugin table once looked up (mpi_api_state 1; 2: none, record nothing). */
extern const struct sc_plugin_api *mpi_api;
extern atomic_int mpi_api_state;
bool mpi_find_api(void);
/* Record through `a` (NULL: record nothing); true when it is usable. */
bool mpi_use_api(const struct sc_plugin_api *a);
/* Loaded by syscope attach (mpi_attach.c): PMPI_* found in the global scope. */
extern bool mpi_attached;
/* Added to every timestamp: SYSCOPE_TEST_CLOCK_SHIFT_NS, for the tests of clock alignment. */
extern uint64_t mpi_clock_shift;

static inline uint64_t mpi_now(void)
{
	return mpi_api->now_ns() + mpi_clock_shift;
}

/* Whether libsyscope.so is there (whether or not it records now). */
static inline bool mpi_tracer_present(void)
{
	int state = atomic_load_explicit(&mpi_api_state, memory_order_acquire);

	return __builtin_expect(state == 1, 1) || (state == 0 && mpi_find_api());
}

/* Whether calls are recorded now. */
static inline bool mpi_recording(void)
{
	return mpi_tracer_present() && !mpi_in_fortran && mpi_api->active();
}

/* Whether calls are recorded now; sets `t0` then. Inline: every wrapper starts here. */
static inline bool mpi_begin(uint64_t *t0)
{
	if (!mpi_recording())
		return false;
	*t0 = mpi_now();
	return true;
}

/* Write a call of `fn` (with SC_MPI_FORTRAN in `flags` or not) begun at `t0` that has no
 * argument but `comm`: the short record where the reader knows the communicator's size. */
void mpi_write_plain(int fn, MPI_Comm comm, uint64_t t0, uint16_t flags);

/* The same for a query that does no work (MPI_Comm_rank, MPI_Comm_size), when it returned:
 * stamped once, with no duration, since a second clock read would cost more than the call. */
void mpi_write_query(int fn, MPI_Comm comm, uint16_t flags);

/* A query that does no work (MPI_Comm_rank, MPI_Comm_size) has returned: true when it was
 * only counted (mpi_count.c), false when it is to be recorded. */
bool mpi_query_counted(int fn, MPI_Comm comm, uint16_t flags);
/* Write every thread's counted calls not yet written (MPI_Finalize, the process's end). */
void mpi_counts_write_all(void);
/* At the process's end: a note of how many calls were only counted. */
void mpi_counts_note(void);
void mpi_counts_init(void);

/* The id of `comm` when its size is known to the reader without being written (0 none, 1
 * the world once MPI_Init returned, 2 self), else UINT32_MAX. */
uint32_t mpi_plain_comm_id(MPI_Comm comm);

/* At MPI_Init's end and at MPI_Finalize's start (mpi_clock.c): this rank's clock measured
 * against rank 0's, a CLOCK_SYNC record. Every rank of the job must come here. */
void mpi_clock_sync(bool at_init);

/* The world rank of rank `r` of `comm` (r itself for MPI_COMM_WORLD), SC_MPI_NONE for a
 * negative rank (MPI_ANY_SOURCE, MPI_PROC_NULL, MPI_ROOT). */
int32_t mpi_world_rank(MPI_Comm comm, int r);

/* Fill the communicator fields of `c`. */
void mpi_comm_fields(struct sc_rec_mpi_call *c, MPI_Comm comm);

/* Bytes of `count` elements of `type` (0 for MPI_DATATYPE_NULL or a bad type). */
uint64_t mpi_bytes(MPI_Datatype type, long long count);

/* Write `c` (ended now), with `ndone` completions after it. */
void mpi_write(struct sc_rec_mpi_call *c, const struct sc_mpi_done *done, unsigned ndone);

/* Requests of non-blocking calls: remember one started (its id, 0 when not kept). */
uint64_t mpi_request_start(MPI_Request req, int fn, uint64_t bytes, MPI_Comm comm);

/* A communicator made by a call (split, dup): numbered in order of creation. */
void mpi_comm_created(MPI_Comm comm);
void mpi_comm_freed(MPI_Comm comm);

/* At MPI_Init's end: the job's rank and size, noted for the reader. */
void mpi_job_started(void);

/* Start `c` as a call of `fn` on `comm` (MPI_COMM_NULL: none), keeping its start time. */
static inline void mpi_call(struct sc_rec_mpi_call *c, int fn, MPI_Comm comm)
{
	uint64_t ts = c->ts;

	*c = (struct sc_rec_mpi_call){ .ts = ts, .fn = (uint16_t)fn };
	c->peer = c->tag = SC_MPI_NONE;
	if (comm != MPI_COMM_NULL)
		mpi_comm_fields(c, comm);
}

/* The completion of `req` (not MPI_REQUEST_NULL; with its status, or NULL) by the call `c`,
 * as `d`: the function that started it (SC_MPI_ISEND, SC_MPI_IRECV), or 0 when it was not
 * seen started (counted in c->unfollowed). */
int mpi_done(struct sc_rec_mpi_call *c, MPI_Request req, const MPI_Status *st,
	     struct sc_mpi_done *d);

/* mpi_c.c: a send of mode `fn` through `real` (its PMPI function), recorded when it returns;
 * a non-blocking one also starts following its request. Shared by every send wrapper. */
typedef int (*mpi_send_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*mpi_isend_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int mpi_traced_send(int fn, mpi_send_fn real, const void *buf, int count, MPI_Datatype type,
		    int dest, int tag, MPI_Comm comm);
int mpi_traced_isend(int fn, mpi_isend_fn real, const void *buf, int count, MPI_Datatype type,
		     int dest, int tag, MPI_Comm comm, MPI_Request *req);

#endif /* SYSCOPE_RUNTIME_MPI_RECORD_H */
