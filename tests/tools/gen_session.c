/* SPDX-License-Identifier: MIT */
/*
 * gen_session: write a synthetic syscope session, for tests and benchmarks that need data
 * no CPU-only machine can record (GPU agents, streams, kernels, copies, allocations with
 * their host calls) or more of it than a test run would take time to make (10 million
 * events). The raw file follows src/store/format.h exactly, as the runtime writes it; the
 * counts are exact, so a test can compare every output with what was generated.
 *
 *   gen_session DIR [--pid N] [--ppid N] [--threads N] [--regions N] [--samples N]
 *               [--counters N] [--marks N] [--kernels N] [--copies N] [--allocs N]
 *               [--graphs N] [--graph-ops N] [--module-globals N] [--api-spans]
 *               [--kernels-in-region] [--cpu-reads]
 *               [--kernel-ns NS] [--rank R] [--kernel-metrics]
 *               [--idle-steps N] [--idle-causes LIST] [--idle-gap-ns NS] [--idle-overlap]
 *               [--idle-cputime]
 *               [--hostname NAME]
 *               [--start NS]
 *
 * Per thread: --regions pairs of nested regions ("outer" holding "inner" with two
 * arguments; with --cpu-reads a read of two CPU counters, "instructions" and "cycles", at
 * each of their boundaries, as --cpu-events writes them: 1 000 and 700 events a
 * microsecond since the previous read), --samples call-stack samples of this program's own functions
 * (gen_leaf_a/gen_leaf_b under gen_middle under gen_root; 1 ms of CPU each), --counters
 * values of a "queue depth" counter, --marks marks. On the main thread: --kernels
 * cudaLaunchKernel calls each followed by its kernel on GPU 0 ("_Z9vectorAddPKfS0_Pfi",
 * grid 256x1x1, block 128x1x1, --kernel-ns long, 50 us by default, one launch every 65 us),
 * --copies cudaMemcpy calls each with a 1 MiB host-to-device
 * copy, --allocs cudaMalloc/cudaFree pairs of 4 MiB, --graphs cudaGraphLaunch calls each
 * followed by two kernels carrying its correlation id, --graph-ops cudaGraphLaunch calls each
 * followed by one whole-graph operation "CUDA graph 3" (what --cuda-domains graph records,
 * 2 x --kernel-ns long), --module-globals allocations of 4 bytes no call made, of level
 * SC_MEM_STATIC (a module's __device__ variables). With --api-spans the cudaLaunchKernel
 * and cudaGraphLaunch calls are whole-region records (REGION_SPAN, as the CUDA tracer writes
 * them; a graph launch's after its kernels), and launched kernels do not name their thread
 * (readers find it through the correlation id). With --kernels-in-region the kernel
 * launches happen inside a user region "launch_all". With --kernel-metrics each launched
 * kernel i gets GPU hardware counters (GPU_METRICS, as --gpu-events records them):
 * dram__bytes_read.sum = 1 MB x (i + 1), sm__throughput.avg.pct_of_peak_sustained_elapsed =
 * 50 (even i) or 90 (odd i), gpu__time_duration.sum = --kernel-ns (NaN, not measured, for
 * kernel 0).
 *
 * GPU idle with known causes (test_why_idle.py): --idle-steps steps on the main thread, each
 * a cudaLaunchKernel call (5 us, the kernel starting 2 us in, --kernel-ns long, stream 7),
 * with --idle-overlap a second one launching a kernel on stream 8 from the middle of the
 * first to as far past its end (a step keeps the GPU busy 1.5 x --kernel-ns, not 2 x). After
 * each step but the last, --idle-gap-ns (1 ms by default) from the end of the step's work to
 * the next launch, spent as the next entry of --idle-causes says (cycled; comma-separated):
 * "sync" in cudaDeviceSynchronize (over the whole gap), "mpi" in MPI_Allreduce (category
 * mpi, comm 1, over the whole gap), "gil" waiting for the GIL (samples in take_gil),
 * "loader" in a data loader (samples in gen__getitem__ under gen_DataLoader_next, sleeping),
 * "compute" in host compute (samples in gen_leaf_a), "late" in host compute then a 10 us
 * MPI_Allreduce that ends 10 us before the launch (the straggler rank); "nccl" and
 * "nccl_late" the same with a region ncclAllReduce (category nccl). Sampled causes have
 * a wall-clock sample every 100 us of the gap (9 in a 1 ms gap), or with --idle-cputime a
 * CPU-time sample (100 us of CPU each); "offcpu" has no sample at all. So each gap is
 * --idle-gap-ns + 2 us long, of which 2 us are inside the launch call.
 */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../src/store/format.h"
#include "../unit/rawfile.h"

