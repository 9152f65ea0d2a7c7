/* SPDX-License-Identifier: MIT */
/*
 * CUPTI activity records -> syscope records. CUPTI fills buffers we hand it and gives them
 * back, completed, on its worker thread (or on the thread that forces a flush); each kernel,
 * copy, set or allocation becomes one SC_REC_GPU_OP, each runtime or driver API call one
 * SC_REC_REGION_SPAN of the thread that made it, in the stream of the thread processing the
 * buffer. Kernel names are written once each as SC_REC_STRING and referred to by id.
 *
 * Timestamps are already on syscope's clock: inject.c makes syscope's clock CUPTI's
 * timestamp source before any activity kind is enabled.
 */
#include "activity.h"

#include "activity_pool.h"
#include "api_names.h"
#include "driver_calls.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint_least64_t dropped_records;
static atomic_uint_least64_t untimed_records;

/* Buffers come back on CUPTI's thread and on flushing threads: one at a time. */
static pthread_mutex_t buffer_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- host thread of a correlation id: written at the API call, read with its activity ---- */

#define CORR_SLOTS 65536u /* calls in flight between the call and its activity buffer */
static _Atomic uint64_t corr_tid[CORR_SLOTS];

void cuda_corr_note_thread(uint32_t corr, int32_t tid)
{
	atomic_store_explicit(&corr_tid[corr & (CORR_SLOTS - 1)],
			      (uint64_t)corr << 32 | (uint32_t)tid, memory_order_relaxed);
}

int32_t cuda_corr_thread(uint32_t corr)
{
	uint64_t v = atomic_load_explicit(&corr_tid[corr & (CORR_SLOTS - 1)], memory_order_relaxed);

	return corr && (uint32_t)(v >> 32) == corr ? (int32_t)(uint32_t)v : 0;
}

/*
 * The API calls themselves, by correlation id (under buffer_lock): when each was open, and for
 * a driver call that was the runtime's own, the runtime call its work is linked to.
 */
struct corr_call {
	uint32_t corr, link;
	uint64_t start, end;
};
static struct corr_call corr_calls[CORR_SLOTS];

static void corr_note_call(uint32_t corr, uint64_t start, uint64_t end)
{
	corr_calls[corr & (CORR_SLOTS - 1)] =
		(struct corr_call){ .corr = corr, .start = start, .end = end };
}

static const struct corr_call *corr_call_of(uint32_t corr)
{
	const struct corr_call *c = &corr_calls[corr & (CORR_SLOTS - 1)];

	return corr && c->corr == corr ? c : NULL;
}

/* The correlation id that device work of `corr` is linked to. */
static uint32_t corr_linked(uint32_t corr)
{
	const struct corr_call *c = corr_call_of(corr);

	return c && c->link ? c->link : corr;
}

/* ---- kernel names, each written once as a string record (under buffer_lock) ---- */

struct name_entry {
	uint64_t hash;
	char *text;
	uint32_t id;
};

static struct {
	struct name_entry *slot;
	size_t cap, used;
	uint32_t next_id;
} names;

static uint64_t hash_text(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ? h : 1;
}

static bool names_grow(void)
{
	size_t cap = names.cap ? names.cap * 2 : 256;
	struct name_entry *slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return false;
	for (size_t i = 0; i < names.cap; i++) {
		size_t j;

		if (!names.slot[i].hash)
			continue;
		for (j = names.slot[i].hash & (cap - 1); slot[j].hash; j = (j + 1) & (cap - 1))
			;
		slot[j] = names.slot[i];
	}
	free(names.slot);
	names.slot = slot;
	names.cap = cap;
	return true;
}

static void write_string(uint32_t id, const char *text, size_t len)
{
	struct sc_rec_string r = { .ts = cuda_api->now_ns(), .id = id, .len = (uint32_t)len + 1 };

	cuda_api->record(SC_REC_STRING, 0, &r.ts, sizeof(r) - sizeof(r.hdr), text, r.len);
}

static uint32_t name_id(const char *text)
{
	uint64_t h;
	size_t i, len;

	if (!text || !*text)
		return 0;
	if (names.used * 2 >= names.cap && !names_grow())
		return 0;
	h = hash_text(text);
	for (i = h & (names.cap - 1); names.slot[i].hash; i = (i + 1) & (names.cap - 1))
		if (names.slot[i].hash == h && !strcmp(names.slot[i].text, text))
			return names.slot[i].id;
	len = strlen(text);
	names.slot[i].text = malloc(len + 1);
	if (!names.slot[i].text)
		return 0;
	memcpy(names.slot[i].text, text, len + 1);
	names.slot[i].hash = h;
	names.slot[i].id = ++names.next_id;
	names.used++;
	write_string(names.slot[i].id, text, len);
	return names.slot[i].id;
}

