/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for NCCL 2.28 as its profiler plugin sees it: dlopens the library
 * NCCL_PROFILER_PLUGIN names, takes ncclProfiler_v5 (or the version argv[1] names: v4, v3)
 * and makes the calls NCCL makes, in NCCL's order and from NCCL's threads (the proxy
 * thread reports kernel channels and proxy operations), for a known workload:
 *
 *   3 x ncclAllReduce   1 Mi ncclFloat32 (4 MiB), each on two kernel channels whose GPU
 *                       timer spans exactly 1 ms, and one proxy op
 *   2 x ncclBroadcast   64 Ki ncclFloat64 (512 KiB), root 2, no kernel channels
 *   1 user group        ncclSend 1000 ncclInt32 to rank 3, ncclRecv 1000 from rank 0
 *
 * on a communicator of 4 ranks (this is rank 1) with hash 0x1234abcd5678ef00. The layouts
 * are written here from NCCL's headers, independently of the plugin's own.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef enum {
	ncclProfileGroup = 1 << 0,
	ncclProfileColl = 1 << 1,
	ncclProfileP2p = 1 << 2,
	ncclProfileProxyOp = 1 << 3,
	ncclProfileProxyStep = 1 << 4,
	ncclProfileKernelCh = 1 << 6,
	ncclProfileGroupApi = 1 << 8,
	ncclProfileCollApi = 1 << 9,
	ncclProfileP2pApi = 1 << 10,
	ncclProfileKernelLaunch = 1 << 11,
} event_type;

enum {
	ncclProfilerProxyOpInProgress_v4 = 19,
	ncclProfilerKernelChStop = 22,
	ncclProfilerGroupStartApiStop = 23,
	ncclProfilerGroupEndApiStart = 24,
};

struct coll_v4 {
	uint64_t seqNumber;
	const char *func;
	void const *sendBuff;
	void *recvBuff;
	size_t count;
	int root;
	const char *datatype;
	uint8_t nChannels;
	uint8_t nWarps;
	const char *algo;
	const char *proto;
};

struct p2p_v4 {
	const char *func;
	void *buff;
	const char *datatype;
	size_t count;
	int peer;
	uint8_t nChannels;
};

struct proxy_op {
	pid_t pid;
	uint8_t channelId;
	int peer;
	int nSteps;
	int chunkSize;
	int isSend;
};

typedef struct {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			int graphCaptured; /* NCCL 2.28 declares it an int */
			int groupDepth;
		} groupApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			int root;
			void *stream;
			bool graphCaptured;
		} collApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			void *stream;
			bool graphCaptured;
		} p2pApi;
		struct {
			void *stream;
		} kernelLaunch;
		struct {
			struct coll_v4 c;
			void *parentGroup;
		} coll;
		struct {
			struct p2p_v4 p;
			void *parentGroup;
		} p2p;
		struct proxy_op proxyOp;
		struct {
			uint8_t channelId;
			uint64_t pTimer;
		} kernelCh;
	};
} descr_v5;

typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct coll_v4 coll;
		struct p2p_v4 p2p;
		struct proxy_op proxyOp;
		struct {
			uint8_t channelId;
			uint64_t pTimer;
		} kernelCh;
	};
} descr_v4;

typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			const char *func;
			void const *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nMaxChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
		} p2p;
		struct proxy_op proxyOp;
	};
} descr_v3;

typedef union {
	struct {
		size_t transSize;
	} proxyStep;
	struct {
		uint64_t pTimer;
	} kernelCh;
} state_args;

typedef void (*logger_t)(int, unsigned long, const char *, int, const char *, ...);

typedef struct {
	const char *name;
	int (*init)(void **, uint64_t, int *, const char *, int, int, int, logger_t);
	int (*startEvent)(void *, void **, descr_v5 *);
	int (*stopEvent)(void *);
	int (*recordEventState)(void *, int, state_args *);
	int (*finalize)(void *);
} profiler_v5;

typedef struct {
	const char *name;
	int (*init)(void **, int *, const char *, uint64_t, int, int, int, logger_t);
	int (*startEvent)(void *, void **, descr_v4 *);
	int (*stopEvent)(void *);
	int (*recordEventState)(void *, int, state_args *);
	int (*finalize)(void *);
} profiler_v4;

typedef struct {
	const char *name;
	int (*init)(void **, int *);
	int (*startEvent)(void *, void **, descr_v3 *);
	int (*stopEvent)(void *);
	int (*recordEventState)(void *, int, state_args *);
	int (*finalize)(void *);
} profiler_v3;

#define COMM_HASH 0x1234abcd5678ef00ull
#define NRANKS 4
#define RANK 1

static int version = 5;
static const profiler_v5 *p5;
static const profiler_v4 *p4;
static const profiler_v3 *p3;
static void *ctx;
static int mask;
static void *stream = (void *)0x5000;