#define CHUNK_SIZE (256u * 1024)

struct writer {
	FILE *f;
	uint32_t chunks;
	int32_t tid;
	uint8_t chunk[CHUNK_SIZE];
	uint32_t used;
	uint64_t ts;
};

struct options {
	const char *dir;
	int32_t pid, ppid;
	unsigned threads;
	uint64_t regions, samples, counters, marks, kernels, copies, allocs, graphs, graph_ops,
		kernel_ns, module_globals;
	int api_spans;
	int kernels_in_region;
	uint64_t idle_steps, idle_gap_ns;
	const char *idle_causes;
	int idle_overlap, idle_cputime;
	int kernel_metrics;
	int cpu_reads;
	int rank;
	const char *hostname;
	uint64_t start;
};

static void die(const char *msg)
{
	fprintf(stderr, "gen_session: %s\n", msg);
	exit(2);
}

static void flush_chunk(struct writer *w)
{
	struct sc_chunk_header *h = (void *)w->chunk;

	if (w->used <= sizeof(*h))
		return;
	memset(w->chunk + w->used, 0, CHUNK_SIZE - w->used);
	h->magic = SC_CHUNK_MAGIC;
	h->index = w->chunks++;
	h->tid = w->tid;
	h->state = SC_CHUNK_CLOSED;
	h->used = w->used;
	if (fwrite(w->chunk, CHUNK_SIZE, 1, w->f) != 1)
		die("write failed");
	w->used = 0;
}

static void begin_chunk(struct writer *w)
{
	memset(w->chunk, 0, sizeof(struct sc_chunk_header));
	((struct sc_chunk_header *)w->chunk)->first_ns = w->ts;
	w->used = sizeof(struct sc_chunk_header);
}

/* Append a record: `fixed` is the whole struct (header filled here), then `tail`. */
static void put(struct writer *w, uint16_t type, void *fixed, uint32_t fixed_len, const void *tail,
		uint32_t tail_len)
{
	uint32_t size = sc_record_align(fixed_len + tail_len);
	struct sc_record *hdr = fixed;

	if (w->used + size > CHUNK_SIZE) {
		flush_chunk(w);
		begin_chunk(w);
	}
	hdr->size = size;
	hdr->type = type;
	memcpy(w->chunk + w->used, fixed, fixed_len);
	memcpy(w->chunk + w->used + fixed_len, tail, tail_len);
	memset(w->chunk + w->used + fixed_len + tail_len, 0, size - fixed_len - tail_len);
	w->used += size;
}

static void switch_thread(struct writer *w, int32_t tid)
{
	flush_chunk(w);
	w->tid = tid;
	begin_chunk(w);
}

/* The functions whose addresses the samples carry. */
__attribute__((noinline)) static uint64_t gen_leaf_a(uint64_t x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) static uint64_t gen_leaf_b(uint64_t x)
{
	return x * 5 + 2;
}

__attribute__((noinline)) static uint64_t gen_middle(uint64_t x)
{
	return gen_leaf_a(x) + gen_leaf_b(x);
}

__attribute__((noinline)) static uint64_t gen_root(uint64_t x)
{
	return gen_middle(x) + 1;
}

/* What the idle gaps' samples show (--idle-causes). */
__attribute__((noinline)) static uint64_t take_gil(uint64_t x)
{
	return x * 7 + 3;
}

__attribute__((noinline)) static uint64_t gen_time_sleep(uint64_t x)
{
	return x * 11 + 5;
}

__attribute__((noinline)) static uint64_t gen__getitem__(uint64_t x)
{
	return gen_time_sleep(x) + 1;
}

__attribute__((noinline)) static uint64_t gen_DataLoader_next(uint64_t x)
{
	return gen__getitem__(x) + 1;
}

struct self_module {
	struct sc_rec_module rec;
	char path[PATH_MAX];
};

static int find_main(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct self_module *m = ctx;

	(void)size;
	if (info->dlpi_name && info->dlpi_name[0])
		return 0; /* the main program comes first, with an empty name */
	m->rec.base = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum && m->rec.nsegments < SC_MAX_SEGMENTS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		struct sc_rec_module_segment *s = &m->rec.seg[m->rec.nsegments];

		if (ph->p_type != PT_LOAD)
			continue;
		s->vaddr = ph->p_vaddr;
		s->memsz = ph->p_memsz;
		s->offset = ph->p_offset;
		s->flags = ph->p_flags;
		m->rec.nsegments++;
	}
	return 1;
}

