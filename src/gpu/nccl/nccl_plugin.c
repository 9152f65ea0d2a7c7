/* SPDX-License-Identifier: MIT */
/*
 * libsyscope-nccl.so: NCCL's profiler plugin. NCCL dlopens the library NCCL_PROFILER_PLUGIN
 * names (the launcher sets it with --parallel=nccl) and looks up ncclProfiler_v5, _v4, _v3
 * in that order; each table here turns its version's descriptors into the one event form of
 * nccl_events.h, which records them through libsyscope.so's plugin table. Without a
 * recording syscope runtime in the process every init asks NCCL for no events at all.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "../../runtime/plugin.h"
#include "nccl_abi.h"
#include "nccl_events.h"

#define EXPORT __attribute__((visibility("default")))

static const char plugin_name[] = "syscope";
_Atomic int nccl_profiler_seen;
static struct nccl_comm unknown_comm; /* v3 tells no communicator at init */

static void announce(int version, int mask)
{
	static atomic_int done;
	const struct sc_plugin_api *api;
	sc_plugin_api_fn fn;
	char text[160];

	if (atomic_exchange(&done, 1))
		return;
	fn = (sc_plugin_api_fn)dlsym(RTLD_DEFAULT, SC_PLUGIN_API_SYMBOL);
	api = fn ? fn(SC_PLUGIN_ABI) : NULL;
	if (!api)
		return;
	snprintf(text, sizeof(text),
		 "NCCL: traced through profiler interface v%d (event mask 0x%x)%s", version, mask,
		 version < 5 ? "; calls appear as the tasks NCCL launched (no API events before v5)"
			     : "");
	api->note(SC_NOTE_INFO, text);
}

static nccl_result_t init_common(void **ctx, int *mask, int version, uint64_t hash,
				 const char *name, int nnodes, int nranks, int rank)
{
	*ctx = NULL;
	*mask = 0;
	if (!nccl_events_setup())
		return 0;
	*ctx = version >= 4 ? nccl_comm_new(hash, name, nnodes, nranks, rank) : &unknown_comm;
	if (*ctx)
		*mask = nccl_events_mask(version);
	atomic_store(&nccl_profiler_seen, 1);
	announce(version, *mask);
	return 0;
}

static nccl_result_t stop_event(void *handle)
{
	if (handle)
		nccl_event_stop(handle);
	return 0;
}

static nccl_result_t record_state(void *handle, int state, union nccl_state_args *args)
{
	if (handle)
		nccl_event_state(handle, state, args);
	return 0;
}

/* Communicators stay: a finalized one's last events may still stop. */
static nccl_result_t finalize(void *ctx)
{
	(void)ctx;
	return 0;
}

/* The proxy and kernel-channel parts, alike in every version. */
static void proxy_op(struct nccl_event *e, const struct nccl_proxy_op_descr *p)
{
	e->channel = p->channel;
	e->peer = p->peer;
	e->nsteps = p->nsteps;
	e->chunk_size = p->chunk_size;
	e->is_send = p->is_send != 0;
}

/*
 * The task, proxy and kernel-channel parts of a descriptor. v5's and v4's have the same
 * members under the same names (v5 adds parent_group, which moves nothing syscope reads
 * but makes them different types), so one body serves both; v3's differ.
 */
#define FILL_TASKS(name, descr)                                \
	static void name(struct nccl_event *e, const descr *d) \
	{                                                      \
		switch (e->type) {                             \
		case NCCL_EV_COLL:                             \
			e->seq = d->coll.seq;                  \
			e->func = d->coll.func;                \
			e->count = d->coll.count;              \
			e->root = d->coll.root;                \
			e->datatype = d->coll.datatype;        \
			e->nchannels = d->coll.nchannels;      \
			e->nwarps = d->coll.nwarps;            \
			e->algo = d->coll.algo;                \
			e->proto = d->coll.proto;              \
			break;                                 \
		case NCCL_EV_P2P:                              \
			e->func = d->p2p.func;                 \
			e->datatype = d->p2p.datatype;         \
			e->count = d->p2p.count;               \
			e->root = d->p2p.peer;                 \
			e->nchannels = d->p2p.nchannels;       \
			break;                                 \
		case NCCL_EV_PROXY_OP:                         \
			proxy_op(e, &d->proxy_op);             \
			break;                                 \
		case NCCL_EV_PROXY_STEP:                       \
			e->step = d->proxy_step.step;          \
			break;                                 \
		case NCCL_EV_KERNEL_CH:                        \
			e->channel = d->kernel_ch.channel;     \
			e->gpu_start = d->kernel_ch.gpu_start; \
			break;                                 \
		default:                                       \
			break;                                 \
		}                                              \
	}

/* A followed event of one type (a single bit of `followed`) started; NULL for the rest. */
static struct nccl_event *start_followed(void *ctx, uint64_t type, uint64_t followed, void *parent)
{
	if (!ctx || !(type & followed) || (type & (type - 1)))
		return NULL;
	return nccl_event_start((uint32_t)type, ctx, parent);
}

/* ---- v5 ---- */

FILL_TASKS(fill_tasks_v5, struct nccl_descr_v5)

