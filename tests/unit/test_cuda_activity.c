/* SPDX-License-Identifier: MIT */
/*
 * CUPTI activity records -> syscope records, without a GPU: records laid out as CUPTI 13.0
 * delivers them go through the translation of libsyscope-cuda.so, and the records it writes
 * (captured by a stand-in for libsyscope.so's plugin table) are checked field by field.
 */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "gpu/cuda/activity.h"
#include "gpu/cuda/api_names.h"
#include "gpu/cuda/driver_calls.h"

const struct sc_plugin_api *cuda_api;

/* Stands in for api_trace.c's tables: cudaLaunchKernel is traced, cudaGetLastError is
 * excluded, the driver's cuLaunchKernel is traced. */
const char *cuda_api_traced_name(bool runtime, uint32_t cbid)
{
	if (!runtime && cbid == CUPTI_DRIVER_TRACE_CBID_cuKernelGetName)
		return "cuKernelGetName";
	if (!runtime && cbid == CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute)
		return "cuDeviceGetAttribute";
	if (runtime && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
		return "cudaLaunchKernel";
	if (!runtime && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
		return "cuLaunchKernel";
	return NULL;
}

unsigned cuda_api_trace_driver_work(void)
{
	return 0;
}

bool cuda_api_driver_starts_work(uint32_t cbid)
{
	return cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
}

/* Every record written, as (type, body) in order. */
static struct written {
	uint16_t type;
	char body[512];
	uint32_t size;
} out[64];
static unsigned nout;
static uint64_t clock_ns = 1000;

static bool fake_active(void)
{
	return true;
}
static uint64_t fake_now(void)
{
	return clock_ns++;
}
static int fake_record(uint16_t type, uint16_t flags, const void *body, uint32_t body_size,
		       const void *tail, uint32_t tail_size)
{
	struct written *w = &out[nout++];

	(void)flags;
	w->type = type;
	w->size = body_size + tail_size;
	memcpy(w->body, body, body_size);
	if (tail_size)
		memcpy(w->body + body_size, tail, tail_size);
	return 0;
}
static void fake_note(enum sc_note_level level, const char *text)
{
	(void)level;
	(void)text;
}
static int fake_at_stop(void (*fn)(void))
{
	(void)fn;
	return 0;
}

/* Counter tracks: names by id, and the last value each got. */
static char track_names[8][64];
static int ntracks;
static double track_value[8];
static uint64_t track_ts[8];

static int fake_counter_track(const char *name, const char *unit)
{
	(void)unit;
	for (int i = 0; i < ntracks; i++)
		if (!strcmp(track_names[i], name))
			return i;
	snprintf(track_names[ntracks], sizeof(track_names[0]), "%s", name);
	return ntracks++;
}
static void fake_counter_value(int track, uint64_t ts, double value)
{
	track_value[track] = value;
	track_ts[track] = ts;
}

/* inject.c's, which this test does not link. */
void cuda_note(enum sc_note_level level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}
const char *cuda_error(CUptiResult rc)
{
	(void)rc;
	return "error";
}

static const struct sc_plugin_api fake = {
	.abi = SC_PLUGIN_ABI,
	.size = sizeof(struct sc_plugin_api),
	.active = fake_active,
	.now_ns = fake_now,
	.record = fake_record,
	.note = fake_note,
	.at_stop = fake_at_stop,
	.counter_track = fake_counter_track,
	.counter_value = fake_counter_value,
};

/* Written record i as a record struct of `size` bytes (its body starts after the header). */
static void record_at(unsigned i, uint16_t type, void *rec, size_t size)
{
	CHECK(i < nout && out[i].type == type);
	memset(rec, 0, size);
	memcpy((char *)rec + sizeof(struct sc_record), out[i].body,
	       size - sizeof(struct sc_record));
}

static const struct sc_rec_gpu_op *op_at(unsigned i)
{
	static struct sc_rec_gpu_op op;

	record_at(i, SC_REC_GPU_OP, &op, sizeof(op));
	return &op;
}

static void test_kernels(void)
{
	CUpti_ActivityKernel10 k = { .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL };
	const struct sc_rec_gpu_op *op;
	struct sc_rec_string str;

	k.start = 5000;
	k.end = 7500;
	k.deviceId = 1;
	k.streamId = 13;
	k.gridX = 1024, k.gridY = 2, k.gridZ = 1;
	k.blockX = 256, k.blockY = 1, k.blockZ = 1;
	k.registersPerThread = 40;
	k.staticSharedMemory = 4096;
	k.dynamicSharedMemory = 512;
	k.localMemoryPerThread = 16;
	k.correlationId = 77;
	k.name = "_Z6saxpyifPfS_";
	cuda_corr_note_thread(77, 4242);

	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&k);
	CHECK(nout == 2); /* the kernel's name, then the kernel */
	CHECK(out[0].type == SC_REC_STRING);
	record_at(0, SC_REC_STRING, &str, sizeof(str));
	CHECK(str.id == 1 && str.len == sizeof("_Z6saxpyifPfS_"));
	CHECK_STR(out[0].body + sizeof(str) - sizeof(struct sc_record), "_Z6saxpyifPfS_");
	op = op_at(1);
	CHECK(op->kind == SC_GPU_KERNEL);
	CHECK(op->start == 5000 && op->end == 7500);
	CHECK(op->agent == 1 && op->stream == 13);
	CHECK(op->grid[0] == 1024 && op->grid[1] == 2 && op->grid[2] == 1);
	CHECK(op->block[0] == 256 && op->block[1] == 1 && op->block[2] == 1);
	CHECK(op->registers == 40 && op->shared_static == 4096 && op->shared_dynamic == 512);
	CHECK(op->local_per_thread == 16);
	CHECK(op->corr_id == 77 && op->tid == 4242);
	CHECK(op->name_id == 1);

	/* The same name again: no second string record. Another name: id 2. */
	nout = 0;
	k.correlationId = 78; /* no call noted: thread unknown */
	cuda_activity_translate((const CUpti_Activity *)&k);
	CHECK(nout == 1 && op_at(0)->name_id == 1 && op_at(0)->tid == 0);
	k.name = "_Z4halvePf";
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&k);
	CHECK(nout == 2 && out[0].type == SC_REC_STRING && op_at(1)->name_id == 2);

	/* No timestamps: left out and counted. */
	k.start = k.end = 0;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&k);
	CHECK(nout == 0);
	CHECK(cuda_activity_untimed() == 1);
}

