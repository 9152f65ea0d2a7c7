/* SPDX-License-Identifier: MIT */
/*
 * NCCL events into regions (see nccl_events.h). Events live in one table of slots taken in
 * turn (one atomic add, then a claim), never freed to the system: NCCL hands back parents
 * that have already stopped (a collective's kernel channels report long after the
 * collective's host part stopped), and reading such a slot's id is then still safe; slots
 * are reused only after the whole table went round.
 */
#include "nccl_events.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../runtime/plugin.h"
#include "nccl_abi.h"

#define NSLOTS 16384u
#define CLAIM_TRIES 64u

/* What SYSCOPE_NCCL_EVENTS asks for, as NCCL_EV_* bits. */
static const struct {
	const char *token;
	int bits;
} event_tokens[] = {
	{ "api", NCCL_EV_GROUP_API | NCCL_EV_COLL_API | NCCL_EV_P2P_API },
	{ "tasks", NCCL_EV_GROUP | NCCL_EV_COLL | NCCL_EV_P2P },
	{ "launch", NCCL_EV_KERNEL_LAUNCH },
	{ "kernel", NCCL_EV_KERNEL_CH },
	{ "proxy", NCCL_EV_PROXY_OP },
	{ "steps", NCCL_EV_PROXY_STEP },
};

static const struct sc_plugin_api *api;
static int wanted; /* NCCL_EV_* bits to record */
static struct nccl_event *slots;
static atomic_uint next_slot;
static atomic_uint_fast64_t next_id = 1;
static atomic_uint_fast64_t lost, recorded;
static _Thread_local int32_t my_tid;

static int32_t this_tid(void)
{
	if (!my_tid)
		my_tid = (int32_t)syscall(SYS_gettid);
	return my_tid;
}

static int parse_events(const char *list)
{
	char buf[256], *save = NULL;
	int bits = 0;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *w = strtok_r(buf, " ,", &save); w; w = strtok_r(NULL, " ,", &save)) {
		if (!strcmp(w, "all"))
			return ~0;
		for (size_t i = 0; i < sizeof(event_tokens) / sizeof(event_tokens[0]); i++)
			if (!strcmp(w, event_tokens[i].token))
				bits |= event_tokens[i].bits;
	}
	return bits;
}

static void report(void)
{
	char text[200];
	uint64_t n = atomic_load(&lost);

	if (n) {
		snprintf(text, sizeof(text),
			 "NCCL: %llu events not recorded: more than %u were in flight at once",
			 (unsigned long long)n, NSLOTS);
		api->note(SC_NOTE_WARN, text);
	}
}

static bool setup_ok;

static void setup_once(void)
{
	sc_plugin_api_fn fn = (sc_plugin_api_fn)dlsym(RTLD_DEFAULT, SC_PLUGIN_API_SYMBOL);
	const char *list;

	api = fn ? fn(SC_PLUGIN_ABI) : NULL;
	if (!api || api->size < sizeof(*api) || !api->active())
		return;
	list = getenv("SYSCOPE_NCCL_EVENTS");
	wanted = parse_events(list && *list ? list : "api tasks launch kernel proxy");
	slots = calloc(NSLOTS, sizeof(*slots));
	if (!slots) {
		api->note(SC_NOTE_WARN, "NCCL: no memory for the event table; NCCL not traced");
		return;
	}
	api->at_stop(report);
	setup_ok = true;
}

bool nccl_events_setup(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, setup_once);
	return setup_ok;
}

int nccl_events_mask(int version)
{
	int mask = wanted;

	if (version < 5) {
		/* No API events before v5: the launched tasks stand for the calls. */
		if (mask & (NCCL_EV_COLL_API | NCCL_EV_P2P_API | NCCL_EV_GROUP_API))
			mask |= NCCL_EV_GROUP | NCCL_EV_COLL | NCCL_EV_P2P;
		mask &= ~(NCCL_EV_GROUP_API | NCCL_EV_COLL_API | NCCL_EV_P2P_API |
			  NCCL_EV_KERNEL_LAUNCH);
	}
	if (version < 4)
		mask &= ~NCCL_EV_KERNEL_CH; /* no GPU timer stamps yet */
	return mask;
}

struct nccl_comm *nccl_comm_new(uint64_t hash, const char *name, int nnodes, int nranks, int rank)
{
	struct nccl_comm *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->hash = hash;
	c->nnodes = nnodes;
	c->nranks = nranks;
	c->rank = rank;
	snprintf(c->name, sizeof(c->name), "%s", name ? name : "");
	return c;
}