/* attach's detach: a later attach records into a new file, which has none of the names. */
void cuda_activity_forget_names(void)
{
	pthread_mutex_lock(&buffer_lock);
	for (size_t i = 0; i < names.cap; i++)
		free(names.slot[i].text);
	free(names.slot);
	memset(&names, 0, sizeof(names));
	pthread_mutex_unlock(&buffer_lock);
}

/* ---- translation ---- */

static void emit(struct sc_rec_gpu_op *op)
{
	if (!op->start && !op->end) {
		atomic_fetch_add(&untimed_records, 1); /* CUPTI could not time it */
		return;
	}
	op->corr_id = corr_linked((uint32_t)op->corr_id);
	if (!op->tid)
		op->tid = cuda_corr_thread((uint32_t)op->corr_id);
	cuda_api->record(SC_REC_GPU_OP, 0, &op->start, sizeof(*op) - sizeof(op->hdr), NULL, 0);
}

bool (*cuda_untimed_kernel_time)(uint32_t corr, uint64_t *start, uint64_t *end);

static void kernel(const CUpti_ActivityKernel10 *k)
{
	struct sc_rec_gpu_op op = {
		.kind = SC_GPU_KERNEL,
		.start = k->start,
		.end = k->end,
		.corr_id = k->correlationId,
		.stream = k->streamId,
		.agent = k->deviceId,
		.name_id = name_id(k->name),
		.grid = { (uint32_t)k->gridX, (uint32_t)k->gridY, (uint32_t)k->gridZ },
		.block = { (uint32_t)k->blockX, (uint32_t)k->blockY, (uint32_t)k->blockZ },
		.shared_static = (uint32_t)k->staticSharedMemory,
		.shared_dynamic = (uint32_t)k->dynamicSharedMemory,
		.local_per_thread = k->localMemoryPerThread,
		.registers = k->registersPerThread,
	};

	if (!op.start && !op.end && cuda_untimed_kernel_time) /* under kernel replay */
		cuda_untimed_kernel_time(k->correlationId, &op.start, &op.end);
	emit(&op);
}

/* A CUDA graph's execution as one operation (the graph domain: its nodes are not traced). */
static void graph_op(const CUpti_ActivityGraphTrace2 *g)
{
	char name[48];
	struct sc_rec_gpu_op op = {
		.kind = SC_GPU_GRAPH,
		.start = g->start,
		.end = g->end,
		.corr_id = g->correlationId,
		.stream = g->streamId,
		.agent = g->deviceId,
	};

	snprintf(name, sizeof(name), "CUDA graph %u", g->graphId);
	op.name_id = name_id(name);
	emit(&op);
}

/* CUPTI's copy kinds (CUpti_ActivityMemcpyKind) folded into syscope's four directions. */
static uint16_t copy_kind(uint8_t cupti_kind)
{
	switch (cupti_kind) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
		return SC_COPY_HTOD;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
		return SC_COPY_DTOH;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
		return SC_COPY_DTOD;
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
		return SC_COPY_HTOH;
	case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
		return SC_COPY_PTOP;
	default:
		return SC_COPY_UNKNOWN;
	}
}

static void copy_endpoints(struct sc_rec_gpu_op *op, uint32_t device)
{
	op->src_agent = op->copy_kind == SC_COPY_HTOD || op->copy_kind == SC_COPY_HTOH
				? SC_AGENT_HOST
				: device;
	op->dst_agent = op->copy_kind == SC_COPY_DTOH || op->copy_kind == SC_COPY_HTOH
				? SC_AGENT_HOST
				: device;
}

static void memcpy_op(const CUpti_ActivityMemcpy6 *m)
{
	struct sc_rec_gpu_op op = {
		.kind = SC_GPU_COPY,
		.start = m->start,
		.end = m->end,
		.corr_id = m->correlationId,
		.stream = m->streamId,
		.agent = m->deviceId,
		.bytes = m->bytes,
		.copy_kind = copy_kind(m->copyKind),
	};

	copy_endpoints(&op, m->deviceId);
	emit(&op);
}