static void write_module(struct writer *w)
{
	static struct self_module m;
	ssize_t n = readlink("/proc/self/exe", m.path, sizeof(m.path) - 1);

	if (n <= 0)
		die("cannot read /proc/self/exe");
	m.path[n] = '\0';
	dl_iterate_phdr(find_main, &m);
	m.rec.ts = w->ts;
	m.rec.path_len = (uint32_t)n + 1;
	m.rec.hdr.flags = SC_MODULE_AT_START | SC_MODULE_MAIN;
	put(w, SC_REC_MODULE_LOAD, &m.rec, sizeof(m.rec), m.path, m.rec.path_len);
}

static void write_string(struct writer *w, uint32_t id, const char *text)
{
	struct sc_rec_string r = { .ts = w->ts, .id = id, .len = (uint32_t)strlen(text) + 1 };

	put(w, SC_REC_STRING, &r, sizeof(r), text, r.len);
}

/* A region or mark: name, category, then (type, name, value) argument triples. */
static void write_region(struct writer *w, uint16_t type, const char *name, const char *cat,
			 const char *args, uint32_t args_len, uint32_t nargs, uint64_t corr)
{
	char buf[512];
	struct sc_rec_region r = { .ts = w->ts, .nargs = nargs, .corr_id = corr };

	r.name_len = (uint32_t)strlen(name) + 1;
	r.cat_len = (uint32_t)strlen(cat) + 1;
	r.args_len = args_len;
	memcpy(buf, name, r.name_len);
	memcpy(buf + r.name_len, cat, r.cat_len);
	memcpy(buf + r.name_len + r.cat_len, args, args_len);
	put(w, type, &r, sizeof(r), buf, r.name_len + r.cat_len + args_len);
}

static void write_end(struct writer *w)
{
	struct sc_rec_region_end e = { .ts = w->ts };

	put(w, SC_REC_REGION_END, &e, sizeof(e), NULL, 0);
}

/* With --cpu-reads: what the thread's two counters counted since `*last` (its previous read). */
static void write_pmc_read(struct writer *w, const struct options *o, uint64_t *last)
{
	struct sc_rec_pmc_read r = { .ts = w->ts, .valid = 3 };
	uint64_t us = (w->ts - *last) / 1000;

	if (!o->cpu_reads)
		return;
	r.values[0] = us * 1000;
	r.values[1] = us * 700;
	put(w, SC_REC_PMC_READ, &r, sizeof(r), NULL, 0);
	*last = w->ts;
}

/* A whole region of thread `tid`, from `w->ts` to `end`, without arguments. */
static void write_span(struct writer *w, const char *name, const char *cat, uint64_t corr,
		       uint64_t end, int32_t tid)
{
	char buf[256];
	struct sc_rec_region_span sp = { .r = { .ts = w->ts, .corr_id = corr },
					 .end = end,
					 .tid = tid };

	sp.r.name_len = (uint32_t)strlen(name) + 1;
	sp.r.cat_len = (uint32_t)strlen(cat) + 1;
	memcpy(buf, name, sp.r.name_len);
	memcpy(buf + sp.r.name_len, cat, sp.r.cat_len);
	put(w, SC_REC_REGION_SPAN, &sp, sizeof(sp), buf, sp.r.name_len + sp.r.cat_len);
}

static void write_sample(struct writer *w, uint64_t cpu_ns, uint64_t i)
{
	struct {
		struct sc_rec_sample s;
		uint64_t frames[3];
	} r = { .s = { .ts = w->ts, .cpu_ns = cpu_ns, .kind = SC_SAMPLE_CPUTIME, .nframes = 3 } };

	/* Exact PC inside a leaf, then return addresses inside its callers. */
	r.frames[0] = (uint64_t)(uintptr_t)(i % 4 == 3 ? gen_leaf_b : gen_leaf_a) + 4;
	r.frames[1] = (uint64_t)(uintptr_t)gen_middle + 8;
	r.frames[2] = (uint64_t)(uintptr_t)gen_root + 8;
	put(w, SC_REC_SAMPLE, &r, sizeof(r), NULL, 0);
}

/* A wall-clock (or CPU-time) sample whose stack is `frames` (leaf first). */
static void write_idle_sample(struct writer *w, const uint64_t *frames, uint32_t n, bool cpu)
{
	static uint64_t cpu_ns;
	struct {
		struct sc_rec_sample s;
		uint64_t frames[4];
	} r = { .s = { .ts = w->ts,
		       .cpu_ns = cpu_ns += 100000,
		       .kind = cpu ? SC_SAMPLE_CPUTIME : SC_SAMPLE_REALTIME,
		       .nframes = n } };

	memcpy(r.frames, frames, n * sizeof(*frames));
	put(w, SC_REC_SAMPLE, &r, sizeof(r.s) + n * sizeof(*frames), NULL, 0);
}