static bool ours(const void *p)
{
	return slots && p >= (const void *)slots && p < (const void *)(slots + NSLOTS);
}

static struct nccl_event *claim(void)
{
	for (unsigned i = 0; i < CLAIM_TRIES; i++) {
		struct nccl_event *e = &slots[atomic_fetch_add(&next_slot, 1) % NSLOTS];
		int free_ = 0;

		if (atomic_compare_exchange_strong(&e->busy, &free_, 1))
			return e;
	}
	return NULL;
}

struct nccl_event *nccl_event_start(uint32_t type, const struct nccl_comm *comm, void *parent)
{
	struct nccl_event *e;

	if (!slots || !api->active())
		return NULL;
	e = claim();
	if (!e) {
		atomic_fetch_add(&lost, 1);
		return NULL;
	}
	memset((char *)e + sizeof(e->busy), 0, sizeof(*e) - sizeof(e->busy));
	e->type = type;
	e->id = atomic_fetch_add(&next_id, 1);
	e->parent_id = ours(parent) ? ((const struct nccl_event *)parent)->id : 0;
	e->comm = comm;
	e->tid = this_tid();
	e->start = api->now_ns();
	e->root = -1;
	return e;
}

void nccl_event_state(struct nccl_event *e, int state, const void *args)
{
	const union nccl_state_args *a = args;

	if (!ours(e))
		return;
	switch (state) {
	case NCCL_STATE_KERNEL_CH_STOP:
		if (a)
			e->gpu_stop = a->kernel_ch.gpu_stop;
		break;
	case NCCL_STATE_PROXY_OP_IN_PROGRESS:
		if (!e->in_progress)
			e->in_progress = api->now_ns();
		break;
	case NCCL_STATE_PROXY_STEP_SEND_WAIT:
	case NCCL_STATE_PROXY_STEP_RECV_WAIT:
	case NCCL_STATE_PROXY_STEP_RECV_FLUSH_WAIT:
	case NCCL_STATE_PROXY_STEP_RECV_GPU_WAIT:
	case NCCL_STATE_PROXY_STEP_SEND_GPU_WAIT:
	case NCCL_STATE_PROXY_STEP_SEND_PEER_WAIT:
		if (a && a->proxy_step.trans_size)
			e->trans_size = a->proxy_step.trans_size;
		break;
	default:
		break;
	}
}

/* ---- one region per event ---- */

struct text {
	char buf[1024];
	uint32_t len;
	uint32_t nargs;
};

static void put(struct text *t, const char *s)
{
	size_t n = strlen(s) + 1;

	if (t->len + n > sizeof(t->buf))
		return;
	memcpy(t->buf + t->len, s, n);
	t->len += (uint32_t)n;
}

