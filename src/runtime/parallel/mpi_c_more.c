/* SPDX-License-Identifier: MIT */
/*
 * More of the C bindings (mpi_c.c has the common ones): the other send modes, any-of and
 * all-of completion, probes, the scans and reduce-scatter, and the non-blocking collectives
 * (their bytes on the call that starts them; the wait names their request).
 */
#include "mpi_record.h"

#define MAX_FOLLOWED 64

int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Ssend", (const void *, int, MPI_Datatype, int, int, MPI_Comm));
	return mpi_traced_send(SC_MPI_SSEND, real, buf, count, type, dest, tag, comm);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Rsend", (const void *, int, MPI_Datatype, int, int, MPI_Comm));
	return mpi_traced_send(SC_MPI_RSEND, real, buf, count, type, dest, tag, comm);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Bsend", (const void *, int, MPI_Datatype, int, int, MPI_Comm));
	return mpi_traced_send(SC_MPI_BSEND, real, buf, count, type, dest, tag, comm);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
	       MPI_Request *req)
{
	PMPI_FN(real, int, "PMPI_Issend",
		(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *));
	return mpi_traced_isend(SC_MPI_ISSEND, real, buf, count, type, dest, tag, comm, req);
}

/* The completion of request `was` (one of a Waitany or Testall), bytes summed into `c`. */
static unsigned one_done(struct sc_rec_mpi_call *c, MPI_Request was, const MPI_Status *st,
			 struct sc_mpi_done *d)
{
	int fn = was == MPI_REQUEST_NULL ? 0 : mpi_done(c, was, st, d);

	if (fn == SC_MPI_ISEND || fn == SC_MPI_ISSEND)
		c->sent += d->bytes;
	else if (fn == SC_MPI_IRECV)
		c->received += d->bytes;
	return fn ? 1 : 0;
}

int MPI_Waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status)
{
	PMPI_FN(real, int, "PMPI_Waitany", (int, MPI_Request *, int *, MPI_Status *));
	struct sc_rec_mpi_call c;
	struct sc_mpi_done done;
	MPI_Request was[MAX_FOLLOWED];
	MPI_Status mine;
	int rc;

	if (!mpi_begin(&c.ts) || count < 0 || count > MAX_FOLLOWED)
		return real(count, reqs, index, status);
	for (int i = 0; i < count; i++)
		was[i] = reqs[i];
	if (status == MPI_STATUS_IGNORE)
		status = &mine;
	rc = real(count, reqs, index, status);
	mpi_call(&c, SC_MPI_WAITANY, MPI_COMM_NULL);
	mpi_write(&c, &done,
		  *index >= 0 && *index < count ? one_done(&c, was[*index], status, &done) : 0);
	return rc;
}

int MPI_Testall(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
	PMPI_FN(real, int, "PMPI_Testall", (int, MPI_Request *, int *, MPI_Status *));
	struct sc_rec_mpi_call c;
	struct sc_mpi_done done[MAX_FOLLOWED];
	MPI_Request was[MAX_FOLLOWED];
	MPI_Status mine[MAX_FOLLOWED];
	unsigned k = 0;
	int rc;

	if (!mpi_begin(&c.ts) || count < 0 || count > MAX_FOLLOWED)
		return real(count, reqs, flag, statuses);
	for (int i = 0; i < count; i++)
		was[i] = reqs[i];
	if (statuses == MPI_STATUSES_IGNORE)
		statuses = mine;
	rc = real(count, reqs, flag, statuses);
	mpi_call(&c, SC_MPI_TESTALL, MPI_COMM_NULL);
	for (int i = 0; *flag && i < count; i++)
		k += one_done(&c, was[i], &statuses[i], &done[k]);
	mpi_write(&c, done, k);
	return rc;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
	PMPI_FN(real, int, "PMPI_Probe", (int, int, MPI_Comm, MPI_Status *));
	struct sc_rec_mpi_call c;
	MPI_Status mine;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(source, tag, comm, status);
	if (status == MPI_STATUS_IGNORE)
		status = &mine;
	rc = real(source, tag, comm, status);
	mpi_call(&c, SC_MPI_PROBE, comm);
	c.peer = mpi_world_rank(comm, status->MPI_SOURCE); /* the message found */
	c.tag = status->MPI_TAG;
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
	PMPI_FN(real, int, "PMPI_Iprobe", (int, int, MPI_Comm, int *, MPI_Status *));
	struct sc_rec_mpi_call c;
	MPI_Status mine;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(source, tag, comm, flag, status);
	if (status == MPI_STATUS_IGNORE)
		status = &mine;
	rc = real(source, tag, comm, flag, status);
	mpi_call(&c, SC_MPI_IPROBE, comm);
	if (*flag) {
		c.peer = mpi_world_rank(comm, status->MPI_SOURCE);
		c.tag = status->MPI_TAG;
	}
	mpi_write(&c, NULL, 0);
	return rc;
}