/* Under the range profiler's kernel replay CUPTI gives kernels no timestamps: the counters
 * give their host-side time by correlation id (counters_range.c). */
static bool replayed_kernel_time(uint32_t corr, uint64_t *start, uint64_t *end)
{
	if (corr != 90)
		return false;
	*start = 111000;
	*end = 111500;
	return true;
}

static void test_replayed_kernel_times(void)
{
	CUpti_ActivityKernel10 k = { .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
				     .correlationId = 90,
				     .name = "_Z6saxpyifPfS_" };
	uint64_t untimed = cuda_activity_untimed();

	cuda_untimed_kernel_time = replayed_kernel_time;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&k);
	CHECK(nout == 1 && op_at(0)->start == 111000 && op_at(0)->end == 111500);
	CHECK(op_at(0)->corr_id == 90 && op_at(0)->kind == SC_GPU_KERNEL);
	k.correlationId = 91; /* not profiled: still untimed */
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&k);
	CHECK(nout == 0 && cuda_activity_untimed() == untimed + 1);
	cuda_untimed_kernel_time = NULL;
}

static void test_copies(void)
{
	CUpti_ActivityMemcpy6 m = { .kind = CUPTI_ACTIVITY_KIND_MEMCPY };
	CUpti_ActivityMemcpyPtoP4 p = { .kind = CUPTI_ACTIVITY_KIND_MEMCPY2 };
	CUpti_ActivityMemset4 s = { .kind = CUPTI_ACTIVITY_KIND_MEMSET };
	const struct sc_rec_gpu_op *op;

	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	m.bytes = 1 << 20;
	m.start = 100, m.end = 200;
	m.deviceId = 0, m.streamId = 7, m.correlationId = 90;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&m);
	op = op_at(0);
	CHECK(op->kind == SC_GPU_COPY && op->copy_kind == SC_COPY_HTOD);
	CHECK(op->bytes == 1 << 20 && op->src_agent == SC_AGENT_HOST && op->dst_agent == 0);

	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
	m.deviceId = 2;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&m);
	op = op_at(0);
	CHECK(op->copy_kind == SC_COPY_DTOH && op->src_agent == 2 &&
	      op->dst_agent == SC_AGENT_HOST);

	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_ATOD; /* array to device: device to device */
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&m);
	op = op_at(0);
	CHECK(op->copy_kind == SC_COPY_DTOD && op->src_agent == 2 && op->dst_agent == 2);

	p.bytes = 4096;
	p.start = 300, p.end = 400;
	p.deviceId = 0, p.srcDeviceId = 0, p.dstDeviceId = 1, p.streamId = 3;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&p);
	op = op_at(0);
	CHECK(op->copy_kind == SC_COPY_PTOP && op->src_agent == 0 && op->dst_agent == 1);
	CHECK(op->bytes == 4096);

	s.bytes = 8192;
	s.start = 500, s.end = 510, s.deviceId = 0, s.streamId = 7, s.correlationId = 91;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&s);
	op = op_at(0);
	CHECK(op->kind == SC_GPU_SET && op->bytes == 8192 && op->corr_id == 91);
}

