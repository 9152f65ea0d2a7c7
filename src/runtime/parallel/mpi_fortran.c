/* SPDX-License-Identifier: MIT */
/*
 * The Fortran bindings (mpif.h and `use mpi`: the gfortran names, lower case with one
 * underscore; `use mpi_f08`: the same with _f08_, from mpi_fortran_f08.c). Open MPI 4's Fortran layer calls the C PMPI_* functions directly, so C
 * wrappers never see a Fortran call; MPICH's and Open MPI 5's may call MPI_*. Each wrapper
 * here calls the Fortran pmpi_*_ entry point (so that Fortran's own MPI_IN_PLACE,
 * MPI_BOTTOM and MPI_STATUS_IGNORE keep their meaning: C-side reimplementations corrupt
 * them), with mpi_in_fortran set so that C wrappers it reaches stay silent, then records the
 * call through the C path, its handles converted with PMPI_*_f2c.
 */
#include "mpi_record.h"

#include <dlfcn.h>

#define FORTRAN_FOLLOWED 64

/*
 * The names: mpif.h's and `use mpi`'s (mpi_send_), or, compiled again by
 * mpi_fortran_f08.c, `use mpi_f08`'s (mpi_send_f08_), whose arguments are passed alike
 * (handles are one integer, ierror is optional: NULL when left out).
 */
#ifdef SYSCOPE_MPI_F08
#define F(name) name##_f08_
#define P(name) name "_f08_"
#else
#define F(name) name##_
#define P(name) name "_"
#endif

/* The entry points below are the Fortran ABI's names: no C header declares them. */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#ifdef MPICH
/* MPICH's handles are ints, the same in Fortran and C: its f2c conversions are macros, no
 * library defines them. */
static MPI_Comm f_comm(MPI_Fint c)
{
	return MPI_Comm_f2c(c);
}

static MPI_Datatype f_type(MPI_Fint t)
{
	return MPI_Type_f2c(t);
}

static MPI_Request f_request(MPI_Fint r)
{
	return MPI_Request_f2c(r);
}

/* MPICH's Fortran MPI_STATUS(ES)_IGNORE: addresses its library publishes in these variables
 * (looked up, not linked: this library loads in programs without MPI). */
static bool f_is_ignore(const MPI_Fint *f, const char *var)
{
	MPI_Fint *const *p = dlsym(RTLD_DEFAULT, var);

	return !f || (p && f == *p);
}
#else
static MPI_Comm f_comm(MPI_Fint c)
{
	PMPI_FN(real, MPI_Comm, "PMPI_Comm_f2c", (MPI_Fint));

	return real(c);
}

static MPI_Datatype f_type(MPI_Fint t)
{
	PMPI_FN(real, MPI_Datatype, "PMPI_Type_f2c", (MPI_Fint));

	return real(t);
}

static MPI_Request f_request(MPI_Fint r)
{
	PMPI_FN(real, MPI_Request, "PMPI_Request_f2c", (MPI_Fint));

	return real(r);
}
#endif

/* Whether a Fortran status is MPI_STATUS_IGNORE. */
static bool f_status_ignored(const MPI_Fint *f)
{
#if defined(OPEN_MPI)
	return !f || !&MPI_F_STATUS_IGNORE || f == MPI_F_STATUS_IGNORE;
#elif defined(MPICH)
	return f_is_ignore(f, "MPI_F_STATUS_IGNORE");
#else
	return !f;
#endif
}

/* A Fortran status as C's, or NULL for MPI_STATUS_IGNORE. */
static const MPI_Status *f_status(const MPI_Fint *f, MPI_Status *c)
{
	PMPI_FN(real, int, "PMPI_Status_f2c", (const MPI_Fint *, MPI_Status *));

	return !f_status_ignored(f) && real(f, c) == MPI_SUCCESS ? c : NULL;
}

/* Whether an array of statuses is MPI_STATUSES_IGNORE. */
static bool f_statuses_ignored(const MPI_Fint *f)
{
#if defined(OPEN_MPI)
	return !f || !&MPI_F_STATUSES_IGNORE || f == MPI_F_STATUSES_IGNORE;
#elif defined(MPICH)
	return f_is_ignore(f, "MPI_F_STATUSES_IGNORE");
#else
	return !f;
#endif
}

static void start(struct sc_rec_mpi_call *c, int fn, MPI_Comm comm)
{
	mpi_call(c, fn, comm);
	c->hdr.flags = SC_MPI_FORTRAN;
}

/* Call `real` with mpi_in_fortran set; record when `on`. */
#define CALL(...)                  \
	do {                       \
		mpi_in_fortran++;  \
		real(__VA_ARGS__); \
		mpi_in_fortran--;  \
	} while (0)

static void fortran_init(struct sc_rec_mpi_call *c, int fn)
{
	PMPI_FN(real, int, "PMPI_Comm_rank", (MPI_Comm, int *));

	mpi_job_started();
	mpi_clock_sync(true);
	start(c, fn, MPI_COMM_WORLD);
	real(MPI_COMM_WORLD, &c->peer);
	mpi_write(c, NULL, 0);
}

