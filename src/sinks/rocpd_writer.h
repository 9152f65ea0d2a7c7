/* SPDX-License-Identifier: MIT */
/*
 * Inside the rocpd writer: the state of one database being written and the helpers its
 * parts share (rocpd.c: process, threads, regions, samples, counters; rocpd_gpu.c: agents,
 * streams, kernels, copies, allocations).
 */
#ifndef SYSCOPE_SINKS_ROCPD_WRITER_H
#define SYSCOPE_SINKS_ROCPD_WRITER_H

#include <sqlite3.h>
#include <stdint.h>

#include "../model/timeline.h"
#include "../store/rocpd.h"
#include "sink.h"

/* Prepared inserts, for the tables that get a row per event. */
enum {
	INS_STRING,
	INS_EVENT,
	INS_ARG,
	INS_REGION,
	INS_TRACK,
	INS_SAMPLE,
	INS_PMC_EVENT,
	INS_DISPATCH,
	INS_COPY,
	INS_ALLOC,
	INS_COUNT
};

/* Per-thread state of the sample-frames-as-regions view. */
struct frame_run {
	int32_t tid;
	unsigned kind;
	int64_t track;
	uint64_t first_ts, last_ts, last_weight_ns;
	VEC(uint32_t) funcs;  /* the frames open now, outermost first */
	VEC(uint64_t) starts; /* when each opened */
};

/*
 * Rows of one insert, gathered RP_BATCH at a time into one multi-row INSERT: the tables are
 * AUTOINCREMENT (as the schema says), whose bookkeeping costs a write per statement, so a
 * statement per row would halve the speed. Text is copied, so callers may pass buffers.
 */
#define RP_BATCH 64

struct rp_value {
	char type; /* 'i', 'd', 't' or 'n' */
	int64_t i;
	double d;
	size_t text; /* offset in rp_batch.text */
};

struct rp_batch {
	sqlite3_stmt *multi; /* RP_BATCH rows */
	sqlite3_stmt *one;   /* one row, for what is left at the end */
	unsigned rows;
	VEC(struct rp_value) values;
	VEC(char) text;
};

/* A recently seen string (rocpd.c: rp_string_of, shared_event). */
#define RP_RECENT 64
struct rp_recent {
	const char *ptr;      /* as the caller passed it */
	const char *interned; /* its text, interned */
	int64_t string_id;    /* its rocpd_string id, 0 until asked */
	int64_t event_id;     /* the shared event of it as a category, 0 until asked */
};

struct rp {
	struct sc_output *out;
	struct sc_process *proc;
	sqlite3 *db;
	struct rp_batch ins[INS_COUNT];
	char guid[40], uuid[48];
	int64_t nid;
	int64_t next_string, next_event, next_track, next_pmc;
	struct sc_hashmap strings;    /* interned pointer -> string id */
	struct sc_hashmap tracks;     /* hash of (kind, tid, name) -> track id */
	struct sc_hashmap counters;   /* interned counter name ^ unit -> track id << 32 | pmc id */
	struct sc_hashmap stack_json; /* stack index + 1 -> index in json */
	VEC(char *) json;	      /* call_stack and line_info JSON pairs of stacks */
	VEC(struct frame_run *) runs;
	struct sc_hashmap run_index;	 /* (tid, kind) -> index in runs + 1 */
	struct sc_hashmap shared_events; /* interned category -> its shared event */
	struct sc_hashmap stack_events;	 /* stack index + 1 -> its event */
	/* GPU rows (rocpd_gpu.c) */
	struct sc_hashmap gpu_ids; /* agent, stream or kernel name -> row id */
	int64_t next_stream, next_symbol, next_dispatch, code_object;
	struct rp_recent recent[RP_RECENT];
	struct rp_queue *queue; /* SQLite's thread (rocpd_queue.c), or NULL: SQLite runs here */
	uint64_t rows;
	_Atomic int error; /* set by whichever thread runs SQLite; errmsg read after it ends */
	char errmsg[512];
};

/* Run SQL (on SQLite's thread, in order, when there is one); the first failure is kept in
 * rp->errmsg and later calls do nothing. */
void rp_exec(struct rp *rp, const char *sql);
void rp_exec_now(struct rp *rp, const char *sql); /* here, now */
/* Insert `rows` gathered rows of insert `which` now (`text`: what their 't' values point
 * into). */
void rp_insert_rows(struct rp *rp, int which, const struct rp_value *values, size_t nvalues,
		    const char *text, unsigned rows);
/* A row for insert `which`; `types` gives the arguments: 'i' int64, 'd' double, 't' text (rp->guid bound, not copied),
 * 'n' NULL. Written with the next batch of its table, or by rp_flush. */
void rp_run(struct rp *rp, int which, const char *types, ...);
/* Write every row still gathered. */
void rp_flush(struct rp *rp);
/* The rocpd_string id of an interned string, or of any string. */
int64_t rp_string_id(struct rp *rp, const char *interned);
int64_t rp_string_of(struct rp *rp, const char *s);
/* A new rocpd_event row; returns its id. */
int64_t rp_event(struct rp *rp, const char *category, int64_t stack_id, const char *call_stack,
		 const char *line_info, const char *extdata);

/* rocpd_queue.c: SQLite on a thread of its own, fed in order, while the records are read.
 * Start returns false (and SQLite stays on the caller's thread) when no thread can be made;
 * finish runs what is queued and ends the thread. */
bool rp_queue_start(struct rp *rp);
void rp_queue_finish(struct rp *rp);
void rp_queue_rows(struct rp *rp, int which); /* takes the batch's rows, leaves it empty */
void rp_queue_sql(struct rp *rp, const char *sql);

/* rocpd_gpu.c */
void rp_gpu_describe(struct rp *rp); /* agents and streams of every image of the process */
void rp_gpu_op(void *ctx, struct sc_image *img, struct sc_thread *t, const struct sc_gpu_op_ev *op);

#endif /* SYSCOPE_SINKS_ROCPD_WRITER_H */