static void test_allocations(void)
{
	CUpti_ActivityMemory4 a = { .kind = CUPTI_ACTIVITY_KIND_MEMORY2 };
	const struct sc_rec_gpu_op *op;

	a.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	a.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	a.address = 0x7f0000000000;
	a.bytes = 3 << 20;
	a.timestamp = 900;
	a.deviceId = 0;
	a.correlationId = 95;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&a);
	op = op_at(0);
	CHECK(op->kind == SC_GPU_ALLOC && op->start == 900 && op->end == 900);
	CHECK(op->address == 0x7f0000000000 && op->bytes == 3 << 20);
	CHECK(op->copy_kind == SC_MEM_REAL);

	a.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
	a.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&a);
	op = op_at(0);
	CHECK(op->kind == SC_GPU_FREE && op->copy_kind == SC_MEM_VIRTUAL);

	/* Kinds syscope does not show are skipped, not misread. */
	a.kind = CUPTI_ACTIVITY_KIND_ENVIRONMENT;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&a);
	CHECK(nout == 0);
}

static void test_api_calls(void)
{
	CUpti_ActivityAPI a = { .kind = CUPTI_ACTIVITY_KIND_RUNTIME };
	struct sc_rec_region_span sp;
	const char *text;

	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	a.start = 1000;
	a.end = 3500;
	a.threadId = 5151;
	a.correlationId = 300;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&a);
	record_at(0, SC_REC_REGION_SPAN, &sp, sizeof(sp));
	CHECK(sp.r.ts == 1000 && sp.end == 3500 && sp.tid == 5151 && sp.r.corr_id == 300);
	CHECK(sp.r.name_len == sizeof("cudaLaunchKernel") && sp.r.nargs == 0);
	text = out[0].body + sizeof(sp) - sizeof(struct sc_record);
	CHECK_STR(text, "cudaLaunchKernel");
	CHECK_STR(text + sp.r.name_len, "CUDA_RUNTIME_API");
	CHECK(out[0].size == sizeof(sp) - sizeof(struct sc_record) + sp.r.name_len + sp.r.cat_len);
	/* The call's thread is known to the device work it caused. */
	CHECK(cuda_corr_thread(300) == 5151);

	a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
	a.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&a);
	record_at(0, SC_REC_REGION_SPAN, &sp, sizeof(sp));
	CHECK_STR(out[0].body + sizeof(sp) - sizeof(struct sc_record) + sp.r.name_len,
		  "CUDA_DRIVER_API");

	/* Excluded functions and calls of no known thread write nothing. */
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&a);
	CHECK(nout == 0);
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	a.threadId = 0;
	cuda_activity_translate((const CUpti_Activity *)&a);
	CHECK(nout == 0);
}

static void test_region_text_keeps_the_category(void)
{
	static char name[3000], buf[CUDA_REGION_TEXT_MAX];
	struct sc_rec_region r = { 0 };
	uint32_t len;

	memset(name, 'n', sizeof(name) - 1); /* an NVTX message longer than a record's text */
	len = cuda_region_text(buf, sizeof(buf), name, "MARKER_CORE_API", &r);
	CHECK(len == sizeof(buf) && r.name_len + r.cat_len == len);
	CHECK(r.cat_len == sizeof("MARKER_CORE_API") && buf[r.name_len - 1] == '\0');
	CHECK_STR(buf + r.name_len, "MARKER_CORE_API");
	len = cuda_region_text(buf, sizeof(buf), NULL, "CUDA_RUNTIME_API", &r);
	CHECK_STR(buf, "(unnamed)");
	CHECK(len == sizeof("(unnamed)") + sizeof("CUDA_RUNTIME_API"));
}