static void write_gpu_op(struct writer *w, struct sc_rec_gpu_op *op)
{
	put(w, SC_REC_GPU_OP, op, sizeof(*op), NULL, 0);
}

/* A 5 us API call `name` launching `op` (starting 2 us into the call, `ns` long): a region
 * of the thread's own, or with --api-spans a whole span and an op that does not name its
 * thread (as the CUDA tracer writes them). */
static void launch(struct writer *w, const struct options *o, const char *name,
		   struct sc_rec_gpu_op *op, uint64_t ns, int32_t tid)
{
	op->start = w->ts + 2000;
	op->end = op->start + ns;
	if (o->api_spans) {
		write_span(w, name, "CUDA_RUNTIME_API", op->corr_id, w->ts + 5000, tid);
		op->tid = 0;
		w->ts += 5000;
	} else {
		write_region(w, SC_REC_REGION_BEGIN, name, "CUDA_RUNTIME_API", "", 0, 0,
			     op->corr_id);
		w->ts += 5000;
		write_end(w);
	}
	write_gpu_op(w, op);
}

static const char metric_names[] = "dram__bytes_read.sum\0"
				   "sm__throughput.avg.pct_of_peak_sustained_elapsed\0"
				   "gpu__time_duration.sum";

static void write_metrics(struct writer *w, const struct options *o, uint64_t corr, uint64_t i)
{
	struct sc_rec_gpu_metrics r = { .ts = w->ts, .corr_id = corr, .count = 3 };
	double v[3] = { 1e6 * (double)(i + 1), i % 2 ? 90 : 50,
			i ? (double)o->kernel_ns : __builtin_nan("") };

	put(w, SC_REC_GPU_METRICS, &r, sizeof(r), v, sizeof(v));
}

