/* SPDX-License-Identifier: MIT */
/*
 * The recording half of libsyscope-mpi.so (see mpi_record.h): the runtime's plugin table,
 * communicators, requests and the one record per call.
 */

#include "mpi_record.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mpi_loaded_abi.h"
#include "../plugin.h"

_Thread_local int mpi_in_fortran;

const struct sc_plugin_api *mpi_api;
atomic_int mpi_api_state; /* 0 not looked up, 1 found, 2 none: record nothing */
uint64_t mpi_clock_shift;
bool mpi_attached;

/*
 * PMPI_X, else the next MPI_X: a program with MPI stubs of its own (a serial build against a
 * library without a profiling interface) keeps calling its stubs.
 */
void *mpi_next(const char *name)
{
	/* Loaded by syscope attach (dlopen, not global), the MPI library is not "next" to
	 * this one but in the program's global scope, where none of our wrappers is. */
	void *scope = mpi_attached ? RTLD_DEFAULT : RTLD_NEXT;
	void *f = dlsym(scope, name);

	return f ? f : dlsym(scope, name + 1);
}

_Noreturn void mpi_missing(const char *name)
{
	static const char msg[] = "syscope: the program calls MPI but no MPI library defines ";

	/* Only reached by a program that calls an MPI function no library defines (a weak
	 * reference): without us it would have crashed on a null call. */
	if (write(2, msg, sizeof(msg) - 1) < 0 || write(2, name, strlen(name)) < 0 ||
	    write(2, "\n", 1) < 0)
		_exit(127);
	_exit(127);
}

static void mpi_report(void);

/* A runtime that predates in-place recording (or a test's) goes through record(). */
static bool can_reserve;

/*
 * Whether the process's MPI has another ABI than the headers this library was built with
 * (mpi_loaded_abi.h): the launcher
 * preloads the matching build (src/cmd/mpi_abi.h), but a script's MPI may be another than
 * its job's launcher says. Such a process is not recorded: the wrappers only pass its calls
 * on, whose handles they never look into then.
 */
static bool other_abi(void)
{
	bool openmpi = sc_loaded_mpi_is_openmpi();

	if (!dlsym(RTLD_DEFAULT, "PMPI_Init"))
		return false; /* not known yet: the calls will say (mpi_next) */
#if defined(OPEN_MPI)
	return !openmpi;
#elif defined(MPICH)
	return openmpi;
#else
	return false;
#endif
}

bool mpi_find_api(void)
{
	sc_plugin_api_fn fn = (sc_plugin_api_fn)dlsym(RTLD_DEFAULT, SC_PLUGIN_API_SYMBOL);
	const struct sc_plugin_api *a = fn ? fn(SC_PLUGIN_ABI) : NULL;

	if (a && other_abi()) {
		if (a->size >= offsetof(struct sc_plugin_api, py_callsites_on))
			a->note(SC_NOTE_WARN,
				"MPI tracing off: this process's MPI library has another ABI (Open "
				"MPI's or MPICH's) than the MPI tracer preloaded; its calls are "
				"passed on unrecorded (a syscope built with both MPIs' headers "
				"preloads the right one for a program linked to its MPI)");
		a = NULL;
	}
	return mpi_use_api(a);
}

bool mpi_use_api(const struct sc_plugin_api *a)
{
	const char *shift = getenv("SYSCOPE_TEST_CLOCK_SHIFT_NS");

	if (a && a->size >= offsetof(struct sc_plugin_api, py_callsites_on)) {
		if (shift)
			mpi_clock_shift = (uint64_t)strtoll(shift, NULL, 10);
		can_reserve = a->size >= sizeof(*a) && a->reserve && a->commit;
		mpi_api = a;
		mpi_counts_init();
		a->at_stop(mpi_report);
		atomic_store(&mpi_api_state, 1);
		return true;
	}
	atomic_store(&mpi_api_state, 2);
	return false;
}

/* A call in flight at a detach ends with the runtime dormant: it is not recorded. */
static inline bool detached(void)
{
	return __builtin_expect(mpi_attached, 0) && !mpi_api->active();
}