__attribute__((format(printf, 4, 5))) static void arg(struct text *t, char type, const char *name,
						      const char *fmt, ...)
{
	char type_text[2] = { type, 0 }, value[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	if (t->len + strlen(name) + strlen(value) + 4 > sizeof(t->buf))
		return;
	put(t, type_text);
	put(t, name);
	put(t, value);
	t->nargs++;
}

static bool rooted(const char *func)
{
	return func && (!strcmp(func, "Broadcast") || !strcmp(func, "Reduce") ||
			!strcmp(func, "Gather") || !strcmp(func, "Scatter"));
}

static bool p2p_func(const char *func)
{
	return func && (!strcmp(func, "Send") || !strcmp(func, "Recv"));
}

static void data_args(struct text *t, const struct nccl_event *e)
{
	unsigned size = nccl_type_size(e->datatype);

	arg(t, SC_ARG_STRING, "kind", "%s", e->func ? e->func : "Unknown");
	arg(t, SC_ARG_UINT, "count", "%zu", e->count);
	if (size)
		arg(t, SC_ARG_UINT, "bytes", "%llu",
		    (unsigned long long)e->count * (unsigned long long)size);
	arg(t, SC_ARG_STRING, "datatype", "%s", e->datatype ? e->datatype : "Unknown");
	if (p2p_func(e->func) && e->root >= 0)
		arg(t, SC_ARG_INT, "peer", "%d", e->root);
	else if (rooted(e->func))
		arg(t, SC_ARG_INT, "root", "%d", e->root);
}

static void comm_args(struct text *t, const struct nccl_event *e)
{
	uint64_t hash = e->comm_hash ? e->comm_hash : e->comm ? e->comm->hash : 0;

	arg(t, SC_ARG_STRING, "comm", "0x%016llx", (unsigned long long)hash);
	if (e->comm && e->comm->nranks > 0) {
		arg(t, SC_ARG_INT, "rank", "%d", e->comm->rank);
		arg(t, SC_ARG_INT, "nranks", "%d", e->comm->nranks);
	}
	if (e->comm && e->comm->name[0])
		arg(t, SC_ARG_STRING, "comm_name", "%s", e->comm->name);
}

static const char *region_name(const struct nccl_event *e, char *buf, size_t cap)
{
	switch (e->type) {
	case NCCL_EV_GROUP_API:
		return "ncclGroup";
	case NCCL_EV_COLL_API:
	case NCCL_EV_P2P_API:
		snprintf(buf, cap, "nccl%s", e->func ? e->func : "Unknown");
		return buf;
	case NCCL_EV_KERNEL_LAUNCH:
		return "ncclKernelLaunch";
	case NCCL_EV_GROUP:
		return "Group";
	case NCCL_EV_COLL:
	case NCCL_EV_P2P:
		return e->func ? e->func : "Unknown";
	case NCCL_EV_PROXY_OP:
		return e->is_send ? "ProxyOp Send" : "ProxyOp Recv";
	case NCCL_EV_PROXY_STEP:
		return "ProxyStep";
	case NCCL_EV_KERNEL_CH:
		return "KernelCh";
	default:
		return "NCCL event";
	}
}

static const char *category(uint32_t type)
{
	if (type & (NCCL_EV_GROUP_API | NCCL_EV_COLL_API | NCCL_EV_P2P_API))
		return "nccl";
	if (type & (NCCL_EV_PROXY_OP | NCCL_EV_PROXY_STEP | NCCL_EV_PROXY_CTRL))
		return "nccl_proxy";
	if (type == NCCL_EV_KERNEL_CH)
		return "nccl_kernel";
	return "nccl_task";
}

static void type_args(struct text *t, const struct nccl_event *e)
{
	switch (e->type) {
	case NCCL_EV_GROUP_API:
		arg(t, SC_ARG_INT, "depth", "%d", e->group_depth);
		break;
	case NCCL_EV_COLL_API:
	case NCCL_EV_P2P_API:
		data_args(t, e);
		comm_args(t, e);
		arg(t, SC_ARG_POINTER, "stream", "0x%llx",
		    (unsigned long long)(uintptr_t)e->stream);
		break;
	case NCCL_EV_KERNEL_LAUNCH:
		arg(t, SC_ARG_POINTER, "stream", "0x%llx",
		    (unsigned long long)(uintptr_t)e->stream);
		break;
	case NCCL_EV_COLL:
		data_args(t, e);
		arg(t, SC_ARG_UINT, "seq", "%llu", (unsigned long long)e->seq);
		arg(t, SC_ARG_STRING, "algorithm", "%s", e->algo ? e->algo : "Unknown");
		arg(t, SC_ARG_STRING, "protocol", "%s", e->proto ? e->proto : "Unknown");
		arg(t, SC_ARG_INT, "channels", "%d", e->nchannels);
		arg(t, SC_ARG_INT, "warps", "%d", e->nwarps);
		comm_args(t, e);
		break;
	case NCCL_EV_P2P:
		data_args(t, e);
		arg(t, SC_ARG_INT, "channels", "%d", e->nchannels);
		comm_args(t, e);
		break;
	case NCCL_EV_PROXY_OP:
		arg(t, SC_ARG_INT, "channel", "%d", e->channel);
		arg(t, SC_ARG_INT, "peer", "%d", e->peer);
		arg(t, SC_ARG_INT, "steps", "%d", e->nsteps);
		arg(t, SC_ARG_INT, "chunk_size", "%d", e->chunk_size);
		if (e->in_progress)
			arg(t, SC_ARG_UINT, "waited_ns", "%llu",
			    (unsigned long long)(e->in_progress - e->start));
		break;
	case NCCL_EV_PROXY_STEP:
		arg(t, SC_ARG_INT, "step", "%d", e->step);
		arg(t, SC_ARG_UINT, "bytes", "%zu", e->trans_size);
		break;
	case NCCL_EV_KERNEL_CH:
		arg(t, SC_ARG_INT, "channel", "%d", e->channel);
		if (e->gpu_start && e->gpu_stop >= e->gpu_start) {
			arg(t, SC_ARG_UINT, "gpu_start", "%llu", (unsigned long long)e->gpu_start);
			arg(t, SC_ARG_UINT, "gpu_ns", "%llu",
			    (unsigned long long)(e->gpu_stop - e->gpu_start));
		}
		break;
	default:
		break;
	}
	if (e->graph_captured)
		arg(t, SC_ARG_UINT, "graph_captured", "1");
	arg(t, SC_ARG_UINT, "id", "%llu", (unsigned long long)e->id);
	arg(t, SC_ARG_UINT, "parent", "%llu", (unsigned long long)e->parent_id);
}

/* A group the user did not open (NCCL wraps each lone call in one of depth 1) says nothing
 * the call's own region does not. */
static bool worth_a_region(const struct nccl_event *e)
{
	if (!(e->type & wanted))
		return false;
	return e->type != NCCL_EV_GROUP_API || e->group_depth > 1;
}

static void write_region(const struct nccl_event *e, uint64_t end)
{
	struct sc_rec_region_span sp = { .r = { .ts = e->start }, .end = end, .tid = e->tid };
	struct text t = { .len = 0 };
	char name[64];

	put(&t, region_name(e, name, sizeof(name)));
	sp.r.name_len = t.len;
	put(&t, category(e->type));
	sp.r.cat_len = t.len - sp.r.name_len;
	type_args(&t, e);
	sp.r.args_len = t.len - sp.r.name_len - sp.r.cat_len;
	sp.r.nargs = t.nargs;
	api->record(SC_REC_REGION_SPAN, 0, &sp.r.ts, sizeof(sp) - sizeof(sp.r.hdr), t.buf, t.len);
	atomic_fetch_add(&recorded, 1);
}

void nccl_event_stop(struct nccl_event *e)
{
	if (!ours(e))
		return;
	if (worth_a_region(e) && api->active())
		write_region(e, api->now_ns());
	atomic_store(&e->busy, 0);
}

void nccl_call_region(const struct nccl_call *c, uint64_t start, uint64_t end)
{
	struct nccl_event e = { .type = NCCL_EV_COLL_API, .tid = this_tid(), .start = start };
	struct sc_rec_region_span sp = { .r = { .ts = start }, .end = end, .tid = e.tid };
	struct text t = { .len = 0 };
	char name[64];

	if (!slots || !(wanted & NCCL_EV_COLL_API) || !api->active())
		return;
	e.func = c->func;
	e.count = c->count;
	e.datatype = c->datatype;
	e.root = c->root;
	put(&t, region_name(&e, name, sizeof(name)));
	sp.r.name_len = t.len;
	put(&t, "nccl");
	sp.r.cat_len = t.len - sp.r.name_len;
	data_args(&t, &e);
	if (c->op)
		arg(&t, SC_ARG_STRING, "op", "%s", c->op);
	arg(&t, SC_ARG_POINTER, "comm_handle", "0x%llx", (unsigned long long)(uintptr_t)c->comm);
	if (c->nranks > 0) {
		arg(&t, SC_ARG_INT, "rank", "%d", c->rank);
		arg(&t, SC_ARG_INT, "nranks", "%d", c->nranks);
	}
	arg(&t, SC_ARG_POINTER, "stream", "0x%llx", (unsigned long long)(uintptr_t)c->stream);
	arg(&t, SC_ARG_INT, "result", "%d", c->result);
	sp.r.args_len = t.len - sp.r.name_len - sp.r.cat_len;
	sp.r.nargs = t.nargs;
	api->record(SC_REC_REGION_SPAN, 0, &sp.r.ts, sizeof(sp) - sizeof(sp.r.hdr), t.buf, t.len);
}

void nccl_missing(const char *name)
{
	static atomic_int said;
	char text[200];

	if (!api || atomic_exchange(&said, 1))
		return;
	snprintf(text, sizeof(text),
		 "NCCL: the program called %s, but no loaded NCCL library defines it; the call "
		 "returned ncclInternalError",
		 name);
	api->note(SC_NOTE_WARN, text);
}

uint64_t nccl_now(void)
{
	return api ? api->now_ns() : 0;
}

unsigned nccl_type_size(const char *datatype)
{
	static const struct {
		const char *name;
		unsigned size;
	} sizes[] = {
		{ "ncclInt8", 1 },     { "ncclUint8", 1 },	{ "ncclInt32", 4 },
		{ "ncclUint32", 4 },   { "ncclInt64", 8 },	{ "ncclUint64", 8 },
		{ "ncclFloat16", 2 },  { "ncclFloat32", 4 },	{ "ncclFloat64", 8 },
		{ "ncclBfloat16", 2 }, { "ncclFloat8e4m3", 1 }, { "ncclFloat8e5m2", 1 },
	};

	for (size_t i = 0; datatype && i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (!strcmp(datatype, sizes[i].name))
			return sizes[i].size;
	return 0;
}