static void peer_copy(const CUpti_ActivityMemcpyPtoP4 *m)
{
	struct sc_rec_gpu_op op = {
		.kind = SC_GPU_COPY,
		.start = m->start,
		.end = m->end,
		.corr_id = m->correlationId,
		.stream = m->streamId,
		.agent = m->deviceId,
		.bytes = m->bytes,
		.copy_kind = SC_COPY_PTOP,
		.src_agent = m->srcDeviceId,
		.dst_agent = m->dstDeviceId,
	};

	emit(&op);
}

static void memset_op(const CUpti_ActivityMemset4 *m)
{
	struct sc_rec_gpu_op op = {
		.kind = SC_GPU_SET,
		.start = m->start,
		.end = m->end,
		.corr_id = m->correlationId,
		.stream = m->streamId,
		.agent = m->deviceId,
		.bytes = m->bytes,
	};

	emit(&op);
}

static atomic_uint_least64_t stale_links, static_allocations;

/* CUPTI gives memory made while no traced call was open the id of the thread's last call,
 * which had ended (NCCL's cuMem* calls after cudaThreadExchangeStreamCaptureMode): an
 * allocation is linked only to a call that was open at the time. */
static void unlink_ended_call(struct sc_rec_gpu_op *op, bool is_async)
{
	const struct corr_call *c = corr_call_of((uint32_t)op->corr_id);

	if (c && !c->link && !is_async && (op->start < c->start || op->start > c->end)) {
		op->tid = cuda_corr_thread((uint32_t)op->corr_id);
		op->corr_id = 0;
		atomic_fetch_add(&stale_links, 1);
	}
}

/* The memory level of an allocation: module globals (__device__ variables, which the driver
 * allocates when it loads a module) apart from what the program allocated. */
static uint16_t memory_level(uint32_t kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
		return SC_MEM_VIRTUAL;
	case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
	case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
		atomic_fetch_add(&static_allocations, 1);
		return SC_MEM_STATIC;
	default:
		return SC_MEM_REAL;
	}
}