/* Every version's start, from a v5-shaped descriptor (the fields older ones have). */
static void *start(descr_v5 *d)
{
	void *h = NULL;

	if (!(mask & (int)d->type) && d->type != ncclProfileColl && d->type != ncclProfileP2p &&
	    d->type != ncclProfileGroup)
		return NULL;
	if (version == 5) {
		p5->startEvent(ctx, &h, d);
	} else if (version == 4) {
		descr_v4 o = { .type = (uint8_t)d->type,
			       .parentObj = d->parentObj,
			       .rank = d->rank };

		if (d->type == ncclProfileColl)
			o.coll = d->coll.c;
		else if (d->type == ncclProfileP2p)
			o.p2p = d->p2p.p;
		else if (d->type == ncclProfileProxyOp)
			o.proxyOp = d->proxyOp;
		else if (d->type == ncclProfileKernelCh)
			o.kernelCh.channelId = d->kernelCh.channelId,
			o.kernelCh.pTimer = d->kernelCh.pTimer;
		else if (d->type != ncclProfileGroup)
			return NULL;
		p4->startEvent(ctx, &h, &o);
	} else {
		descr_v3 o = { .type = (uint8_t)d->type,
			       .parentObj = d->parentObj,
			       .rank = d->rank };

		if (d->type == ncclProfileColl) {
			o.coll.name = "fixture";
			o.coll.commHash = COMM_HASH;
			o.coll.seqNumber = d->coll.c.seqNumber;
			o.coll.func = d->coll.c.func;
			o.coll.count = d->coll.c.count;
			o.coll.root = d->coll.c.root;
			o.coll.datatype = d->coll.c.datatype;
			o.coll.nMaxChannels = d->coll.c.nChannels;
			o.coll.nWarps = d->coll.c.nWarps;
			o.coll.algo = d->coll.c.algo;
			o.coll.proto = d->coll.c.proto;
		} else if (d->type == ncclProfileP2p) {
			o.p2p.name = "fixture";
			o.p2p.commHash = COMM_HASH;
			o.p2p.func = d->p2p.p.func;
			o.p2p.datatype = d->p2p.p.datatype;
			o.p2p.count = d->p2p.p.count;
			o.p2p.peer = d->p2p.p.peer;
		} else if (d->type == ncclProfileProxyOp) {
			o.proxyOp = d->proxyOp;
		} else if (d->type != ncclProfileGroup) {
			return NULL;
		}
		p3->startEvent(ctx, &h, &o);
	}
	return h;
}

static void stop(void *h)
{
	if (!h)
		return;
	if (version == 5)
		p5->stopEvent(h);
	else if (version == 4)
		p4->stopEvent(h);
	else
		p3->stopEvent(h);
}

static void state(void *h, int s, state_args *a)
{
	if (!h)
		return;
	if (version == 5)
		p5->recordEventState(h, s, a);
	else if (version == 4)
		p4->recordEventState(h, s, a);
	else
		p3->recordEventState(h, s, a);
}

/* ---- the proxy thread: kernel channels and proxy ops of the launched collectives ---- */

#define MAX_TASKS 16
static void *tasks[MAX_TASKS];
static int ntasks;

static void *proxy_thread(void *unused)
{
	(void)unused;
	for (int i = 0; i < ntasks; i++) {
		uint64_t base = 5000000ull * (uint64_t)(i + 1);
		descr_v5 op = { .type = ncclProfileProxyOp, .parentObj = tasks[i], .rank = RANK };
		void *hop;

		op.proxyOp = (struct proxy_op){ .pid = 0,
						.channelId = 0,
						.peer = 2,
						.nSteps = 8,
						.chunkSize = 524288,
						.isSend = 1 };
		hop = start(&op);
		state(hop, ncclProfilerProxyOpInProgress_v4, &(state_args){ 0 });
		for (int ch = 0; ch < 2; ch++) {
			descr_v5 k = { .type = ncclProfileKernelCh, .parentObj = tasks[i] };
			state_args a = { .kernelCh.pTimer = ch ? base + 900000 : base + 1000000 };
			void *hk;

			k.kernelCh.channelId = (uint8_t)ch;
			k.kernelCh.pTimer = ch ? base + 100 : base;
			hk = start(&k);
			state(hk, ncclProfilerKernelChStop, &a);
			stop(hk);
		}
		stop(hop);
	}
	return NULL;
}

/* ---- the host thread's calls ---- */

static uint64_t seq_allreduce;

/* One collective call as ncclEnqueueCheck makes it outside a group: an implicit group of
 * depth 1 around the call, then the launch at its end. */
