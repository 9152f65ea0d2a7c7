/* SPDX-License-Identifier: MIT */
/*
 * Calls of MPI queries that do no work (MPI_Comm_rank, MPI_Comm_size), counted instead of
 * recorded once a thread made --mpi-queries-recorded of them on a communicator: a record
 * costs several times the call, and a loop that asks its rank a million times gains nothing
 * from a million regions. The first calls stay regions (where the program asks, on the
 * timeline and in the call tree); the rest become MPI_COUNT records, whose counts the reader
 * adds to the profile, so the counts stay exact.
 *
 * Each thread counts in a block of its own (no atomic read-modify-write on the hot path), taken
 * from a fixed table at its first query; a thread that finds the table full records every call,
 * as before. A block's count is written out every MPI_COUNT_EVERY calls by its thread, and for
 * every block at MPI_Finalize and at the process's end; what was written is advanced with a
 * compare-and-swap, so two writers never write the same calls twice.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi_record.h"

#define MPI_COUNT_BLOCKS 128
#define MPI_COUNT_EVERY 4096 /* calls counted between two MPI_COUNT records of a thread */
#define QUERY_FNS 2	     /* MPI_Comm_rank, MPI_Comm_size */
#define PLAIN_COMMS 3	     /* none, the world, self: the ids of mpi_plain_comm_id */
#define BINDINGS 2	     /* C, Fortran */
#define PER_BLOCK (QUERY_FNS * PLAIN_COMMS * BINDINGS)

struct query_count {
	_Atomic uint64_t calls;	  /* every call, the recorded ones too; its thread's alone */
	_Atomic uint64_t written; /* counted calls written out */
};

struct count_block {
	struct query_count q[PER_BLOCK]; /* by slot_of */
};

static struct count_block blocks[MPI_COUNT_BLOCKS];
static atomic_uint nblocks;
static struct count_block no_block; /* a thread that found the table full: it records */
static _Thread_local struct count_block *my_block;
static uint64_t recorded_first = 16; /* SYSCOPE_MPI_QUERIES_RECORDED */

static uint64_t counted_of(uint64_t calls)
{
	return calls > recorded_first ? calls - recorded_first : 0;
}

static unsigned slot_of(unsigned q, unsigned comm, unsigned binding)
{
	return (q * PLAIN_COMMS + comm) * BINDINGS + binding;
}

/* Write what slot `k` of block `b` counted since its last record, unless another writer just
 * did. */
static void write_counted(struct count_block *b, unsigned k)
{
	struct query_count *c = &b->q[k];
	uint64_t now = counted_of(atomic_load_explicit(&c->calls, memory_order_relaxed));
	uint64_t before = atomic_load_explicit(&c->written, memory_order_relaxed);
	struct sc_rec_mpi_count r = { .comm = k / BINDINGS % PLAIN_COMMS };
	unsigned fn = k / (PLAIN_COMMS * BINDINGS) ? SC_MPI_COMM_SIZE : SC_MPI_COMM_RANK;
	uint16_t flags = (uint16_t)(fn | (k % BINDINGS ? SC_MPI_SHORT_FORTRAN : 0));

	if (now <= before || !atomic_compare_exchange_strong(&c->written, &before, now))
		return;
	r.calls = now - before;
	mpi_api->record(SC_REC_MPI_COUNT, flags, &r.comm, sizeof(r) - sizeof(r.hdr), NULL, 0);
}

static struct count_block *claim_block(void)
{
	unsigned i = atomic_fetch_add_explicit(&nblocks, 1, memory_order_relaxed);

	my_block = i < MPI_COUNT_BLOCKS ? &blocks[i] : &no_block;
	return my_block;
}

bool mpi_query_counted(int fn, MPI_Comm comm, uint16_t flags)
{
	struct count_block *b = my_block;
	uint32_t id = mpi_plain_comm_id(comm);
	struct query_count *c;
	unsigned k;
	uint64_t n;

	if (__builtin_expect(!b, 0))
		b = claim_block();
	if (__builtin_expect(b == &no_block || id >= PLAIN_COMMS, 0))
		return false;
	k = slot_of(fn == SC_MPI_COMM_SIZE, id, !!(flags & SC_MPI_FORTRAN));
	c = &b->q[k];
	n = atomic_load_explicit(&c->calls, memory_order_relaxed) + 1;
	atomic_store_explicit(&c->calls, n, memory_order_relaxed);
	if (n <= recorded_first)
		return false;
	if (__builtin_expect(counted_of(n) % MPI_COUNT_EVERY == 0, 0))
		write_counted(b, k);
	return true;
}

static unsigned blocks_taken(void)
{
	unsigned n = atomic_load(&nblocks);

	return n < MPI_COUNT_BLOCKS ? n : MPI_COUNT_BLOCKS;
}

void mpi_counts_write_all(void)
{
	unsigned n = blocks_taken();

	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < PER_BLOCK; k++)
			write_counted(&blocks[i], k);
}

/* At the process's end, after mpi_counts_write_all: how many calls were only counted. */
void mpi_counts_note(void)
{
	uint64_t counted[QUERY_FNS] = { 0 };
	unsigned n = blocks_taken();
	char text[256];

	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < PER_BLOCK; k++)
			counted[k / (PLAIN_COMMS * BINDINGS)] +=
				atomic_load(&blocks[i].q[k].written);
	if (!counted[0] && !counted[1])
		return;
	snprintf(text, sizeof(text),
		 "MPI: %llu calls of MPI_Comm_rank and %llu of MPI_Comm_size past a thread's "
		 "first %llu on a communicator were counted, not recorded one by one: the profile "
		 "has their exact counts; the timeline and the database only the calls recorded",
		 (unsigned long long)counted[0], (unsigned long long)counted[1],
		 (unsigned long long)recorded_first);
	mpi_api->note(SC_NOTE_INFO, text);
}

/* A fork child counts from zero: what its parent counted is the parent's to write. */
static void counts_fork_child(void)
{
	unsigned n = blocks_taken();

	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < PER_BLOCK; k++) {
			atomic_store(&blocks[i].q[k].calls, 0);
			atomic_store(&blocks[i].q[k].written, 0);
		}
}

void mpi_counts_init(void)
{
	static atomic_flag atfork_registered = ATOMIC_FLAG_INIT;
	const char *v = getenv("SYSCOPE_MPI_QUERIES_RECORDED");
	char *end;

	if (v && *v) { /* the launcher checked it: a number of 0 to 10^9 */
		unsigned long long n = strtoull(v, &end, 10);

		if (!*end)
			recorded_first = n;
	}
	/* Once: syscope attach starts the tracer again at each attach of the process. */
	if (!atomic_flag_test_and_set(&atfork_registered))
		pthread_atfork(NULL, NULL, counts_fork_child);
}