static void write_gpu(struct writer *w, const struct options *o, int32_t tid)
{
	struct sc_rec_gpu_agent a = { .ts = w->ts, .id = 0, .type = SC_AGENT_GPU };
	struct sc_rec_gpu_stream s = { .ts = w->ts, .stream = 7, .agent = 0 };
	static const char names[] = "NVIDIA H200\0NVIDIA";
	uint64_t corr = 0;

	if (!o->kernels && !o->copies && !o->allocs && !o->graphs && !o->graph_ops &&
	    !o->module_globals && !o->idle_steps)
		return;
	memset(a.uuid, 0xab, sizeof(a.uuid));
	a.memory_bytes = 143771ull << 20;
	a.multiprocessors = 132;
	a.compute_major = 9;
	a.pci_bus = 0x19;
	a.name_len = 12;
	a.vendor_len = 7;
	put(w, SC_REC_GPU_AGENT, &a, sizeof(a), names, sizeof(names));
	s.name_len = 9;
	put(w, SC_REC_GPU_STREAM, &s, sizeof(s), "Stream 7", 9);
	write_string(w, 1, "_Z9vectorAddPKfS0_Pfi");
	if (o->kernel_metrics) {
		struct sc_rec_gpu_metrics m = { .ts = w->ts, .count = 3 };

		m.hdr.flags = SC_GPU_METRICS_NAMES;
		put(w, SC_REC_GPU_METRICS, &m, sizeof(m), metric_names, sizeof(metric_names));
	}
	if (o->kernels_in_region)
		write_region(w, SC_REC_REGION_BEGIN, "launch_all", "user", "", 0, 0, 0);
	for (uint64_t i = 0; i < o->kernels; i++) {
		struct sc_rec_gpu_op k = { .kind = SC_GPU_KERNEL,
					   .corr_id = ++corr,
					   .stream = 7,
					   .tid = tid,
					   .name_id = 1,
					   .grid = { 256, 1, 1 },
					   .block = { 128, 1, 1 },
					   .shared_dynamic = 1024,
					   .registers = 32 };

		launch(w, o, "cudaLaunchKernel", &k, o->kernel_ns, tid);
		if (o->kernel_metrics)
			write_metrics(w, o, k.corr_id, i);
		w->ts += 60000;
	}
	if (o->kernels_in_region)
		write_end(w);
	for (uint64_t i = 0; i < o->graphs; i++) {
		struct sc_rec_gpu_op k = { .kind = SC_GPU_KERNEL,
					   .corr_id = ++corr,
					   .stream = 7,
					   .tid = tid,
					   .name_id = 1,
					   .grid = { 256, 1, 1 },
					   .block = { 128, 1, 1 } };

		uint64_t call = w->ts;

		if (!o->api_spans) {
			write_region(w, SC_REC_REGION_BEGIN, "cudaGraphLaunch", "CUDA_RUNTIME_API",
				     "", 0, 0, corr);
			w->ts += 5000;
			write_end(w);
		} else {
			w->ts += 5000;
		}
		for (int node = 0; node < 2; node++) {
			k.start = w->ts + 2000 + (uint64_t)node * (o->kernel_ns + 1000);
			k.end = k.start + o->kernel_ns;
			write_gpu_op(w, &k);
		}
		if (o->api_spans) { /* as CUPTI may deliver them: the work before the call */
			uint64_t now = w->ts;

			w->ts = call;
			write_span(w, "cudaGraphLaunch", "CUDA_RUNTIME_API", corr, call + 5000,
				   tid);
			w->ts = now;
		}
		w->ts += 2 * o->kernel_ns + 10000;
	}
	if (o->graph_ops)
		write_string(w, 2, "CUDA graph 3");
	for (uint64_t i = 0; i < o->graph_ops; i++) {
		struct sc_rec_gpu_op g = { .kind = SC_GPU_GRAPH,
					   .corr_id = ++corr,
					   .stream = 7,
					   .tid = tid,
					   .name_id = 2 };

		launch(w, o, "cudaGraphLaunch", &g, 2 * o->kernel_ns, tid);
		w->ts += 2 * o->kernel_ns + 10000;
	}
	for (uint64_t i = 0; i < o->copies; i++) {
		struct sc_rec_gpu_op c = { .kind = SC_GPU_COPY,
					   .copy_kind = SC_COPY_HTOD,
					   .corr_id = ++corr,
					   .stream = 7,
					   .tid = tid,
					   .bytes = 1 << 20,
					   .src_agent = SC_AGENT_HOST,
					   .dst_agent = 0 };

		write_region(w, SC_REC_REGION_BEGIN, "cudaMemcpy", "CUDA_RUNTIME_API", "", 0, 0,
			     corr);
		c.start = w->ts + 1000;
		c.end = c.start + 30000;
		w->ts += 40000;
		write_end(w);
		write_gpu_op(w, &c);
		w->ts += 1000;
	}
	for (uint64_t i = 0; i < o->allocs; i++) {
		struct sc_rec_gpu_op m = { .kind = SC_GPU_ALLOC,
					   .tid = tid,
					   .bytes = 4 << 20,
					   .address = 0x7f0000000000ull + (i << 24) };

		write_region(w, SC_REC_REGION_BEGIN, "cudaMalloc", "CUDA_RUNTIME_API", "", 0, 0,
			     ++corr);
		m.corr_id = corr;
		m.start = m.end = w->ts + 500;
		w->ts += 1000;
		write_end(w);
		write_gpu_op(w, &m);
		write_region(w, SC_REC_REGION_BEGIN, "cudaFree", "CUDA_RUNTIME_API", "", 0, 0,
			     ++corr);
		m.kind = SC_GPU_FREE;
		m.corr_id = corr;
		m.start = m.end = w->ts + 500;
		w->ts += 1000;
		write_end(w);
		write_gpu_op(w, &m);
	}
	for (uint64_t i = 0; i < o->module_globals; i++) {
		struct sc_rec_gpu_op g = { .kind = SC_GPU_ALLOC,
					   .bytes = 4,
					   .address = 0x7e0000000000ull + (i << 8),
					   .copy_kind = SC_MEM_STATIC,
					   .start = w->ts,
					   .end = w->ts };

		write_gpu_op(w, &g);
		w->ts += 100;
	}
}

/* The stack (leaf first) of a sample in a gap of `cause`, or 0 frames for an unsampled one. */
static uint32_t idle_stack(const char *cause, uint64_t *f)
{
	if (!strcmp(cause, "gil")) {
		f[0] = (uint64_t)(uintptr_t)take_gil + 4;
		f[1] = (uint64_t)(uintptr_t)gen_root + 8;
		return 2;
	}
	if (!strcmp(cause, "loader")) {
		f[0] = (uint64_t)(uintptr_t)gen_time_sleep + 4;
		f[1] = (uint64_t)(uintptr_t)gen__getitem__ + 8;
		f[2] = (uint64_t)(uintptr_t)gen_DataLoader_next + 8;
		f[3] = (uint64_t)(uintptr_t)gen_root + 8;
		return 4;
	}
	if (!strcmp(cause, "compute") || !strcmp(cause, "late") || !strcmp(cause, "nccl_late")) {
		f[0] = (uint64_t)(uintptr_t)gen_leaf_a + 4;
		f[1] = (uint64_t)(uintptr_t)gen_middle + 8;
		f[2] = (uint64_t)(uintptr_t)gen_root + 8;
		return 3;
	}
	if (strcmp(cause, "sync") && strcmp(cause, "mpi") && strcmp(cause, "nccl") &&
	    strcmp(cause, "offcpu"))
		die("--idle-causes: unknown cause (valid: sync, mpi, nccl, gil, loader, compute, "
		    "late, nccl_late, offcpu)");
	return 0;
}