/* A span's name and category, and the span itself, from written record i. */
static const char *span_at(unsigned i, struct sc_rec_region_span *sp)
{
	record_at(i, SC_REC_REGION_SPAN, sp, sizeof(*sp));
	return out[i].body + sizeof(*sp) - sizeof(struct sc_record);
}

static void test_waits_and_overhead(void)
{
	CUpti_ActivitySynchronization2 w = { .kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION };
	CUpti_ActivityOverhead3 o = { .kind = CUPTI_ACTIVITY_KIND_OVERHEAD };
	struct sc_rec_region_span sp;
	const char *text;

	w.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	w.start = 2000;
	w.end = 9000;
	w.correlationId = 410;
	cuda_corr_note_thread(410, 777);
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&w);
	text = span_at(0, &sp);
	CHECK(sp.tid == 777 && sp.r.ts == 2000 && sp.end == 9000 && sp.r.corr_id == 410);
	CHECK_STR(text, "Stream synchronize");
	CHECK_STR(text + sp.r.name_len, "CUDA_SYNCHRONIZATION");
	/* A wait whose call was never seen names no thread: left out and counted. */
	w.correlationId = 411;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&w);
	CHECK(nout == 0 && cuda_activity_unplaced() == 1);

	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	o.objectId.pt.processId = 1;
	o.objectId.pt.threadId = 4321;
	o.start = 100;
	o.end = 250;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&o);
	text = span_at(0, &sp);
	CHECK(sp.tid == 4321 && sp.r.ts == 100 && sp.end == 250);
	CHECK_STR(text, "CUPTI buffer flush");
	CHECK_STR(text + sp.r.name_len, "PROFILER_OVERHEAD");
}

static void test_unified_memory_totals(void)
{
	CUpti_ActivityUnifiedMemoryCounter3 u = {
		.kind = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER
	};

	u.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD;
	u.srcId = 0;
	u.dstId = 1; /* to GPU 1 */
	u.value = 65536;
	u.start = 10;
	u.end = 20;
	cuda_activity_translate((const CUpti_Activity *)&u);
	u.value = 4096;
	u.start = 30;
	u.end = 40;
	cuda_activity_translate((const CUpti_Activity *)&u);
	u.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT;
	u.srcId = 1;
	u.value = 3;
	cuda_activity_translate((const CUpti_Activity *)&u);
	u.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT;
	u.value = 0x401234; /* the faulting instruction's address: one fault each */
	cuda_activity_translate((const CUpti_Activity *)&u);
	cuda_activity_translate((const CUpti_Activity *)&u);
	CHECK(ntracks == 3);
	CHECK_STR(track_names[0], "GPU 1 unified memory migrated HtoD");
	CHECK(track_value[0] == 65536 + 4096 && track_ts[0] == 40); /* a total, at the end */
	CHECK_STR(track_names[1], "GPU 1 unified memory page faults");
	CHECK(track_value[1] == 3);
	CHECK_STR(track_names[2], "CPU unified memory page faults");
	CHECK(track_value[2] == 2);
}

static void test_graph_launch(void)
{
	CUpti_ActivityGraphTrace2 g = { .kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE };
	const struct sc_rec_gpu_op *op;

	g.correlationId = 88;
	g.start = 40000;
	g.end = 41000;
	g.deviceId = 0;
	g.graphId = 7;
	g.streamId = 14;
	cuda_corr_note_thread(88, 99);
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&g);
	CHECK(nout == 2); /* its name, then the operation */
	CHECK_STR(out[0].body + sizeof(struct sc_rec_string) - sizeof(struct sc_record),
		  "CUDA graph 7");
	op = op_at(1);
	CHECK(op->kind == SC_GPU_GRAPH && op->start == 40000 && op->end == 41000);
	CHECK(op->stream == 14 && op->corr_id == 88 && op->tid == 99 && op->name_id);
}

