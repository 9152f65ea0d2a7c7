/* SPDX-License-Identifier: MIT */
/*
 * The C bindings: each wrapper calls its PMPI_* function and records the call once, when it
 * returns (mpi_record.h). Bytes are count x type size (summed over the ranks a collective
 * sends to or receives from); a receive's peer and tag are the actual ones, from its status.
 */
#include <string.h>

#include "mpi_record.h"

#define MAX_FOLLOWED 64 /* requests one MPI_Waitall names; the rest complete unnamed */

/* ---- set-up ---- */

static int after_init(int rc, struct sc_rec_mpi_call *c, int fn)
{
	PMPI_FN(real, int, "PMPI_Comm_rank", (MPI_Comm, int *));

	mpi_job_started();
	if (rc == MPI_SUCCESS)
		mpi_clock_sync(true);
	mpi_call(c, fn, MPI_COMM_WORLD);
	real(MPI_COMM_WORLD, &c->peer); /* the rank: the reader names the process by it */
	mpi_write(c, NULL, 0);
	return rc;
}

/* An MPI_Init not recorded (paused) still measures the clock with the other ranks. */
static int not_recorded_init(int rc)
{
	if (rc == MPI_SUCCESS && !mpi_in_fortran && mpi_tracer_present())
		mpi_clock_sync(true);
	return rc;
}

int MPI_Init(int *argc, char ***argv)
{
	PMPI_FN(real, int, "PMPI_Init", (int *, char ***));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);
	int rc = real(argc, argv);

	/* The runtime may have become active only now: look again. */
	if (!on && !mpi_begin(&c.ts))
		return not_recorded_init(rc);
	return after_init(rc, &c, SC_MPI_INIT);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	PMPI_FN(real, int, "PMPI_Init_thread", (int *, char ***, int, int *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);
	int rc = real(argc, argv, required, provided);

	/* The runtime may have become active only now: look again. */
	if (!on && !mpi_begin(&c.ts))
		return not_recorded_init(rc);
	return after_init(rc, &c, SC_MPI_INIT_THREAD);
}

int MPI_Finalize(void)
{
	PMPI_FN(real, int, "PMPI_Finalize", (void));
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts)) {
		if (!mpi_in_fortran && mpi_tracer_present())
			mpi_clock_sync(false); /* paused: the other ranks measure all the same */
		return real();
	}
	mpi_call(&c, SC_MPI_FINALIZE, MPI_COMM_NULL);
	mpi_counts_write_all(); /* no query is valid past this point */
	mpi_clock_sync(false);
	rc = real();
	mpi_write(&c, NULL, 0);
	return rc;
}