static void idle_mpi(struct writer *w, uint64_t end, bool nccl)
{
	static const char args[] = "u\0comm\0001";

	if (nccl)
		write_region(w, SC_REC_REGION_BEGIN, "ncclAllReduce", "nccl", "", 0, 0, 0);
	else
		write_region(w, SC_REC_REGION_BEGIN, "MPI_Allreduce", "mpi", args, sizeof(args), 1,
			     0);
	w->ts = end;
	write_end(w);
}

/* One gap of --idle-gap-ns from w->ts (the end of the step's work), spent on `cause`. */
static void idle_gap(struct writer *w, const struct options *o, const char *cause)
{
	uint64_t start = w->ts, end = start + o->idle_gap_ns, f[4];
	uint32_t n = idle_stack(cause, f);

	if (!strcmp(cause, "sync")) {
		write_region(w, SC_REC_REGION_BEGIN, "cudaDeviceSynchronize", "CUDA_RUNTIME_API",
			     "", 0, 0, 0);
		w->ts = end;
		write_end(w);
	} else if (!strcmp(cause, "mpi") || !strcmp(cause, "nccl")) {
		idle_mpi(w, end, cause[0] == 'n');
	}
	for (w->ts = start + 100000; n && w->ts + 20000 <= end; w->ts += 100000)
		write_idle_sample(w, f, n, o->idle_cputime);
	if (!strcmp(cause, "late") || !strcmp(cause, "nccl_late")) {
		w->ts = end - 20000;
		idle_mpi(w, end - 10000, cause[0] == 'n');
	}
	w->ts = end;
}

static void write_idle_steps(struct writer *w, const struct options *o, int32_t tid)
{
	struct sc_rec_sampler sm = { .ts = w->ts,
				     .period_ns = 100000,
				     .kind = o->idle_cputime ? SC_SAMPLE_CPUTIME
							     : SC_SAMPLE_REALTIME,
				     .mechanism = SC_SAMPLER_PERF_TASK_CLOCK };
	struct sc_rec_gpu_stream s8 = { .ts = w->ts, .stream = 8, .agent = 0, .name_len = 9 };
	const char *causes = o->idle_causes ? o->idle_causes : "sync";
	uint64_t corr = 1000000, k = o->kernel_ns, ncauses = 1;

	for (const char *c = causes; (c = strchr(c, ',')); c++)
		ncauses++;
	put(w, SC_REC_SAMPLER, &sm, sizeof(sm), NULL, 0);
	if (o->idle_overlap)
		put(w, SC_REC_GPU_STREAM, &s8, sizeof(s8), "Stream 8", 9);
	for (uint64_t i = 0; i < o->idle_steps; i++) {
		struct sc_rec_gpu_op op = { .kind = SC_GPU_KERNEL,
					    .corr_id = ++corr,
					    .stream = 7,
					    .tid = tid,
					    .name_id = 1 };
		uint64_t t = w->ts, end = t + 2000 + k;
		char cause[32];
		const char *c = causes;

		launch(w, o, "cudaLaunchKernel", &op, k, tid);
		if (o->idle_overlap) {
			op.corr_id = ++corr;
			op.stream = 8;
			op.start = t + 2000 + k / 2;
			op.end = end = op.start + k;
			write_region(w, SC_REC_REGION_BEGIN, "cudaLaunchKernel", "CUDA_RUNTIME_API",
				     "", 0, 0, op.corr_id);
			w->ts += 5000;
			write_end(w);
			write_gpu_op(w, &op);
		}
		if (i + 1 == o->idle_steps)
			break;
		for (uint64_t skip = i % ncauses; skip; skip--) /* the (i mod n)-th entry */
			c = strchr(c, ',') + 1;
		snprintf(cause, sizeof(cause), "%.*s", (int)strcspn(c, ","), c);
		w->ts = end;
		idle_gap(w, o, cause);
	}
}