static void test_region_arguments(void)
{
	const struct cuda_arg args[] = { { SC_ARG_STRING, "domain", "my domain" },
					 { SC_ARG_UINT, "payload", "42" } };
	struct sc_rec_region r = { 0 };
	char buf[64];
	uint32_t len =
		cuda_region_text_args(buf, sizeof(buf), "step", "MARKER_CORE_API", args, 2, &r);
	const char *p = buf + r.name_len + r.cat_len;

	CHECK(r.nargs == 2 && len == r.name_len + r.cat_len + r.args_len);
	CHECK_STR(p, "s");
	CHECK_STR(p + 2, "domain");
	CHECK_STR(p + 2 + sizeof("domain"), "my domain");
	p += 2 + sizeof("domain") + sizeof("my domain");
	CHECK_STR(p, "u");
	CHECK_STR(p + 2 + sizeof("payload"), "42");
	/* An argument that does not fit is left out; the name and category stay whole. */
	len = cuda_region_text_args(buf, 40, "step", "MARKER_CORE_API", args, 2, &r);
	CHECK(r.nargs == 1 && len <= 40);
	CHECK_STR(buf, "step");
}

static void test_correlation_table(void)
{
	cuda_corr_note_thread(5, 11);
	CHECK(cuda_corr_thread(5) == 11);
	cuda_corr_note_thread(5 + 65536, 12); /* same slot, newer call */
	CHECK(cuda_corr_thread(5) == 0);      /* the older one is forgotten, not misattributed */
	CHECK(cuda_corr_thread(5 + 65536) == 12);
	CHECK(cuda_corr_thread(0) == 0);
}

/* The category of written region i. */
static const char *category_at(unsigned i)
{
	struct sc_rec_region_span sp;

	record_at(i, SC_REC_REGION_SPAN, &sp, sizeof(sp));
	return out[i].body + sizeof(sp) - sizeof(struct sc_record) + sp.r.name_len;
}

static void api_record(bool runtime, uint32_t cbid, int32_t tid, uint64_t start, uint64_t end,
		       uint32_t corr)
{
	CUpti_ActivityAPI a = { .kind = runtime ? CUPTI_ACTIVITY_KIND_RUNTIME
						: CUPTI_ACTIVITY_KIND_DRIVER };

	a.cbid = cbid;
	a.threadId = (uint32_t)tid;
	a.start = start;
	a.end = end;
	a.correlationId = corr;
	cuda_activity_translate((const CUpti_Activity *)&a);
}

static const struct sc_rec_gpu_op *kernel_of(uint32_t corr)
{
	CUpti_ActivityKernel10 k = { .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL };

	k.start = 90000;
	k.end = 91000;
	k.correlationId = corr;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&k);
	return op_at(nout - 1);
}

/* A driver call made while a runtime call is open on its thread is the runtime's own: its
 * record comes first (calls are recorded as they return) and is held until the runtime
 * call's decides; its work is linked to the runtime call. */
static void test_driver_calls_of_the_runtime_left_out(void)
{
	struct sc_rec_region_span sp;

	/* No runtime call in the process (yet): a driver-API program, every call its own. */
	cuda_activity_driver_own(true);
	nout = 0;
	api_record(false, CUPTI_DRIVER_TRACE_CBID_cuKernelGetName, 13, 10, 20, 399);
	CHECK(nout == 0);
	cuda_activity_finish();
	CHECK(nout == 1);
	nout = 0;
	api_record(false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 7, 1100, 1200, 401);
	CHECK(nout == 0);
	api_record(true, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 7, 1000, 1500, 400);
	CHECK(nout == 1);
	record_at(0, SC_REC_REGION_SPAN, &sp, sizeof(sp));
	CHECK(sp.r.corr_id == 400 && sp.tid == 7);
	CHECK_STR(category_at(0), "CUDA_RUNTIME_API");
	CHECK(kernel_of(401)->corr_id == 400);
	CHECK(kernel_of(400)->corr_id == 400);

	/* A runtime call that is not shown (excluded) still owns the driver calls inside it. */
	nout = 0;
	api_record(false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 7, 4100, 4200, 405);
	api_record(true, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020, 7, 4000, 4500, 404);
	CHECK(nout == 0);
	cuda_activity_finish();
	CHECK(nout == 0);
	cuda_activity_driver_own(false);
}