void F(mpi_init)(MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_init"), (MPI_Fint *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);

	CALL(ierr);
	if (on || mpi_begin(&c.ts))
		fortran_init(&c, SC_MPI_INIT);
	else if (mpi_tracer_present())
		mpi_clock_sync(true);
}

void F(mpi_init_thread)(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_init_thread"), (MPI_Fint *, MPI_Fint *, MPI_Fint *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);

	CALL(required, provided, ierr);
	if (on || mpi_begin(&c.ts))
		fortran_init(&c, SC_MPI_INIT_THREAD);
	else if (mpi_tracer_present())
		mpi_clock_sync(true);
}

void F(mpi_finalize)(MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_finalize"), (MPI_Fint *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);

	if (on) {
		start(&c, SC_MPI_FINALIZE, MPI_COMM_NULL);
		mpi_counts_write_all(); /* no query is valid past this point */
	}
	if (mpi_tracer_present())
		mpi_clock_sync(false);
	CALL(ierr);
	if (on)
		mpi_write(&c, NULL, 0);
}

void F(mpi_comm_rank)(MPI_Fint *comm, MPI_Fint *rank, MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_comm_rank"), (MPI_Fint *, MPI_Fint *, MPI_Fint *));
	bool on = mpi_recording();

	CALL(comm, rank, ierr);
	if (on && !mpi_query_counted(SC_MPI_COMM_RANK, f_comm(*comm), SC_MPI_FORTRAN))
		mpi_write_query(SC_MPI_COMM_RANK, f_comm(*comm), SC_MPI_FORTRAN);
}

void F(mpi_comm_size)(MPI_Fint *comm, MPI_Fint *size, MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_comm_size"), (MPI_Fint *, MPI_Fint *, MPI_Fint *));
	bool on = mpi_recording();

	CALL(comm, size, ierr);
	if (on && !mpi_query_counted(SC_MPI_COMM_SIZE, f_comm(*comm), SC_MPI_FORTRAN))
		mpi_write_query(SC_MPI_COMM_SIZE, f_comm(*comm), SC_MPI_FORTRAN);
}

void F(mpi_send)(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest, MPI_Fint *tag,
		 MPI_Fint *comm, MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_send"),
		(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);
	MPI_Comm cc;

	CALL(buf, count, type, dest, tag, comm, ierr);
	if (!on)
		return;
	cc = f_comm(*comm);
	start(&c, SC_MPI_SEND, cc);
	c.peer = mpi_world_rank(cc, *dest);
	c.tag = *tag;
	c.sent = mpi_bytes(f_type(*type), *count);
	mpi_write(&c, NULL, 0);
}

void F(mpi_recv)(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source, MPI_Fint *tag,
		 MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_recv"),
		(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
		 MPI_Fint *));
	PMPI_FN(count_of, int, "PMPI_Get_count", (const MPI_Status *, MPI_Datatype, int *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);
	MPI_Status cs;
	const MPI_Status *st;
	MPI_Comm cc;
	MPI_Fint mine[sizeof(MPI_Status) / sizeof(MPI_Fint)];
	int n = 0;

	if (on && f_status_ignored(status))
		status = mine; /* its actual source and size come from it */
	CALL(buf, count, type, source, tag, comm, status, ierr);
	if (!on)
		return;
	cc = f_comm(*comm);
	start(&c, SC_MPI_RECV, cc);
	st = f_status(status, &cs);
	/* Without a status: the receive as posted (MPI_ANY_SOURCE names no peer). */
	c.peer = mpi_world_rank(cc, st ? st->MPI_SOURCE : *source);
	c.tag = st ? st->MPI_TAG : *tag == MPI_ANY_TAG ? SC_MPI_NONE : *tag;
	if (st && count_of(st, f_type(*type), &n) == MPI_SUCCESS && n != MPI_UNDEFINED)
		c.received = mpi_bytes(f_type(*type), n);
	else if (!st)
		c.received = mpi_bytes(f_type(*type), *count);
	mpi_write(&c, NULL, 0);
}

static void nonblocking(int fn, MPI_Fint *count, MPI_Fint *type, MPI_Fint *peer, MPI_Fint *tag,
			MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr, struct sc_rec_mpi_call *c)
{
	MPI_Comm cc = f_comm(*comm);
	uint64_t bytes = mpi_bytes(f_type(*type), *count);

	start(c, fn, cc);
	c->peer = mpi_world_rank(cc, *peer);
	c->tag = fn == SC_MPI_IRECV && *tag == MPI_ANY_TAG ? SC_MPI_NONE : *tag;
	if (fn == SC_MPI_ISEND)
		c->sent = bytes;
	if (!ierr || *ierr == MPI_SUCCESS)
		c->request = mpi_request_start(f_request(*req), fn, bytes, cc);
	mpi_write(c, NULL, 0);
}

void F(mpi_isend)(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest, MPI_Fint *tag,
		  MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_isend"),
		(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
		 MPI_Fint *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);

	CALL(buf, count, type, dest, tag, comm, req, ierr);
	if (on)
		nonblocking(SC_MPI_ISEND, count, type, dest, tag, comm, req, ierr, &c);
}