static nccl_result_t init_v5(void **ctx, uint64_t hash, int *mask, const char *name, int nnodes,
			     int nranks, int rank, nccl_logger_t log)
{
	(void)log;
	return init_common(ctx, mask, 5, hash, name, nnodes, nranks, rank);
}

static void fill_v5(struct nccl_event *e, const struct nccl_descr_v5 *d)
{
	switch (e->type) {
	case NCCL_EV_GROUP_API:
		e->group_depth = d->group_api.depth;
		e->graph_captured = d->group_api.graph_captured;
		break;
	case NCCL_EV_COLL_API:
		e->func = d->coll_api.func;
		e->count = d->coll_api.count;
		e->datatype = d->coll_api.datatype;
		e->root = d->coll_api.root;
		e->stream = d->coll_api.stream;
		e->graph_captured = d->coll_api.graph_captured;
		break;
	case NCCL_EV_P2P_API:
		e->func = d->p2p_api.func;
		e->count = d->p2p_api.count;
		e->datatype = d->p2p_api.datatype;
		e->stream = d->p2p_api.stream;
		e->graph_captured = d->p2p_api.graph_captured;
		break;
	case NCCL_EV_KERNEL_LAUNCH:
		e->stream = d->kernel_launch.stream;
		break;
	default:
		fill_tasks_v5(e, d);
		break;
	}
}

/* The event types this plugin follows (the rest get no handle). */
#define FOLLOWED                                                                              \
	(NCCL_EV_GROUP_API | NCCL_EV_COLL_API | NCCL_EV_P2P_API | NCCL_EV_KERNEL_LAUNCH |     \
	 NCCL_EV_GROUP | NCCL_EV_COLL | NCCL_EV_P2P | NCCL_EV_PROXY_OP | NCCL_EV_PROXY_STEP | \
	 NCCL_EV_KERNEL_CH)

static nccl_result_t start_v5(void *ctx, void **handle, struct nccl_descr_v5 *d)
{
	struct nccl_event *e = d ? start_followed(ctx, d->type, FOLLOWED, d->parent) : NULL;

	if (e)
		fill_v5(e, d);
	*handle = e;
	return 0;
}

EXPORT const struct nccl_profiler_v5 ncclProfiler_v5 = {
	.name = plugin_name,
	.init = init_v5,
	.start_event = start_v5,
	.stop_event = stop_event,
	.record_state = record_state,
	.finalize = finalize,
};

/* ---- v4 ---- */

static nccl_result_t init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes,
			     int nranks, int rank, nccl_logger_t log)
{
	(void)log;
	return init_common(ctx, mask, 4, hash, name, nnodes, nranks, rank);
}

FILL_TASKS(fill_v4, struct nccl_descr_v4)

#define FOLLOWED_V3_V4                                                                        \
	(NCCL_EV_GROUP | NCCL_EV_COLL | NCCL_EV_P2P | NCCL_EV_PROXY_OP | NCCL_EV_PROXY_STEP | \
	 NCCL_EV_KERNEL_CH)

static nccl_result_t start_v4(void *ctx, void **handle, struct nccl_descr_v4 *d)
{
	struct nccl_event *e = d ? start_followed(ctx, d->type, FOLLOWED_V3_V4, d->parent) : NULL;

	if (e)
		fill_v4(e, d);
	*handle = e;
	return 0;
}

EXPORT const struct nccl_profiler_v4 ncclProfiler_v4 = {
	.name = plugin_name,
	.init = init_v4,
	.start_event = start_v4,
	.stop_event = stop_event,
	.record_state = record_state,
	.finalize = finalize,
};

/* ---- v3 ---- */

static nccl_result_t init_v3(void **ctx, int *mask)
{
	return init_common(ctx, mask, 3, 0, NULL, 0, 0, 0);
}

static void fill_v3(struct nccl_event *e, const struct nccl_descr_v3 *d)
{
	switch (e->type) {
	case NCCL_EV_COLL:
		e->comm_hash = d->coll.comm_hash;
		e->seq = d->coll.seq;
		e->func = d->coll.func;
		e->count = d->coll.count;
		e->root = d->coll.root;
		e->datatype = d->coll.datatype;
		e->nchannels = d->coll.nchannels;
		e->nwarps = d->coll.nwarps;
		e->algo = d->coll.algo;
		e->proto = d->coll.proto;
		break;
	case NCCL_EV_P2P:
		e->comm_hash = d->p2p.comm_hash;
		e->func = d->p2p.func;
		e->datatype = d->p2p.datatype;
		e->count = d->p2p.count;
		e->root = d->p2p.peer;
		break;
	case NCCL_EV_PROXY_OP:
		proxy_op(e, &d->proxy_op);
		break;
	case NCCL_EV_PROXY_STEP:
		e->step = d->proxy_step.step;
		break;
	default:
		break;
	}
}

static nccl_result_t start_v3(void *ctx, void **handle, struct nccl_descr_v3 *d)
{
	struct nccl_event *e = d ? start_followed(ctx, d->type, FOLLOWED_V3_V4, d->parent) : NULL;

	if (e)
		fill_v3(e, d);
	*handle = e;
	return 0;
}

EXPORT const struct nccl_profiler_v3 ncclProfiler_v3 = {
	.name = plugin_name,
	.init = init_v3,
	.start_event = start_v3,
	.stop_event = stop_event,
	.record_state = record_state,
	.finalize = finalize,
};