static void write_thread(struct writer *w, const struct options *o, unsigned index)
{
	int32_t tid = o->pid + (int32_t)index;
	struct sc_rec_thread tb = { .ts = w->ts, .tid = tid, .index = index };
	struct sc_rec_thread_name tn = { .ts = w->ts };
	struct sc_rec_sampler sm = { .ts = w->ts,
				     .period_ns = 1000000,
				     .kind = SC_SAMPLE_CPUTIME,
				     .mechanism = SC_SAMPLER_PERF_TASK_CLOCK };
	struct sc_rec_counter_track ct = { .ts = w->ts, .id = 1, .name_len = 12, .unit_len = 6 };
	static const char inner_args[] = "i\0iteration\0"
					 "0\0s\0phase\0compute";
	uint64_t cpu = 0, last_read = w->ts;

	switch_thread(w, tid);
	put(w, SC_REC_THREAD_BEGIN, &tb, sizeof(tb), NULL, 0);
	snprintf(tn.name, sizeof(tn.name), index ? "worker-%u" : "gen-main", index % 1000);
	put(w, SC_REC_THREAD_NAME, &tn, sizeof(tn), NULL, 0);
	if (o->samples)
		put(w, SC_REC_SAMPLER, &sm, sizeof(sm), NULL, 0);
	if (!index) {
		if (o->counters)
			put(w, SC_REC_COUNTER_TRACK, &ct, sizeof(ct), "queue depth\0items", 18);
		write_gpu(w, o, tid);
		if (o->idle_steps)
			write_idle_steps(w, o, tid);
	}
	for (uint64_t i = 0; i < o->regions; i++) {
		write_pmc_read(w, o, &last_read);
		write_region(w, SC_REC_REGION_BEGIN, "outer", "user", "", 0, 0, 0);
		w->ts += 1000;
		write_pmc_read(w, o, &last_read);
		write_region(w, SC_REC_REGION_BEGIN, "inner", "user", inner_args,
			     sizeof(inner_args), 2, 0);
		w->ts += 3000;
		write_pmc_read(w, o, &last_read);
		write_end(w);
		w->ts += 1000;
		write_pmc_read(w, o, &last_read);
		write_end(w);
		w->ts += 500;
	}
	for (uint64_t i = 0; i < o->marks; i++) {
		write_region(w, SC_REC_MARK, "checkpoint", "user", "", 0, 0, 0);
		w->ts += 700;
	}
	for (uint64_t i = 0; i < o->counters; i++) {
		struct sc_rec_counter c = { .ts = w->ts, .track = 1, .value = (double)(i % 17) };

		put(w, SC_REC_COUNTER, &c, sizeof(c), NULL, 0);
		w->ts += 900;
	}
	for (uint64_t i = 0; i < o->samples; i++) {
		cpu += 1000000;
		w->ts += 1000000;
		write_sample(w, cpu, i);
	}
	w->ts += 1000;
	tb.ts = w->ts;
	tb.cpu_ns = cpu;
	put(w, SC_REC_THREAD_END, &tb, sizeof(tb), NULL, 0);
}

static void write_process(struct writer *w, const struct options *o, char *exe)
{
	struct sc_rec_process p = { .ts = w->ts, .pid = o->pid, .ppid = o->ppid, .uid = getuid() };
	char tail[PATH_MAX + 64], env[128];
	char cwd[] = "/";
	uint32_t n = 0, envlen;
	struct sc_record hdr = { 0 };
	static const char settings[] = "SYSCOPE_SAMPLING_FREQ=1000";

	p.exe_len = (uint32_t)strlen(exe) + 1;
	memcpy(tail, exe, p.exe_len);
	n = p.exe_len;
	memcpy(tail + n, exe, p.exe_len); /* argv: the program alone */
	memcpy(tail + n + p.exe_len, "--synthetic", 12);
	p.cmdline_len = p.exe_len + 12;
	n += p.cmdline_len;
	memcpy(tail + n, cwd, sizeof(cwd));
	p.cwd_len = sizeof(cwd);
	n += p.cwd_len;
	put(w, SC_REC_PROCESS, &p, sizeof(p), tail, n);
	envlen = (uint32_t)snprintf(env, sizeof(env), "PATH=/usr/bin") + 1;
	if (o->rank >= 0)
		envlen += (uint32_t)snprintf(env + envlen, sizeof(env) - envlen,
					     "OMPI_COMM_WORLD_RANK=%d", o->rank) +
			  1;
	put(w, SC_REC_ENVIRON, &hdr, sizeof(hdr), env, envlen);
	put(w, SC_REC_SETTINGS, &hdr, sizeof(hdr), settings, sizeof(settings));
}