void F(mpi_irecv)(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source, MPI_Fint *tag,
		  MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_irecv"),
		(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
		 MPI_Fint *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);

	CALL(buf, count, type, source, tag, comm, req, ierr);
	if (on)
		nonblocking(SC_MPI_IRECV, count, type, source, tag, comm, req, ierr, &c);
}

/* The completions of Fortran requests `was` (C handles taken before the call). */
static void waited(struct sc_rec_mpi_call *c, const MPI_Request *was, int n,
		   const MPI_Fint *statuses, bool one_status)
{
	struct sc_mpi_done done[FORTRAN_FOLLOWED];
	unsigned k = 0;

	for (int i = 0; i < n; i++) {
		MPI_Status cs;
		const MPI_Status *st = NULL;

		if (one_status ? statuses != NULL : !f_statuses_ignored(statuses))
			st = f_status(statuses +
					      (size_t)i * (sizeof(MPI_Status) / sizeof(MPI_Fint)),
				      &cs);
		int fn = was[i] == MPI_REQUEST_NULL ? 0 : mpi_done(c, was[i], st, &done[k]);

		if (!fn)
			continue;
		if (fn == SC_MPI_ISEND)
			c->sent += done[k].bytes;
		else if (fn == SC_MPI_IRECV)
			c->received += done[k].bytes;
		k++;
	}
	mpi_write(c, done, k);
}

void F(mpi_wait)(MPI_Fint *req, MPI_Fint *status, MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_wait"), (MPI_Fint *, MPI_Fint *, MPI_Fint *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);
	MPI_Request was = on ? f_request(*req) : MPI_REQUEST_NULL;
	MPI_Fint mine[sizeof(MPI_Status) / sizeof(MPI_Fint)];

	if (on && f_status_ignored(status))
		status = mine; /* a receive's source comes from it */
	CALL(req, status, ierr);
	if (!on)
		return;
	start(&c, SC_MPI_WAIT, MPI_COMM_NULL);
	waited(&c, &was, 1, status, true);
}

void F(mpi_waitall)(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *statuses, MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_waitall"), (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);
	MPI_Request was[FORTRAN_FOLLOWED];
	MPI_Fint mine[FORTRAN_FOLLOWED * sizeof(MPI_Status) / sizeof(MPI_Fint)];
	int n = *count < FORTRAN_FOLLOWED ? *count : FORTRAN_FOLLOWED;

	for (int i = 0; on && i < n; i++)
		was[i] = f_request(reqs[i]);
	/* Statuses of our own where the program wants none: a receive's source comes from it. */
	if (on && *count <= FORTRAN_FOLLOWED && f_statuses_ignored(statuses))
		statuses = mine;
	CALL(count, reqs, statuses, ierr);
	if (!on)
		return;
	start(&c, SC_MPI_WAITALL, MPI_COMM_NULL);
	waited(&c, was, n, statuses, false);
}

void F(mpi_barrier)(MPI_Fint *comm, MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_barrier"), (MPI_Fint *, MPI_Fint *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);

	CALL(comm, ierr);
	if (!on)
		return;
	start(&c, SC_MPI_BARRIER, f_comm(*comm));
	mpi_write(&c, NULL, 0);
}

static int rank_in(MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Comm_rank", (MPI_Comm, int *));
	int r = -1;

	real(comm, &r);
	return r;
}

void F(mpi_bcast)(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm,
		  MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_bcast"),
		(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);
	MPI_Comm cc;

	CALL(buf, count, type, root, comm, ierr);
	if (!on)
		return;
	cc = f_comm(*comm);
	start(&c, SC_MPI_BCAST, cc);
	c.peer = mpi_world_rank(cc, *root);
	if (rank_in(cc) == *root)
		c.sent = mpi_bytes(f_type(*type), *count);
	else
		c.received = mpi_bytes(f_type(*type), *count);
	mpi_write(&c, NULL, 0);
}

void F(mpi_reduce)(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op,
		   MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_reduce"),
		(void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
		 MPI_Fint *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);
	MPI_Comm cc;

	CALL(sbuf, rbuf, count, type, op, root, comm, ierr);
	if (!on)
		return;
	cc = f_comm(*comm);
	start(&c, SC_MPI_REDUCE, cc);
	c.peer = mpi_world_rank(cc, *root);
	c.sent = mpi_bytes(f_type(*type), *count);
	if (rank_in(cc) == *root)
		c.received = c.sent;
	mpi_write(&c, NULL, 0);
}

void F(mpi_allreduce)(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op,
		      MPI_Fint *comm, MPI_Fint *ierr)
{
	PMPI_FN(real, void, P("pmpi_allreduce"),
		(void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *));
	struct sc_rec_mpi_call c;
	bool on = mpi_begin(&c.ts);

	CALL(sbuf, rbuf, count, type, op, comm, ierr);
	if (!on)
		return;
	start(&c, SC_MPI_ALLREDUCE, f_comm(*comm));
	c.sent = c.received = mpi_bytes(f_type(*type), *count);
	mpi_write(&c, NULL, 0);
}