static void write_at(struct sc_rec_mpi_call *c, const struct sc_mpi_done *done, unsigned ndone,
		     uint64_t end)
{
	if (detached())
		return;
	c->end = end;
	c->ndone = (uint16_t)ndone;
	if (mpi_attached)
		c->hdr.flags |= SC_MPI_ATTACHED;
	mpi_api->record(SC_REC_MPI_CALL, c->hdr.flags, &c->ts, sizeof(*c) - sizeof(c->hdr), done,
			(uint32_t)(ndone * sizeof(*done)));
}

static int world_size_now(void);

static void write_short(int fn, uint32_t comm, uint64_t t0, uint64_t end, uint16_t flags)
{
	uint16_t f = (uint16_t)((unsigned)fn | (flags & SC_MPI_FORTRAN ? SC_MPI_SHORT_FORTRAN : 0));
	struct sc_rec_mpi_short *r;

	if (detached())
		return;
	if (can_reserve) {
		r = mpi_api->reserve(sizeof(*r));
		if (r) { /* else counted as lost */
			r->ts = t0;
			r->duration = (uint32_t)(end - t0);
			r->comm = comm;
			mpi_api->commit(r, SC_REC_MPI_SHORT, f, sizeof(*r));
		}
	} else {
		struct sc_rec_mpi_short s = { .ts = t0,
					      .duration = (uint32_t)(end - t0),
					      .comm = comm };

		mpi_api->record(SC_REC_MPI_SHORT, f, &s.ts, sizeof(s) - sizeof(s.hdr), NULL, 0);
	}
}

void mpi_write_query(int fn, MPI_Comm comm, uint16_t flags)
{
	uint64_t now = mpi_now();
	uint32_t id = mpi_plain_comm_id(comm);
	struct sc_rec_mpi_call c;

	if (__builtin_expect(id != UINT32_MAX, 1)) {
		write_short(fn, id, now, now, flags);
		return;
	}
	c.ts = now;
	mpi_call(&c, fn, comm);
	c.hdr.flags = flags;
	write_at(&c, NULL, 0, now);
}

void mpi_write_plain(int fn, MPI_Comm comm, uint64_t t0, uint16_t flags)
{
	uint64_t end = mpi_now();
	uint32_t id = mpi_plain_comm_id(comm);
	struct sc_rec_mpi_call c;

	if (__builtin_expect(id != UINT32_MAX && end - t0 < UINT32_MAX, 1)) {
		write_short(fn, id, t0, end, flags);
		return;
	}
	c.ts = t0;
	mpi_call(&c, fn, comm);
	c.hdr.flags = flags;
	write_at(&c, NULL, 0, end);
}

void mpi_write(struct sc_rec_mpi_call *c, const struct sc_mpi_done *done, unsigned ndone)
{
	uint64_t end = mpi_now();

	/* A call that turned out to have nothing but its communicator to say goes short. */
	if (!ndone && !c->unfollowed && c->peer == SC_MPI_NONE && c->tag == SC_MPI_NONE &&
	    !c->sent && !c->received && !c->request && end - c->ts < UINT32_MAX &&
	    ((c->comm == 0 && !c->comm_size) ||
	     (c->comm == 1 && c->comm_size == world_size_now()) ||
	     (c->comm == 2 && c->comm_size == 1))) {
		write_short(c->fn, c->comm, c->ts, end, c->hdr.flags);
		return;
	}
	write_at(c, done, ndone, end);
}

uint64_t mpi_bytes(MPI_Datatype type, long long count)
{
	PMPI_FN(real, int, "PMPI_Type_size", (MPI_Datatype, int *));
	int size = 0;

	if (type == MPI_DATATYPE_NULL || count <= 0 || real(type, &size) != MPI_SUCCESS || size < 0)
		return 0;
	return (uint64_t)size * (uint64_t)count;
}

/* ---- communicators ---- */

/*
 * Communicators the program made, with their number and group. Numbers follow the order of
 * creation, which is the same on every rank for collective creation in the same order, so
 * the reader can match messages across ranks by it. Kept in a fixed table: a creation is
 * not a hot path, but the table is read at every call on such a communicator. One the
 * tracer did not see made (before syscope attach, or by a function it does not wrap) is
 * added at its first use, numbered apart (SC_MPI_COMM_UNSEEN): its order of first use is
 * this rank's own, so it is never named as one of the numbers of creation.
 */