static uint64_t number(const char *flag, const char *s)
{
	char *end;
	unsigned long long v = strtoull(s ? s : "", &end, 10);

	if (!s || !*s || *end) {
		fprintf(stderr, "gen_session: %s wants a number\n", flag);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct options o = { .pid = 4242,
			     .ppid = 1,
			     .threads = 1,
			     .rank = -1,
			     .hostname = "synthetic-node",
			     .kernel_ns = 50000,
			     .idle_gap_ns = 1000000 };
	static struct writer w;
	struct sc_file_header h;
	char path[PATH_MAX], exe[PATH_MAX];
	struct timespec now;
	ssize_t n;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = argv[i + 1];

		if (a[0] != '-') {
			o.dir = a;
			continue;
		}
		if (!strcmp(a, "--kernels-in-region")) {
			o.kernels_in_region = 1;
			continue;
		}
		if (!strcmp(a, "--kernel-metrics")) {
			o.kernel_metrics = 1;
			continue;
		}
		if (!strcmp(a, "--api-spans")) { /* an option without a value */
			o.api_spans = 1;
			continue;
		}
		if (!strcmp(a, "--idle-overlap")) {
			o.idle_overlap = 1;
			continue;
		}
		if (!strcmp(a, "--cpu-reads")) {
			o.cpu_reads = 1;
			continue;
		}
		if (!strcmp(a, "--idle-cputime")) {
			o.idle_cputime = 1;
			continue;
		}
		i++;
		if (!strcmp(a, "--pid"))
			o.pid = (int32_t)number(a, v);
		else if (!strcmp(a, "--ppid"))
			o.ppid = (int32_t)number(a, v);
		else if (!strcmp(a, "--threads"))
			o.threads = (unsigned)number(a, v);
		else if (!strcmp(a, "--regions"))
			o.regions = number(a, v);
		else if (!strcmp(a, "--samples"))
			o.samples = number(a, v);
		else if (!strcmp(a, "--counters"))
			o.counters = number(a, v);
		else if (!strcmp(a, "--marks"))
			o.marks = number(a, v);
		else if (!strcmp(a, "--kernels"))
			o.kernels = number(a, v);
		else if (!strcmp(a, "--graphs"))
			o.graphs = number(a, v);
		else if (!strcmp(a, "--graph-ops"))
			o.graph_ops = number(a, v);
		else if (!strcmp(a, "--copies"))
			o.copies = number(a, v);
		else if (!strcmp(a, "--allocs"))
			o.allocs = number(a, v);
		else if (!strcmp(a, "--module-globals"))
			o.module_globals = number(a, v);
		else if (!strcmp(a, "--kernel-ns"))
			o.kernel_ns = number(a, v);
		else if (!strcmp(a, "--idle-steps"))
			o.idle_steps = number(a, v);
		else if (!strcmp(a, "--idle-gap-ns"))
			o.idle_gap_ns = number(a, v);
		else if (!strcmp(a, "--idle-causes") && v)
			o.idle_causes = v;
		else if (!strcmp(a, "--rank"))
			o.rank = (int)number(a, v);
		else if (!strcmp(a, "--start"))
			o.start = number(a, v);
		else if (!strcmp(a, "--hostname") && v)
			o.hostname = v;
		else
			die("unknown option (see the comment at the top of gen_session.c)");
	}
	if (!o.dir || !o.threads)
		die("usage: gen_session DIR [options]");
	snprintf(path, sizeof(path), "%s", o.dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/raw", o.dir);
	if (mkdir(path, 0755) && errno != EEXIST)
		die("cannot create the session folder");
	snprintf(path, sizeof(path), "%s/raw/%d.sraw", o.dir, (int)o.pid);
	w.f = fopen(path, "wb");
	if (!w.f)
		die("cannot create the raw file");
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	clock_gettime(CLOCK_MONOTONIC, &now);
	w.ts = o.start ? o.start : (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;

	test_file_header(&h, SC_FORMAT_VERSION, CHUNK_SIZE, o.pid);
	h.clock_id = CLOCK_MONOTONIC;
	h.features = SC_FEATURE_FRAMES_ARE_RETURN_ADDRS;
	h.ppid = o.ppid;
	h.start_ns = w.ts;
	clock_gettime(CLOCK_REALTIME, &now);
	h.start_realtime_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	snprintf(h.hostname, sizeof(h.hostname), "%s", o.hostname);
	if (fwrite(&h, sizeof(h), 1, w.f) != 1)
		die("write failed");

	switch_thread(&w, o.pid);
	write_process(&w, &o, exe);
	if (o.cpu_reads) {
		struct sc_rec_pmc_events pe = { .ts = w.ts, .count = 2, .names_len = 20 };

		put(&w, SC_REC_PMC_EVENTS, &pe, sizeof(pe), "instructions\0cycles", 20);
	}
	write_module(&w);
	for (unsigned t = 0; t < o.threads; t++)
		write_thread(&w, &o, t);
	flush_chunk(&w);

	h.chunks_claimed = w.chunks;
	h.end_ns = w.ts + 1000;
	h.end_reason = SC_END_EXIT;
	h.threads_seen = o.threads;
	if (fseek(w.f, 0, SEEK_SET) || fwrite(&h, sizeof(h), 1, w.f) != 1 || fclose(w.f))
		die("write failed");
	return 0;
}