static void memory_op(const CUpti_ActivityMemory4 *m)
{
	struct sc_rec_gpu_op op = {
		.kind = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
				? SC_GPU_FREE
				: SC_GPU_ALLOC,
		.start = m->timestamp,
		.end = m->timestamp,
		.corr_id = m->correlationId,
		.stream = m->streamId,
		.agent = m->deviceId,
		.bytes = m->bytes,
		.address = m->address,
	};

	if (m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION &&
	    m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
		return;
	op.copy_kind = memory_level(m->memoryKind);
	unlink_ended_call(&op, m->isAsync); /* stream-ordered: may happen after its call */
	emit(&op);
}

uint32_t cuda_region_text_args(char *buf, size_t cap, const char *name, const char *category,
			       const struct cuda_arg *args, unsigned nargs, struct sc_rec_region *r)
{
	size_t c = strlen(category) + 1, n, used;

	if (!name || !*name)
		name = "(unnamed)";
	n = strlen(name) + 1;
	if (n + c > cap) /* cut a long name, keep the record */
		n = cap - c;
	memcpy(buf, name, n - 1);
	buf[n - 1] = '\0';
	memcpy(buf + n, category, c);
	r->name_len = (uint32_t)n;
	r->cat_len = (uint32_t)c;
	r->nargs = r->args_len = 0;
	used = n + c;
	for (unsigned i = 0; i < nargs; i++) {
		size_t an = strlen(args[i].name) + 1, av = strlen(args[i].value) + 1;

		if (used + 2 + an + av > cap)
			break;
		buf[used] = args[i].type;
		buf[used + 1] = '\0';
		memcpy(buf + used + 2, args[i].name, an);
		memcpy(buf + used + 2 + an, args[i].value, av);
		used += 2 + an + av;
		r->args_len += (uint32_t)(2 + an + av);
		r->nargs++;
	}
	return (uint32_t)used;
}

uint32_t cuda_region_text(char *buf, size_t cap, const char *name, const char *category,
			  struct sc_rec_region *r)
{
	return cuda_region_text_args(buf, cap, name, category, NULL, 0, r);
}

/* The host thread of a correlation id, or of nothing: counted, the record is left out. */
static atomic_uint_least64_t unplaced_records;

static void span(int32_t tid, uint64_t start, uint64_t end, uint32_t corr, const char *name,
		 const char *category)
{
	struct sc_rec_region_span sp = {
		.r = { .ts = start, .corr_id = corr },
		.end = end >= start ? end : start,
		.tid = tid,
	};
	char text[CUDA_REGION_TEXT_MAX];
	uint32_t len;

	if (!start) {
		atomic_fetch_add(&untimed_records, 1);
		return;
	}
	if (!tid) {
		atomic_fetch_add(&unplaced_records, 1);
		return;
	}
	len = cuda_region_text(text, sizeof(text), name, category, &sp.r);
	cuda_api->record(SC_REC_REGION_SPAN, 0, &sp.r.ts, sizeof(sp) - sizeof(sp.r.hdr), text, len);
}

/* Driver calls are told apart from the runtime's own (driver_calls.c) unless the driver domain
 * was asked for. */
static bool driver_own_only;

static void show_driver_call(int32_t tid, const struct driver_call *c)
{
	span(tid, c->start, c->end, c->corr, cuda_api_traced_name(false, c->cbid),
	     CUDA_CATEGORY_DRIVER);
}

static void hide_driver_call(const struct driver_call *c, uint32_t runtime_corr)
{
	struct corr_call *slot = &corr_calls[c->corr & (CORR_SLOTS - 1)];

	if (slot->corr == c->corr && runtime_corr)
		slot->link = runtime_corr;
}

/* An API call, whole, as a region of the thread that made it. */
static void api_call(const CUpti_ActivityAPI *a, bool runtime)
{
	const char *name = cuda_api_traced_name(runtime, a->cbid);
	int32_t tid = (int32_t)a->threadId;
	struct driver_call c = { a->start, a->end, a->correlationId, a->cbid,
				 !runtime && cuda_api_driver_starts_work(a->cbid) };

	if (!tid)
		return;
	if (runtime && driver_own_only) /* even one not shown: driver calls inside it are its */
		cuda_driver_calls_runtime(tid, a->start, a->end, a->correlationId);
	if (!name)
		return;
	cuda_corr_note_thread(a->correlationId, tid);
	corr_note_call(a->correlationId, a->start, a->end);
	if (!runtime && driver_own_only && cuda_driver_call_hold(tid, &c))
		return;
	span(tid, a->start, a->end, a->correlationId, name,
	     runtime ? CUDA_CATEGORY_RUNTIME : CUDA_CATEGORY_DRIVER);
}

void cuda_activity_driver_own(bool on)
{
	driver_own_only = on;
	cuda_driver_calls_init(show_driver_call, hide_driver_call);
}

void cuda_activity_finish(void)
{
	pthread_mutex_lock(&buffer_lock);
	if (cuda_api->active())
		cuda_driver_calls_flush();
	pthread_mutex_unlock(&buffer_lock);
}

uint64_t cuda_activity_stale_links(void)
{
	return atomic_load(&stale_links);
}

uint64_t cuda_activity_static_allocations(void)
{
	return atomic_load(&static_allocations);
}

/* The time a host thread waited for the GPU inside a synchronizing call. */
static void synchronization(const CUpti_ActivitySynchronization2 *s)
{
	static const char *const waits[] = {
		[CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN] = "Synchronize",
		[CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE] = "Event synchronize",
		[CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT] = "Stream wait event",
		[CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE] = "Stream synchronize",
		[CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE] = "Context synchronize",
	};
	unsigned type = (unsigned)s->type < sizeof(waits) / sizeof(waits[0]) ? s->type : 0;

	span(cuda_corr_thread(s->correlationId), s->start, s->end, s->correlationId, waits[type],
	     CUDA_CATEGORY_SYNC);
}

/* CUPTI's own work (buffer flushes, instrumentation, ...), on the thread it delayed. */
static void overhead(const CUpti_ActivityOverhead3 *o)
{
	const char *name;

	switch (o->overheadKind) {
	case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
		name = "CUDA driver compiler";
		break;
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
		name = "CUPTI buffer flush";
		break;
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
		name = "CUPTI instrumentation";
		break;
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
		name = "CUPTI resources";
		break;
	case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
		name = "CUDA module loading";
		break;
	case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
		name = "CUDA lazy function loading";
		break;
	case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
		name = "CUDA command buffer full";
		break;
	case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
		name = "CUPTI activity buffer request";
		break;
	case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT:
		name = "CUPTI unified memory set-up";
		break;
	default:
		name = "CUPTI overhead";
	}
	span(o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? (int32_t)o->objectId.pt.threadId : 0,
	     o->start, o->end, o->correlationId, name, CUDA_CATEGORY_OVERHEAD);
}

/* ---- unified memory: totals since start, a counter track per device and kind ---- */

#define UVM_DEVICES 64
#define UVM_KINDS CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_COUNT

static struct {
	int track[UVM_DEVICES + 1][UVM_KINDS]; /* + 1: the CPU's */
	double total[UVM_DEVICES + 1][UVM_KINDS];
	bool defined[UVM_DEVICES + 1][UVM_KINDS];
} uvm;

static void unified_memory(const CUpti_ActivityUnifiedMemoryCounter3 *u)
{
	static const struct {
		const char *name, *unit;
	} kinds[UVM_KINDS] = {
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD] = { "migrated "
										     "HtoD",
										     "bytes" },
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH] = { "migrated "
										     "DtoH",
										     "bytes" },
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD] = { "migrated "
										     "DtoD",
										     "bytes" },
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT] = { "page faults",
										      "faults" },
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT] = { "page faults",
										"faults" },
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING] = { "thrashing", "events" },
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING] = { "throttling",
									    "events" },
		[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP] = { "remote maps",
									    "events" },
	};
	unsigned kind = (unsigned)u->counterKind;
	bool cpu = kind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT;
	/* The GPU a transfer goes to (from, for DtoH); the one that faulted or thrashed. */
	uint32_t device =
		kind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD ||
				kind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD
			? u->dstId
			: u->srcId;
	unsigned row = cpu ? UVM_DEVICES : device;
	uint64_t ts = u->end ? u->end : u->start;

	if (kind >= UVM_KINDS || !kinds[kind].name || row > UVM_DEVICES || !ts)
		return;
	if (!uvm.defined[row][kind]) {
		char name[64];

		if (cpu)
			snprintf(name, sizeof(name), "CPU unified memory page faults");
		else
			snprintf(name, sizeof(name), "GPU %u unified memory %s", device,
				 kinds[kind].name);
		uvm.track[row][kind] = cuda_api->counter_track(name, kinds[kind].unit);
		uvm.defined[row][kind] = true;
		cuda_api->counter_value(uvm.track[row][kind], u->start ? u->start : ts, 0);
	}
	/* Bytes for migrations, fault groups for GPU faults; for the other kinds `value` is
	 * an address or a size, and each record is one event. */
	uvm.total[row][kind] +=
		kinds[kind].unit[0] == 'b' ||
				kind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT
			? (double)u->value
			: 1;
	cuda_api->counter_value(uvm.track[row][kind], ts, uvm.total[row][kind]);
}