#define MAX_COMMS 256
static struct comm_slot {
	MPI_Comm comm;
	MPI_Group group;
	uint32_t id;
	int size;
} comms[MAX_COMMS];
static atomic_uint ncomms;
static atomic_uint next_comm_id = 3; /* 1 world, 2 self */
static atomic_uint next_unseen_id = 1;
static MPI_Group world_group = MPI_GROUP_NULL;
static int world_size; /* known from MPI_Init on: most calls name the world */

uint32_t mpi_plain_comm_id(MPI_Comm comm)
{
	if (comm == MPI_COMM_WORLD)
		return world_size ? 1 : UINT32_MAX;
	if (comm == MPI_COMM_SELF)
		return 2;
	return comm == MPI_COMM_NULL ? 0 : UINT32_MAX;
}

static int world_size_now(void)
{
	return world_size ? world_size : -1;
}

static struct comm_slot *comm_slot(MPI_Comm comm)
{
	unsigned n = atomic_load_explicit(&ncomms, memory_order_acquire);

	for (unsigned i = 0; i < n && i < MAX_COMMS; i++)
		if (comms[i].comm == comm && comms[i].id)
			return &comms[i];
	return NULL;
}

/* A slot for `comm` numbered `id`, or NULL when the table is full. */
static struct comm_slot *comm_add(MPI_Comm comm, uint32_t id)
{
	PMPI_FN(group_of, int, "PMPI_Comm_group", (MPI_Comm, MPI_Group *));
	PMPI_FN(size_of, int, "PMPI_Comm_size", (MPI_Comm, int *));
	PMPI_FN(is_inter, int, "PMPI_Comm_test_inter", (MPI_Comm, int *));
	unsigned i = atomic_fetch_add(&ncomms, 1);
	int inter = 0;

	if (i >= MAX_COMMS)
		return NULL; /* its calls name no communicator id; peers stay in its own ranks */
	comms[i].comm = comm;
	comms[i].group = MPI_GROUP_NULL;
	/* An intercommunicator's peers are ranks of its remote group: left as they are. */
	if (is_inter(comm, &inter) != MPI_SUCCESS || !inter)
		group_of(comm, &comms[i].group);
	size_of(comm, &comms[i].size);
	comms[i].id = id;
	return &comms[i];
}

void mpi_comm_created(MPI_Comm comm)
{
	uint32_t id = atomic_fetch_add(&next_comm_id, 1);

	if (comm != MPI_COMM_NULL)
		comm_add(comm, id);
}

/* The slot of `comm` (not the world, self or null), added now if the tracer did not see it
 * made; NULL when the table is full. */
static struct comm_slot *comm_known(MPI_Comm comm)
{
	struct comm_slot *s = comm_slot(comm);

	if (__builtin_expect(s != NULL, 1))
		return s;
	return comm_add(comm, SC_MPI_COMM_UNSEEN | atomic_fetch_add(&next_unseen_id, 1));
}

void mpi_comm_freed(MPI_Comm comm)
{
	struct comm_slot *s = comm_slot(comm);

	if (s)
		s->id = 0; /* the handle may come back for another communicator */
}

void mpi_comm_fields(struct sc_rec_mpi_call *c, MPI_Comm comm)
{
	PMPI_FN(real, int, "PMPI_Comm_size", (MPI_Comm, int *));
	struct comm_slot *s;

	if (comm == MPI_COMM_WORLD && world_size) {
		c->comm = 1;
		c->comm_size = world_size;
	} else if (comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF) {
		c->comm = comm == MPI_COMM_WORLD ? 1 : 2;
		real(comm, &c->comm_size);
	} else if (comm != MPI_COMM_NULL && (s = comm_known(comm))) {
		c->comm = s->id;
		c->comm_size = s->size;
	} else if (comm != MPI_COMM_NULL) {
		real(comm, &c->comm_size);
	}
}

int32_t mpi_world_rank(MPI_Comm comm, int r)
{
	PMPI_FN(real, int, "PMPI_Group_translate_ranks",
		(MPI_Group, int, const int *, MPI_Group, int *));
	struct comm_slot *s;
	int out = MPI_UNDEFINED;

	if (r < 0)
		return SC_MPI_NONE;
	if (comm == MPI_COMM_WORLD)
		return r;
	if (comm == MPI_COMM_SELF || comm == MPI_COMM_NULL || !(s = comm_known(comm)) ||
	    world_group == MPI_GROUP_NULL || s->group == MPI_GROUP_NULL)
		return r; /* a full table, an intercommunicator: its own rank */
	if (real(s->group, 1, &r, world_group, &out) != MPI_SUCCESS || out < 0)
		return r;
	return out;
}