/* A driver call no runtime call was open around is the program's (a library's launch). */
static void test_driver_calls_of_the_program_shown(void)
{
	struct sc_rec_region_span sp;
	const struct sc_rec_gpu_op *op;

	cuda_activity_driver_own(true);
	nout = 0;
	api_record(false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 8, 2000, 2100, 402);
	CHECK(nout == 0);
	api_record(true, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 8, 3000, 3500, 403);
	CHECK(nout == 2);
	record_at(0, SC_REC_REGION_SPAN, &sp, sizeof(sp));
	CHECK(sp.r.corr_id == 402 && sp.tid == 8 && sp.r.ts == 2000 && sp.end == 2100);
	CHECK_STR(category_at(0), "CUDA_DRIVER_API");
	CHECK_STR(category_at(1), "CUDA_RUNTIME_API");
	op = kernel_of(402);
	CHECK(op->corr_id == 402 && op->tid == 8);

	/* Calls still held at the end are the program's: a thread with no runtime call. */
	nout = 0;
	api_record(false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 9, 5000, 5100, 406);
	api_record(false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 9, 5200, 5300, 407);
	CHECK(nout == 0);
	cuda_activity_finish();
	CHECK(nout == 2);
	record_at(1, SC_REC_REGION_SPAN, &sp, sizeof(sp));
	CHECK(sp.r.corr_id == 407 && sp.tid == 9);

	/* With the driver domain asked for, every driver call is shown as it comes. */
	cuda_activity_driver_own(false);
	nout = 0;
	api_record(false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 7, 6100, 6200, 409);
	CHECK(nout == 1);
}

/* The runtime's calls outside its recorded calls (start-up, kernel name lookups): once the
 * process is known to call the runtime, only driver calls that start work are shown. */
static void test_runtime_calls_outside_its_calls_left_out(void)
{
	cuda_activity_driver_own(true);
	nout = 0;
	api_record(false, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute, 11, 50, 60, 601);
	api_record(false, CUPTI_DRIVER_TRACE_CBID_cuKernelGetName, 11, 100, 200, 602);
	api_record(true, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 11, 300, 400, 603);
	CHECK(nout == 1);
	CHECK_STR(category_at(0), "CUDA_RUNTIME_API");
	nout = 0;
	api_record(false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 11, 500, 600, 604);
	api_record(false, CUPTI_DRIVER_TRACE_CBID_cuKernelGetName, 11, 610, 620, 605);
	api_record(true, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 11, 700, 800, 606);
	CHECK(nout == 2);
	CHECK_STR(category_at(0), "CUDA_DRIVER_API");
	CHECK(cuda_driver_calls_hidden() >= 3);
	cuda_activity_driver_own(false);
}

/* CUPTI gives memory made by an untraced call the id of the thread's last call, which had
 * ended: no link to it. Memory made inside its call keeps the link. */
static void test_allocation_not_linked_to_an_ended_call(void)
{
	CUpti_ActivityMemory4 m = { .kind = CUPTI_ACTIVITY_KIND_MEMORY2 };
	const struct sc_rec_gpu_op *op;

	api_record(true, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 10, 7000, 7100, 500);
	m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.bytes = 2 << 20;
	m.correlationId = 500;
	m.timestamp = 8000;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&m);
	op = op_at(0);
	CHECK(op->corr_id == 0 && op->tid == 10);
	CHECK(cuda_activity_stale_links() == 1);
	m.timestamp = 7050;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&m);
	CHECK(op_at(0)->corr_id == 500);
	/* Stream-ordered memory may be made after its call returned: kept. */
	m.timestamp = 9000;
	m.isAsync = 1;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&m);
	CHECK(op_at(0)->corr_id == 500);
}

static void test_module_globals_apart(void)
{
	CUpti_ActivityMemory4 m = { .kind = CUPTI_ACTIVITY_KIND_MEMORY2 };

	m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC;
	m.bytes = 4;
	m.timestamp = 100;
	nout = 0;
	cuda_activity_translate((const CUpti_Activity *)&m);
	CHECK(op_at(0)->kind == SC_GPU_ALLOC && op_at(0)->copy_kind == SC_MEM_STATIC);
	CHECK(cuda_activity_static_allocations() == 1);
}

int main(void)
{
	cuda_api = &fake;
	test_kernels();
	test_replayed_kernel_times();
	test_copies();
	test_allocations();
	test_api_calls();
	test_region_text_keeps_the_category();
	test_waits_and_overhead();
	test_graph_launch();
	test_region_arguments();
	test_unified_memory_totals();
	test_correlation_table();
	test_driver_calls_of_the_runtime_left_out();
	test_driver_calls_of_the_program_shown();
	test_runtime_calls_outside_its_calls_left_out();
	test_allocation_not_linked_to_an_ended_call();
	test_module_globals_apart();
	return check_report("test_cuda_activity");
}