void cuda_activity_translate(const CUpti_Activity *rec)
{
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		api_call((const CUpti_ActivityAPI *)rec, rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME);
		break;
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		kernel((const CUpti_ActivityKernel10 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		memcpy_op((const CUpti_ActivityMemcpy6 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		peer_copy((const CUpti_ActivityMemcpyPtoP4 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		memset_op((const CUpti_ActivityMemset4 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		memory_op((const CUpti_ActivityMemory4 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
		graph_op((const CUpti_ActivityGraphTrace2 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		synchronization((const CUpti_ActivitySynchronization2 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		overhead((const CUpti_ActivityOverhead3 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER:
		unified_memory((const CUpti_ActivityUnifiedMemoryCounter3 *)rec);
		break;
	default:
		break;
	}
}

/* ---- buffers ---- */

void cuda_activity_buffer(uint8_t *buffer, size_t valid)
{
	CUpti_Activity *rec = NULL;

	pthread_mutex_lock(&buffer_lock);
	/* API calls first: they name the thread of each correlation id, which the work and
	 * the waits they caused (often earlier in the buffer) are placed by. */
	if (cuda_api->active()) {
		while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
			if (rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME ||
			    rec->kind == CUPTI_ACTIVITY_KIND_DRIVER)
				cuda_activity_translate(rec);
		rec = NULL;
		while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
			if (rec->kind != CUPTI_ACTIVITY_KIND_RUNTIME &&
			    rec->kind != CUPTI_ACTIVITY_KIND_DRIVER)
				cuda_activity_translate(rec);
	}
	pthread_mutex_unlock(&buffer_lock);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = cuda_pool_take(size);
	*max_records = 0; /* as many as fit */
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
				      size_t valid)
{
	size_t dropped = 0;

	if (valid)
		cuda_activity_buffer(buffer, valid);
	if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
		struct sc_rec_lost lost = { .ts = cuda_api->now_ns(), .records = dropped };

		atomic_fetch_add(&dropped_records, dropped);
		cuda_api->record(SC_REC_LOST, 0, &lost.ts, sizeof(lost) - sizeof(lost.hdr), NULL,
				 0);
	}
	cuda_pool_give(buffer, size);
}

uint64_t cuda_activity_dropped(void)
{
	return atomic_load(&dropped_records);
}

/* Enable one kind; a kind that cannot be is named in a note, the others carry on. */
static CUptiResult enable(CUpti_ActivityKind kind, const char *what, CUptiResult first)
{
	CUptiResult rc = cuptiActivityEnable(kind);

	if (rc != CUPTI_SUCCESS)
		cuda_note(SC_NOTE_WARN, "CUDA tracing: %s not recorded (CUPTI: %s)", what,
			  cuda_error(rc));
	return first != CUPTI_SUCCESS ? first : rc;
}

static bool uvm_wanted;
static void enable_unified_memory(void);

/*
 * Unified-memory counters: chosen, then their kind enabled, once the driver has finished
 * initializing (CUPTI refuses it during cuInit, where the other kinds are enabled), i.e. at
 * the first context, before any managed memory can exist.
 */
void cuda_activity_context_created(void)
{
	static atomic_flag once = ATOMIC_FLAG_INIT;

	if (uvm_wanted && !atomic_flag_test_and_set(&once))
		enable_unified_memory();
}

static void enable_unified_memory(void)
{
	static const CUpti_ActivityUnifiedMemoryCounterKind kinds[] = {
		CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
		CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
		CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD,
		CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT,
		CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
		CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING,
		CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING,
		CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP,
	};
	CUpti_ActivityUnifiedMemoryCounterConfig config[sizeof(kinds) / sizeof(kinds[0])];
	CUptiResult rc;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		config[i] = (CUpti_ActivityUnifiedMemoryCounterConfig){
			.scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_ALL_DEVICES,
			.kind = kinds[i],
			.enable = 1,
		};
	rc = cuptiActivityConfigureUnifiedMemoryCounter(config, sizeof(kinds) / sizeof(kinds[0]));
	if (rc != CUPTI_SUCCESS)
		cuda_note(SC_NOTE_WARN,
			  "CUDA tracing: unified-memory counters not available here (CUPTI: %s)",
			  cuda_error(rc));
	else
		enable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER, "unified-memory counters", rc);
}

CUptiResult cuda_activity_start(unsigned domains, size_t bytes)
{
	CUptiResult rc = CUPTI_SUCCESS;

	if (!cuda_pool_start(bytes))
		cuda_note(SC_NOTE_INFO, "CUPTI clears each activity buffer itself, on the thread "
					"that fills it (it does not take them zeroed here)");
	rc = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
	if (rc != CUPTI_SUCCESS)
		return rc;
	/* Before the kinds that refer to them: a buffer holds a call before its work. */
	if (domains & CUDA_DOM_RUNTIME)
		rc = enable(CUPTI_ACTIVITY_KIND_RUNTIME, "runtime API calls", rc);
	if (domains & CUDA_DOM_DRIVER)
		rc = enable(CUPTI_ACTIVITY_KIND_DRIVER, "driver API calls", rc);
	else if ((domains & CUDA_DOM_DRIVER_WORK) && !cuda_api_trace_driver_work())
		cuda_note(SC_NOTE_WARN,
			  "CUDA tracing: the driver calls that start GPU work could "
			  "not be recorded: libraries' kernels (cuBLAS) have no launch");
	cuda_activity_driver_own(domains & CUDA_DOM_DRIVER_OWN);
	if (domains & CUDA_DOM_KERNEL)
		rc = enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernels", rc);
	if (domains & CUDA_DOM_MEMORY) {
		rc = enable(CUPTI_ACTIVITY_KIND_MEMCPY, "copies", rc);
		rc = enable(CUPTI_ACTIVITY_KIND_MEMCPY2, "peer copies", rc);
		rc = enable(CUPTI_ACTIVITY_KIND_MEMSET, "memsets", rc);
		rc = enable(CUPTI_ACTIVITY_KIND_MEMORY2, "allocations", rc);
	}
	if (domains & CUDA_DOM_GRAPH)
		rc = enable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE, "graph launches", rc);
	if (domains & CUDA_DOM_SYNC)
		rc = enable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronization waits", rc);
	if (domains & CUDA_DOM_OVERHEAD)
		rc = enable(CUPTI_ACTIVITY_KIND_OVERHEAD, "CUPTI overhead", rc);
	uvm_wanted = domains & CUDA_DOM_UVM; /* enabled at the first context: see below */
	return rc;
}

uint64_t cuda_activity_untimed(void)
{
	return atomic_load(&untimed_records);
}

uint64_t cuda_activity_unplaced(void)
{
	return atomic_load(&unplaced_records);
}