/* ---- communicators ---- */

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
	PMPI_FN(real, int, "PMPI_Comm_rank", (MPI_Comm, int *));
	int rc;

	if (!mpi_recording())
		return real(comm, rank);
	rc = real(comm, rank);
	if (!mpi_query_counted(SC_MPI_COMM_RANK, comm, 0))
		mpi_write_query(SC_MPI_COMM_RANK, comm, 0);
	return rc;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
	PMPI_FN(real, int, "PMPI_Comm_size", (MPI_Comm, int *));
	int rc;

	if (!mpi_recording())
		return real(comm, size);
	rc = real(comm, size);
	if (!mpi_query_counted(SC_MPI_COMM_SIZE, comm, 0))
		mpi_write_query(SC_MPI_COMM_SIZE, comm, 0);
	return rc;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out)
{
	PMPI_FN(real, int, "PMPI_Comm_split", (MPI_Comm, int, int, MPI_Comm *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);
	int rc = real(comm, color, key, out);

	if (rc == MPI_SUCCESS)
		mpi_comm_created(*out); /* even unrecorded: later calls name it */
	if (!on)
		return rc;
	mpi_call(&c, SC_MPI_COMM_SPLIT, comm);
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out)
{
	PMPI_FN(real, int, "PMPI_Comm_dup", (MPI_Comm, MPI_Comm *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);
	int rc = real(comm, out);

	if (rc == MPI_SUCCESS)
		mpi_comm_created(*out);
	if (!on)
		return rc;
	mpi_call(&c, SC_MPI_COMM_DUP, comm);
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Comm_free(MPI_Comm *comm)
{
	PMPI_FN(real, int, "PMPI_Comm_free", (MPI_Comm *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);
	MPI_Comm was = *comm;
	int rc;

	if (on)
		mpi_call(&c, SC_MPI_COMM_FREE, was);
	rc = real(comm);
	mpi_comm_freed(was);
	if (on)
		mpi_write(&c, NULL, 0);
	return rc;
}

/* ---- point to point ---- */

int mpi_traced_send(int fn, mpi_send_fn real, const void *buf, int count, MPI_Datatype type,
		    int dest, int tag, MPI_Comm comm)
{
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(buf, count, type, dest, tag, comm);
	rc = real(buf, count, type, dest, tag, comm);
	mpi_call(&c, fn, comm);
	c.peer = mpi_world_rank(comm, dest);
	c.tag = tag;
	c.sent = mpi_bytes(type, count);
	mpi_write(&c, NULL, 0);
	return rc;
}

int mpi_traced_isend(int fn, mpi_isend_fn real, const void *buf, int count, MPI_Datatype type,
		     int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(buf, count, type, dest, tag, comm, req);
	rc = real(buf, count, type, dest, tag, comm, req);
	mpi_call(&c, fn, comm);
	c.peer = mpi_world_rank(comm, dest);
	c.tag = tag;
	c.sent = mpi_bytes(type, count);
	if (rc == MPI_SUCCESS)
		c.request = mpi_request_start(*req, fn, c.sent, comm);
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Send", (const void *, int, MPI_Datatype, int, int, MPI_Comm));
	return mpi_traced_send(SC_MPI_SEND, real, buf, count, type, dest, tag, comm);
}

/* A receive's actual source, tag and size, from its status. */
static void received(struct sc_rec_mpi_call *c, MPI_Comm comm, const MPI_Status *st,
		     MPI_Datatype type)
{
	PMPI_FN(real, int, "PMPI_Get_count", (const MPI_Status *, MPI_Datatype, int *));
	int n = 0;

	c->peer = mpi_world_rank(comm, st->MPI_SOURCE);
	c->tag = st->MPI_TAG;
	if (real(st, type, &n) == MPI_SUCCESS && n != MPI_UNDEFINED)
		c->received = mpi_bytes(type, n);
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
	     MPI_Status *status)
{
	PMPI_FN(real, int, "PMPI_Recv",
		(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *));
	struct sc_rec_mpi_call c;
	MPI_Status mine;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(buf, count, type, source, tag, comm, status);
	if (status == MPI_STATUS_IGNORE)
		status = &mine;
	rc = real(buf, count, type, source, tag, comm, status);
	mpi_call(&c, SC_MPI_RECV, comm);
	received(&c, comm, status, type);
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
		 int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
		 MPI_Status *status)
{
	PMPI_FN(real, int, "PMPI_Sendrecv",
		(const void *, int, MPI_Datatype, int, int, void *, int, MPI_Datatype, int, int,
		 MPI_Comm, MPI_Status *));
	struct sc_rec_mpi_call c;
	struct sc_mpi_done from;
	MPI_Status mine;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag,
			    comm, status);
	if (status == MPI_STATUS_IGNORE)
		status = &mine;
	rc = real(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status);
	mpi_call(&c, SC_MPI_SENDRECV, comm);
	received(&c, comm, status, rtype); /* the receive half, as a completion below */
	from = (struct sc_mpi_done){
		.peer = c.peer, .tag = c.tag, .comm = c.comm, .bytes = c.received
	};
	c.peer = mpi_world_rank(comm, dest);
	c.tag = stag;
	c.sent = mpi_bytes(stype, scount);
	mpi_write(&c, &from, 1);
	return rc;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
	      MPI_Request *req)
{
	PMPI_FN(real, int, "PMPI_Isend",
		(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *));
	return mpi_traced_isend(SC_MPI_ISEND, real, buf, count, type, dest, tag, comm, req);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
	      MPI_Request *req)
{
	PMPI_FN(real, int, "PMPI_Irecv",
		(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *));
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(buf, count, type, source, tag, comm, req);
	rc = real(buf, count, type, source, tag, comm, req);
	mpi_call(&c, SC_MPI_IRECV, comm);
	c.peer = mpi_world_rank(comm, source); /* as posted: MPI_ANY_SOURCE is none */
	c.tag = tag == MPI_ANY_TAG ? SC_MPI_NONE : tag;
	if (rc == MPI_SUCCESS)
		c.request = mpi_request_start(*req, SC_MPI_IRECV, mpi_bytes(type, count), comm);
	mpi_write(&c, NULL, 0);
	return rc;
}

/* ---- completion ---- */

/* The completions of `n` requests (handles as they were before the call), with what each
 * brought (sent bytes, received bytes) summed into `c`. */
static unsigned completions(struct sc_rec_mpi_call *c, const MPI_Request *reqs,
			    const MPI_Status *st, int n, struct sc_mpi_done *done)
{
	unsigned k = 0;

	for (int i = 0; i < n; i++) {
		int fn = reqs[i] == MPI_REQUEST_NULL
				 ? 0
				 : mpi_done(c, reqs[i], st ? &st[i] : NULL, &done[k]);

		if (!fn)
			continue;
		if (fn == SC_MPI_ISEND || fn == SC_MPI_ISSEND)
			c->sent += done[k].bytes;
		else if (fn == SC_MPI_IRECV)
			c->received += done[k].bytes;
		k++;
	}
	return k;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
	PMPI_FN(real, int, "PMPI_Wait", (MPI_Request *, MPI_Status *));
	struct sc_rec_mpi_call c;
	struct sc_mpi_done done;
	MPI_Request was = *req;
	MPI_Status mine;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(req, status);
	if (status == MPI_STATUS_IGNORE)
		status = &mine;
	rc = real(req, status);
	mpi_call(&c, SC_MPI_WAIT, MPI_COMM_NULL);
	mpi_write(&c, &done, completions(&c, &was, status, 1, &done));
	return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
	PMPI_FN(real, int, "PMPI_Test", (MPI_Request *, int *, MPI_Status *));
	struct sc_rec_mpi_call c;
	struct sc_mpi_done done;
	MPI_Request was = *req;
	MPI_Status mine;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(req, flag, status);
	if (status == MPI_STATUS_IGNORE)
		status = &mine;
	rc = real(req, flag, status);
	mpi_call(&c, SC_MPI_TEST, MPI_COMM_NULL);
	mpi_write(&c, &done, *flag ? completions(&c, &was, status, 1, &done) : 0);
	return rc;
}

int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status statuses[])
{
	PMPI_FN(real, int, "PMPI_Waitall", (int, MPI_Request *, MPI_Status *));
	struct sc_rec_mpi_call c;
	struct sc_mpi_done done[MAX_FOLLOWED];
	MPI_Request was[MAX_FOLLOWED];
	MPI_Status mine[MAX_FOLLOWED];
	int n = count < MAX_FOLLOWED ? count : MAX_FOLLOWED;
	int rc;

	if (!mpi_begin(&c.ts) || count < 0)
		return real(count, reqs, statuses);
	memcpy(was, reqs, (size_t)n * sizeof(*was));
	if (statuses == MPI_STATUSES_IGNORE && count <= MAX_FOLLOWED)
		statuses = mine;
	rc = real(count, reqs, statuses);
	mpi_call(&c, SC_MPI_WAITALL, MPI_COMM_NULL);
	mpi_write(&c, done, completions(&c, was, statuses, n, done));
	return rc;
}

/* ---- collectives ---- */

static int comm_size(MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Comm_size", (MPI_Comm, int *));
	int n = 0;

	real(comm, &n);
	return n;
}

static int comm_rank(MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Comm_rank", (MPI_Comm, int *));
	int r = -1;

	real(comm, &r);
	return r;
}

static long long sum_counts(const int *counts, int n)
{
	long long s = 0;

	for (int i = 0; counts && i < n; i++)
		s += counts[i];
	return s;
}

/* The record of a collective rooted at `root` (-1: none). */
static void collective(struct sc_rec_mpi_call *c, int fn, MPI_Comm comm, int root)
{
	mpi_call(c, fn, comm);
	if (root >= 0)
		c->peer = mpi_world_rank(comm, root);
}

int MPI_Barrier(MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Barrier", (MPI_Comm));
	uint64_t t0;
	int rc;

	if (!mpi_begin(&t0))
		return real(comm);
	rc = real(comm);
	mpi_write_plain(SC_MPI_BARRIER, comm, t0, 0);
	return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Bcast", (void *, int, MPI_Datatype, int, MPI_Comm));
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(buf, count, type, root, comm);
	rc = real(buf, count, type, root, comm);
	collective(&c, SC_MPI_BCAST, comm, root);
	if (comm_rank(comm) == root)
		c.sent = mpi_bytes(type, count);
	else
		c.received = mpi_bytes(type, count);
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
	       MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Reduce",
		(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm));
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(sbuf, rbuf, count, type, op, root, comm);
	rc = real(sbuf, rbuf, count, type, op, root, comm);
	collective(&c, SC_MPI_REDUCE, comm, root);
	c.sent = mpi_bytes(type, count);
	if (comm_rank(comm) == root)
		c.received = c.sent;
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
		  MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Allreduce",
		(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm));
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(sbuf, rbuf, count, type, op, comm);
	rc = real(sbuf, rbuf, count, type, op, comm);
	collective(&c, SC_MPI_ALLREDUCE, comm, -1);
	c.sent = c.received = mpi_bytes(type, count);
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
	       MPI_Datatype rtype, int root, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Gather",
		(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm));
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
	rc = real(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
	collective(&c, SC_MPI_GATHER, comm, root);
	if (sbuf != MPI_IN_PLACE)
		c.sent = mpi_bytes(stype, scount);
	if (comm_rank(comm) == root)
		c.received = mpi_bytes(rtype, (long long)rcount * comm_size(comm));
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
		const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Gatherv",
		(const void *, int, MPI_Datatype, void *, const int *, const int *, MPI_Datatype,
		 int, MPI_Comm));
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
	rc = real(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
	collective(&c, SC_MPI_GATHERV, comm, root);
	if (sbuf != MPI_IN_PLACE)
		c.sent = mpi_bytes(stype, scount);
	if (comm_rank(comm) == root)
		c.received = mpi_bytes(rtype, sum_counts(rcounts, comm_size(comm)));
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		MPI_Datatype rtype, int root, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Scatter",
		(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm));
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
	rc = real(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
	collective(&c, SC_MPI_SCATTER, comm, root);
	if (comm_rank(comm) == root)
		c.sent = mpi_bytes(stype, (long long)scount * comm_size(comm));
	if (rbuf != MPI_IN_PLACE)
		c.received = mpi_bytes(rtype, rcount);
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
		 void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Scatterv",
		(const void *, const int *, const int *, MPI_Datatype, void *, int, MPI_Datatype,
		 int, MPI_Comm));
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
	rc = real(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
	collective(&c, SC_MPI_SCATTERV, comm, root);
	if (comm_rank(comm) == root)
		c.sent = mpi_bytes(stype, sum_counts(scounts, comm_size(comm)));
	if (rbuf != MPI_IN_PLACE)
		c.received = mpi_bytes(rtype, rcount);
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		  MPI_Datatype rtype, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Allgather",
		(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm));
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(sbuf, scount, stype, rbuf, rcount, rtype, comm);
	rc = real(sbuf, scount, stype, rbuf, rcount, rtype, comm);
	collective(&c, SC_MPI_ALLGATHER, comm, -1);
	if (sbuf != MPI_IN_PLACE)
		c.sent = mpi_bytes(stype, scount);
	c.received = mpi_bytes(rtype, (long long)rcount * comm_size(comm));
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		   const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Allgatherv",
		(const void *, int, MPI_Datatype, void *, const int *, const int *, MPI_Datatype,
		 MPI_Comm));
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
	rc = real(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
	collective(&c, SC_MPI_ALLGATHERV, comm, -1);
	if (sbuf != MPI_IN_PLACE)
		c.sent = mpi_bytes(stype, scount);
	c.received = mpi_bytes(rtype, sum_counts(rcounts, comm_size(comm)));
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
		 MPI_Datatype rtype, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Alltoall",
		(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm));
	struct sc_rec_mpi_call c;
	int rc, n;

	if (!mpi_begin(&c.ts))
		return real(sbuf, scount, stype, rbuf, rcount, rtype, comm);
	rc = real(sbuf, scount, stype, rbuf, rcount, rtype, comm);
	collective(&c, SC_MPI_ALLTOALL, comm, -1);
	n = comm_size(comm);
	c.received = mpi_bytes(rtype, (long long)rcount * n);
	c.sent = sbuf == MPI_IN_PLACE ? c.received : mpi_bytes(stype, (long long)scount * n);
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
		  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
		  MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Alltoallv",
		(const void *, const int *, const int *, MPI_Datatype, void *, const int *,
		 const int *, MPI_Datatype, MPI_Comm));
	struct sc_rec_mpi_call c;
	int rc, n;

	if (!mpi_begin(&c.ts))
		return real(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
	rc = real(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
	collective(&c, SC_MPI_ALLTOALLV, comm, -1);
	n = comm_size(comm);
	c.received = mpi_bytes(rtype, sum_counts(rcounts, n));
	c.sent = sbuf == MPI_IN_PLACE ? c.received : mpi_bytes(stype, sum_counts(scounts, n));
	mpi_write(&c, NULL, 0);
	return rc;
}
