/* SPDX-License-Identifier: MIT */
/*
 * NCCL profiler events in one form whatever the interface version (nccl_plugin.c fills
 * them from each version's descriptor): started and stopped by NCCL, each written as one
 * region of the thread that started it when it stops (nccl_events.c).
 *
 * Regions, by event type (name, category):
 *   group call (v5, user's ncclGroupStart..End)  "ncclGroup"       nccl
 *   collective call (v5)                         "ncclAllReduce"   nccl
 *   send / receive call (v5)                     "ncclSend"        nccl
 *   kernel launch (v5)                           "ncclKernelLaunch" nccl_task
 *   group / collective / p2p as launched         "Group", "AllReduce", "Send"  nccl_task
 *   proxy operation, proxy step                  "ProxyOp Send"... nccl_proxy
 *   kernel channel                               "KernelCh"        nccl_kernel
 * Every region has an argument "id" (this event) and "parent" (its parent's id, 0 when none),
 * so the reader can join the levels.
 */
#ifndef SYSCOPE_GPU_NCCL_EVENTS_H
#define SYSCOPE_GPU_NCCL_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One communicator, as init told it. */
struct nccl_comm {
	uint64_t hash;
	int rank, nranks, nnodes;
	char name[64];
};

struct nccl_event {
	_Atomic int busy;
	uint32_t type; /* NCCL_EV_* */
	uint64_t id;
	uint64_t parent_id;
	const struct nccl_comm *comm;
	int32_t tid;
	uint64_t start;
	/* calls and tasks */
	const char *func, *datatype, *algo, *proto;
	size_t count;
	int root; /* root of a collective, peer of a send or receive; -1 for none */
	void *stream;
	uint64_t seq;
	int nchannels, nwarps;
	int group_depth;
	bool graph_captured;
	uint64_t comm_hash; /* v3: the task's own */
	/* proxy operations and steps, kernel channels */
	int channel, peer, nsteps, chunk_size, step;
	bool is_send;
	size_t trans_size;
	uint64_t gpu_start, gpu_stop;
	uint64_t in_progress; /* host time the proxy op began progressing, 0 */
};

/* Read the settings and find the runtime once; false when nothing is recorded in this
 * process (no syscope runtime recording): the plugin then asks NCCL for no events. */
bool nccl_events_setup(void);
/* The activation mask to hand NCCL (NCCL_EV_* bits) for interface `version`. */
int nccl_events_mask(int version);

/* A communicator for init (NULL when out of memory); kept until the process ends, since
 * events of a finalized communicator may still stop. */
struct nccl_comm *nccl_comm_new(uint64_t hash, const char *name, int nnodes, int nranks, int rank);

/* A fresh event of `type` started now on this thread, or NULL when too many are in flight
 * (counted; a note at the end). `parent` is a handle NCCL gave back, or NULL. */
struct nccl_event *nccl_event_start(uint32_t type, const struct nccl_comm *comm, void *parent);
/* A state change (NCCL_STATE_*). */
void nccl_event_state(struct nccl_event *e, int state, const void *args);
/* The event stopped: written as a region when its type is asked for, and freed. */
void nccl_event_stop(struct nccl_event *e);

/* A call seen by the API wrappers (nccl_api.c), where NCCL's profiler reports nothing. */
struct nccl_call {
	const char *func, *datatype, *op; /* "AllReduce", "ncclFloat32", "Sum" (NULL: none) */
	size_t count;
	int root; /* root or peer, -1 */
	void *comm, *stream;
	int rank, nranks; /* nranks 0: unknown */
	int result;
};

/* Write call `c` as a region of this thread (no-op unless set up and API events wanted). */
void nccl_call_region(const struct nccl_call *c, uint64_t start, uint64_t end);
/* Say once that NCCL's own `name` was not found (the wrapper could not call it). */
void nccl_missing(const char *name);
/* The recording clock, 0 before set-up. */
uint64_t nccl_now(void);
/* Whether NCCL's profiler initialized this plugin for some communicator (nccl_plugin.c). */
extern _Atomic int nccl_profiler_seen;

/* Bytes of one element of an NCCL data type by its name ("ncclFloat32"), 0 when unknown. */
unsigned nccl_type_size(const char *datatype);

#endif /* SYSCOPE_GPU_NCCL_EVENTS_H */