static int comm_size(MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Comm_size", (MPI_Comm, int *));
	int n = 0;

	real(comm, &n);
	return n;
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype type,
		       MPI_Op op, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Reduce_scatter",
		(const void *, void *, const int *, MPI_Datatype, MPI_Op, MPI_Comm));
	PMPI_FN(rank_of, int, "PMPI_Comm_rank", (MPI_Comm, int *));
	struct sc_rec_mpi_call c;
	long long total = 0;
	int rc, n, me = 0;

	if (!mpi_begin(&c.ts))
		return real(sbuf, rbuf, rcounts, type, op, comm);
	rc = real(sbuf, rbuf, rcounts, type, op, comm);
	mpi_call(&c, SC_MPI_REDUCE_SCATTER, comm);
	n = comm_size(comm);
	rank_of(comm, &me);
	for (int i = 0; i < n; i++)
		total += rcounts[i];
	c.sent = mpi_bytes(type, total);
	c.received = me >= 0 && me < n ? mpi_bytes(type, rcounts[me]) : 0;
	mpi_write(&c, NULL, 0);
	return rc;
}

/* MPI_Scan and MPI_Exscan: each rank sends and receives `count` elements. */
static int scan(int fn, const char *name, const void *sbuf, void *rbuf, int count,
		MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
	typedef int (*scan_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
	static scan_fn reals[2];
	scan_fn *real = &reals[fn - SC_MPI_SCAN];
	struct sc_rec_mpi_call c;
	int rc;

	if (__builtin_expect(!*real, 0) && !(*real = (scan_fn)mpi_next(name)))
		mpi_missing(name);
	if (!mpi_begin(&c.ts))
		return (*real)(sbuf, rbuf, count, type, op, comm);
	rc = (*real)(sbuf, rbuf, count, type, op, comm);
	mpi_call(&c, fn, comm);
	c.sent = c.received = mpi_bytes(type, count);
	mpi_write(&c, NULL, 0);
	return rc;
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
	return scan(SC_MPI_SCAN, "PMPI_Scan", sbuf, rbuf, count, type, op, comm);
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
	return scan(SC_MPI_EXSCAN, "PMPI_Exscan", sbuf, rbuf, count, type, op, comm);
}

/* A non-blocking collective started: its request, for the wait that completes it. */
static void started(struct sc_rec_mpi_call *c, int rc, MPI_Request *req, MPI_Comm comm)
{
	if (rc == MPI_SUCCESS)
		c->request = mpi_request_start(*req, c->fn, 0, comm);
	mpi_write(c, NULL, 0);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
	PMPI_FN(real, int, "PMPI_Ibarrier", (MPI_Comm, MPI_Request *));
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(comm, req);
	rc = real(comm, req);
	mpi_call(&c, SC_MPI_IBARRIER, comm);
	started(&c, rc, req, comm);
	return rc;
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request *req)
{
	PMPI_FN(real, int, "PMPI_Ibcast",
		(void *, int, MPI_Datatype, int, MPI_Comm, MPI_Request *));
	PMPI_FN(rank_of, int, "PMPI_Comm_rank", (MPI_Comm, int *));
	struct sc_rec_mpi_call c;
	int rc, me = -1;

	if (!mpi_begin(&c.ts))
		return real(buf, count, type, root, comm, req);
	rc = real(buf, count, type, root, comm, req);
	mpi_call(&c, SC_MPI_IBCAST, comm);
	c.peer = mpi_world_rank(comm, root);
	rank_of(comm, &me);
	if (me == root)
		c.sent = mpi_bytes(type, count);
	else
		c.received = mpi_bytes(type, count);
	started(&c, rc, req, comm);
	return rc;
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
		   MPI_Comm comm, MPI_Request *req)
{
	PMPI_FN(real, int, "PMPI_Iallreduce",
		(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *));
	struct sc_rec_mpi_call c;
	int rc;

	if (!mpi_begin(&c.ts))
		return real(sbuf, rbuf, count, type, op, comm, req);
	rc = real(sbuf, rbuf, count, type, op, comm, req);
	mpi_call(&c, SC_MPI_IALLREDUCE, comm);
	c.sent = c.received = mpi_bytes(type, count);
	started(&c, rc, req, comm);
	return rc;
}