void mpi_job_started(void)
{
	PMPI_FN(real, int, "PMPI_Comm_group", (MPI_Comm, MPI_Group *));
	PMPI_FN(size_of, int, "PMPI_Comm_size", (MPI_Comm, int *));

	real(MPI_COMM_WORLD, &world_group);
	size_of(MPI_COMM_WORLD, &world_size);
}

/* ---- requests ---- */

/*
 * Requests in flight, per thread (a request is completed by the thread that waits for it,
 * almost always the one that started it; one completed elsewhere is simply not named).
 * Open addressing on the handle; a full table keeps nothing more, and the wait then names
 * no request: counted in a note at the end.
 */
#define REQ_SLOTS 256
struct req_slot {
	MPI_Request req;
	uint64_t id, bytes; /* id 0: free */
	MPI_Comm comm;
	int fn;
	bool used; /* was ever taken: lookups go past it */
};
static _Thread_local struct req_slot reqs[REQ_SLOTS];
static atomic_uint_least64_t next_request = 1;
static atomic_uint_least64_t untracked_requests;

static unsigned req_hash(MPI_Request req)
{
	uint64_t h = (uint64_t)(uintptr_t)req * 0x9e3779b97f4a7c15ull;

	return (unsigned)(h >> 56);
}

uint64_t mpi_request_start(MPI_Request req, int fn, uint64_t bytes, MPI_Comm comm)
{
	unsigned h = req_hash(req);

	if (req == MPI_REQUEST_NULL)
		return 0;
	for (unsigned i = 0; i < REQ_SLOTS; i++) {
		struct req_slot *s = &reqs[(h + i) % REQ_SLOTS];

		if (!s->id) {
			*s = (struct req_slot){
				.req = req, .bytes = bytes, .comm = comm, .fn = fn, .used = true
			};
			s->id = atomic_fetch_add_explicit(&next_request, 1, memory_order_relaxed);
			return s->id;
		}
	}
	atomic_fetch_add_explicit(&untracked_requests, 1, memory_order_relaxed);
	return 0;
}

static bool request_take(MPI_Request req, uint64_t *id, int *fn, uint64_t *bytes, MPI_Comm *comm)
{
	unsigned h = req_hash(req);

	for (unsigned i = 0; i < REQ_SLOTS; i++) {
		struct req_slot *s = &reqs[(h + i) % REQ_SLOTS];

		if (!s->used)
			return false;
		if (s->id && s->req == req) {
			*id = s->id;
			*fn = s->fn;
			*bytes = s->bytes;
			*comm = s->comm;
			s->id = 0;
			return true;
		}
	}
	return false;
}

/* At the process's end: what could not be followed. */
static void mpi_report(void)
{
	uint64_t n = atomic_load(&untracked_requests);
	char text[160];

	if (atomic_load(&mpi_api_state) != 1)
		return;
	mpi_counts_write_all();
	mpi_counts_note();
	if (!n)
		return;
	snprintf(text, sizeof(text),
		 "MPI: %llu requests were not followed (more than %d in flight on a thread); "
		 "their waits name no request",
		 (unsigned long long)n, REQ_SLOTS);
	mpi_api->note(SC_NOTE_WARN, text);
}

int mpi_done(struct sc_rec_mpi_call *c, MPI_Request req, const MPI_Status *st,
	     struct sc_mpi_done *d)
{
	MPI_Comm comm;
	uint64_t bytes;
	int fn;

	if (!request_take(req, &d->request, &fn, &bytes, &comm)) {
		c->unfollowed++; /* started before the attach, on another thread, or not kept */
		return 0;
	}
	*d = (struct sc_mpi_done){ .request = d->request, .bytes = bytes };
	d->peer = d->tag = SC_MPI_NONE;
	if (fn == SC_MPI_IRECV && st) {
		struct sc_rec_mpi_call of = { 0 };

		mpi_comm_fields(&of, comm);
		d->comm = of.comm;
		d->peer = mpi_world_rank(comm, st->MPI_SOURCE);
		d->tag = st->MPI_TAG;
	}
	return fn;
}