static void collective(const char *func, size_t count, const char *type, int root, bool kernels)
{
	descr_v5 g = { .type = ncclProfileGroupApi };
	descr_v5 c = { .type = ncclProfileCollApi };
	descr_v5 grp = { .type = ncclProfileGroup };
	descr_v5 t = { .type = ncclProfileColl, .rank = RANK };
	descr_v5 kl = { .type = ncclProfileKernelLaunch };
	void *hg, *hc, *hgrp, *ht, *hkl;

	g.groupApi.groupDepth = 1;
	hg = start(&g);
	c.parentObj = hg;
	c.collApi.func = func;
	c.collApi.count = count;
	c.collApi.datatype = type;
	c.collApi.root = root;
	c.collApi.stream = stream;
	hc = start(&c);
	stop(hc); /* the call's enqueue is done; the launch follows at the group's end */
	hgrp = start(&grp);
	t.parentObj = hc;
	t.coll.parentGroup = hgrp;
	t.coll.c = (struct coll_v4){ .seqNumber = strcmp(func, "AllReduce") ? 0 : seq_allreduce++,
				     .func = func,
				     .count = count,
				     .root = root,
				     .datatype = type,
				     .nChannels = 2,
				     .nWarps = 16,
				     .algo = "RING",
				     .proto = "LL" };
	ht = start(&t);
	kl.parentObj = hg;
	kl.kernelLaunch.stream = stream;
	hkl = start(&kl);
	stop(hkl);
	stop(ht);
	stop(hgrp);
	stop(hg);
	if (kernels && ht && ntasks < MAX_TASKS)
		tasks[ntasks++] = ht;
}

static void user_group(void)
{
	descr_v5 g = { .type = ncclProfileGroupApi };
	descr_v5 grp = { .type = ncclProfileGroup };
	const char *funcs[2] = { "Send", "Recv" };
	int peers[2] = { 3, 0 };
	void *hg, *api[2], *task[2], *hgrp;

	g.groupApi.groupDepth = 2;
	hg = start(&g);
	state(hg, ncclProfilerGroupStartApiStop, NULL);
	for (int i = 0; i < 2; i++) {
		descr_v5 p = { .type = ncclProfileP2pApi, .parentObj = hg };

		p.p2pApi.func = funcs[i];
		p.p2pApi.count = 1000;
		p.p2pApi.datatype = "ncclInt32";
		p.p2pApi.stream = stream;
		api[i] = start(&p);
		stop(api[i]);
	}
	state(hg, ncclProfilerGroupEndApiStart, NULL);
	hgrp = start(&grp);
	for (int i = 0; i < 2; i++) {
		descr_v5 t = { .type = ncclProfileP2p, .parentObj = api[i], .rank = RANK };

		t.p2p.parentGroup = hgrp;
		t.p2p.p = (struct p2p_v4){ .func = funcs[i],
					   .datatype = "ncclInt32",
					   .count = 1000,
					   .peer = peers[i],
					   .nChannels = 1 };
		task[i] = start(&t);
	}
	for (int i = 0; i < 2; i++)
		stop(task[i]);
	stop(hgrp);
	stop(hg);
}

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	(void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

int main(int argc, char **argv)
{
	const char *path = getenv("NCCL_PROFILER_PLUGIN");
	char symbol[32];
	void *lib, *table;
	pthread_t proxy;
	int rc;

	if (argc > 1 && sscanf(argv[1], "v%d", &version) != 1)
		version = 5;
	if (!path || !*path) {
		fprintf(stderr, "nccl_driver: NCCL_PROFILER_PLUGIN is not set\n");
		return 2;
	}
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	snprintf(symbol, sizeof(symbol), "ncclProfiler_v%d", version);
	table = lib ? dlsym(lib, symbol) : NULL;
	if (!table) {
		fprintf(stderr, "nccl_driver: no %s in %s: %s\n", symbol, path, dlerror());
		return 2;
	}
	if (version == 5) {
		p5 = table;
		rc = p5->init(&ctx, COMM_HASH, &mask, "fixture", 1, NRANKS, RANK, logger);
	} else if (version == 4) {
		p4 = table;
		rc = p4->init(&ctx, &mask, "fixture", COMM_HASH, 1, NRANKS, RANK, logger);
	} else {
		p3 = table;
		rc = p3->init(&ctx, &mask);
	}
	printf("plugin=%s version=%d init=%d mask=0x%x\n",
	       p5   ? p5->name
	       : p4 ? p4->name
		    : p3->name,
	       version, rc, mask);
	if (rc || !mask)
		mask = 0; /* NCCL then makes no calls but finalize */
	if (mask) {
		for (int i = 0; i < 3; i++)
			collective("AllReduce", 1u << 20, "ncclFloat32", 0, true);
		for (int i = 0; i < 2; i++)
			collective("Broadcast", 1u << 16, "ncclFloat64", 2, false);
		user_group();
		pthread_create(&proxy, NULL, proxy_thread, NULL);
		pthread_join(proxy, NULL);
	}
	if (ctx)
		version == 5   ? p5->finalize(ctx)
		: version == 4 ? p4->finalize(ctx)
			       : p3->finalize(ctx);
	dlclose(lib);
	printf("done\n");
	return 0;
}
