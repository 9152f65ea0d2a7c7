/* SPDX-License-Identifier: MIT */
/*
 * Why was the GPU idle (issue 24): for each GPU of each process image, the union of its
 * kernels, copies, sets and graphs over all streams (overlapping streams counted once), the
 * busy fraction of the span from its first op's start to its last op's end, and the idle
 * intervals between. Each interval longer than a threshold is explained by what held the
 * next op back: the host call that launched it (correlation id) and what the launching
 * thread did from the end of the previous op to that call: its regions (synchronization
 * APIs, MPI calls, NCCL regions) where it was in one, else its samples (GIL waits, data
 * loaders, I/O, blocking waits, host compute). Shorter intervals are counted, not explained.
 */
#ifndef SYSCOPE_MODEL_GPU_IDLE_H
#define SYSCOPE_MODEL_GPU_IDLE_H

#include "profile.h"
#include "spill_table.h"

/* Idle intervals shorter than this (launch latency) are counted, not explained, unless the
 * user says otherwise (`summary --idle-threshold`). */
#define SC_IDLE_THRESHOLD_NS 10000

enum sc_idle_cause {
	SC_IDLE_GIL,	 /* the launching thread waited for the GIL */
	SC_IDLE_LOADER,	 /* in a data loader or a queue get */
	SC_IDLE_MPI,	 /* in an MPI call */
	SC_IDLE_NCCL,	 /* in an NCCL region */
	SC_IDLE_SYNC,	 /* in a CUDA synchronization, or launching after one drained the queue */
	SC_IDLE_COMPUTE, /* host compute */
	SC_IDLE_IO,	 /* in an I/O system call */
	SC_IDLE_NOT_RUNNING, /* blocked or off-CPU */
	SC_IDLE_LAUNCH,	     /* inside the launch call itself (launch latency) */
	SC_IDLE_UNSAMPLED,   /* no sample of the launching thread tells */
	SC_IDLE_NO_LAUNCH,   /* the next op's launching call or thread is unknown */
	SC_IDLE_CAUSES
};

/* "gil_wait", "data_loader", ...: the cause's key in JSON and trace slices. */
const char *sc_idle_cause_key(unsigned cause);
/* "launching thread waited for the GIL", ...: its words in text. */
const char *sc_idle_cause_text(unsigned cause);

/* A name and the idle time it explains (a region, a function, a peer rank, a thread). */
struct sc_idle_named {
	const char *name;
	uint64_t ns;
};

struct sc_idle_stack {
	uint32_t stack; /* index in the model's stacks */
	uint64_t samples;
};

struct sc_idle_cause_stat {
	double ns;			   /* idle time explained (fractions of intervals add up) */
	uint64_t intervals;		   /* intervals this was the main cause of */
	VEC(struct sc_idle_named) names;   /* regions or functions, by time */
	VEC(struct sc_idle_named) peers;   /* "rank 3": who the MPI/NCCL call waited for */
	VEC(struct sc_idle_named) holders; /* GIL: the threads holding it meanwhile */
	VEC(struct sc_idle_stack) stacks;  /* the launching thread's samples, by count */
};

/* One idle interval longer than the threshold, with its main cause. */
struct sc_idle_gap {
	uint64_t start, end;
	uint8_t cause;
	int32_t tid;	     /* the launching thread, 0 if unknown */
	uint64_t corr;	     /* the next op's correlation id */
	uint64_t call_start; /* its launching call's start, 0 if unknown */
};

struct sc_idle_gpu {
	struct sc_image *img;
	uint32_t agent;
	const char *name; /* the agent's, or NULL */
	int rank;	  /* MPI rank of its process, or -1 */
	uint64_t first, last, busy_ns, idle_ns;
	uint64_t ops, intervals, short_intervals, short_ns;
	struct sc_idle_cause_stat causes[SC_IDLE_CAUSES];
	/* struct sc_idle_gap, in time order: spilled to disk past a bound, as there can be one
	 * per op (a read moves the table's cache, hence a pointer in a report read as const) */
	struct sc_spill_table *gaps;
};

struct sc_idle_report {
	uint64_t threshold_ns;
	VEC(struct sc_idle_gpu) gpus;
};

/* Analyse every image of the profiles' model (replaying its records once). */
void sc_idle_analyze(struct sc_idle_report *r, struct sc_profile_set *set, uint64_t threshold_ns);
void sc_idle_free(struct sc_idle_report *r);
/* Whether any image recorded GPU work (kernels, copies, sets, graphs): else there is no
 * need to analyse. */
bool sc_idle_has_work(const struct sc_model *m);
/* The causes of a GPU by time explained, largest first; returns how many explain any. */
unsigned sc_idle_ranked(const struct sc_idle_gpu *g, unsigned order[SC_IDLE_CAUSES]);

#endif /* SYSCOPE_MODEL_GPU_IDLE_H */
