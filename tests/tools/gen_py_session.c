/* SPDX-License-Identifier: MIT */
/*
 * gen_py_session: write a synthetic session of a Python program, as the runtime records
 * one (src/store/format.h), with exact counts, for the reader's tests while no interpreter
 * is needed (tests/integration/test_python_profiles.py says what each output must show).
 *
 *   gen_py_session DIR [--pid N] [--damaged] [--gpu]
 *
 * The "interpreter" is libgen_py_interp.so (its functions carry CPython's names); this
 * program's own functions are the native modules (gen_deflate stands for zlib). Code
 * objects (3.11 line tables; instruction index i of a code object is on line
 * first_line + i + 1): 1 <module> (/app/train.py:1), 2 Trainer.step (/app/train.py:10),
 * 3 Model.forward (/app/model.py:20), 4 worker (/app/train.py:30).
 *
 * Main thread (CPU time, 1 ms each): 40 samples <module>:5 > Trainer.step:13 >
 * Model.forward:22 > gen_deflate (through zlib_compress); 20 in Model.forward:25 itself
 * (the leaf is PyNumber_Add); 5 with the native stack cut below the inner eval frame
 * (SC_SAMPLE_TRUNCATED: <module> has no native eval frame left). Then 4 traced calls of
 * Trainer.step (1, 2, 3 and 6 ms), each around one call of Model.forward (half as long).
 * Worker thread (wall time, 1 ms each): 30 samples in worker:32 waiting for the GIL (in
 * take_gil under PyEval_RestoreThread under time_sleep), 10 in worker:36 > gen_deflate
 * without the GIL, 10 in worker:38 holding it. Model.forward's PY_CODE record is on the
 * worker thread, after the main thread's samples that name it. With --damaged, the worker
 * thread also has 3 samples whose Python part claims more frames than the record holds, 2
 * whose Python walk was cut at its bound and 1 whose walk stopped at a bad code object (all
 * three kinds in worker:32, holding the GIL).
 *
 * With --gpu, CUDA calls from Python (PY_CALLSITE) and the GPU ops they started, joined by
 * correlation id: on the main thread 5 kernel launches from Model.forward:22 (2 ms of kernel
 * each), 3 from Model.forward:25 (1 ms each), 2 copies from Trainer.step:13 (2.5 ms each),
 * all under <module>:5 > Trainer.step:13, and one launch whose work has no device time; on
 * the worker 2 launches from worker:36 (1 ms each). A kernel of 4 ms has no call site (a
 * native launch). So 20 ms of GPU time from 12 calls: model.py:22 10 ms, train.py:13 5 ms,
 * model.py:25 3 ms, train.py:36 2 ms. Each call is also its API region (cudaLaunchKernel or
 * cudaMemcpyAsync, 5 us, the same correlation id).
 */
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../src/store/format.h"
#include "../unit/rawfile.h"
#include "gen_py_interp.h"

#define CHUNK_SIZE (64u * 1024)

static struct {
	FILE *f;
	uint32_t chunks, used;
	int32_t tid;
	uint64_t ts, cpu;
	uint8_t chunk[CHUNK_SIZE];
} w;

static void die(const char *msg)
{
	fprintf(stderr, "gen_py_session: %s\n", msg);
	exit(2);
}

static void flush_chunk(void)
{
	struct sc_chunk_header *h = (void *)w.chunk;

	if (w.used <= sizeof(*h))
		return;
	memset(w.chunk + w.used, 0, CHUNK_SIZE - w.used);
	h->magic = SC_CHUNK_MAGIC;
	h->index = w.chunks++;
	h->tid = w.tid;
	h->state = SC_CHUNK_CLOSED;
	h->used = w.used;
	if (fwrite(w.chunk, CHUNK_SIZE, 1, w.f) != 1)
		die("write failed");
}

static void switch_thread(int32_t tid)
{
	flush_chunk();
	w.tid = tid;
	memset(w.chunk, 0, sizeof(struct sc_chunk_header));
	((struct sc_chunk_header *)w.chunk)->first_ns = w.ts;
	w.used = sizeof(struct sc_chunk_header);
}

/* Append a record: `fixed` (header filled here), then `tail`. */
static void put(uint16_t type, uint16_t flags, void *fixed, uint32_t fixed_len, const void *tail,
		uint32_t tail_len)
{
	uint32_t size = sc_record_align(fixed_len + tail_len);
	struct sc_record *hdr = fixed;

	if (w.used + size > CHUNK_SIZE)
		die("chunk full");
	hdr->size = size;
	hdr->type = type;
	hdr->flags = flags;
	memcpy(w.chunk + w.used, fixed, fixed_len);
	if (tail_len)
		memcpy(w.chunk + w.used + fixed_len, tail, tail_len);
	memset(w.chunk + w.used + fixed_len + tail_len, 0, size - fixed_len - tail_len);
	w.used += size;
}

/* Stand-ins for native modules: zlib's deflate, a thread's start, a futex wait. */
__attribute__((noinline)) static uint64_t gen_deflate(uint64_t x)
{
	return x * 7 + 3;
}

__attribute__((noinline)) static uint64_t gen_thread_root(uint64_t x)
{
	return gen_deflate(x) + 1;
}

/* The program's main, as the outermost native frame of the main thread. */
__attribute__((noinline)) static uint64_t gen_main(uint64_t x)
{
	return x * 13 + 1;
}

__attribute__((noinline)) static uint64_t gen_futex_wait(uint64_t x)
{
	return x * 11 + 5;
}

struct module_rec {
	struct sc_rec_module rec;
	char path[PATH_MAX];
};

struct find {
	const char *want; /* "" for the program, else a part of the library's name */
	struct module_rec *m;
};

static int find_module(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct find *f = ctx;
	struct sc_rec_module *r = &f->m->rec;

	(void)size;
	if (*f->want ? !strstr(info->dlpi_name, f->want) : info->dlpi_name[0] != '\0')
		return 0;
	r->base = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum && r->nsegments < SC_MAX_SEGMENTS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		struct sc_rec_module_segment *s = &r->seg[r->nsegments];

		if (ph->p_type != PT_LOAD)
			continue;
		s->vaddr = ph->p_vaddr;
		s->memsz = ph->p_memsz;
		s->offset = ph->p_offset;
		s->flags = ph->p_flags;
		r->nsegments++;
	}
	if (*f->want)
		snprintf(f->m->path, sizeof(f->m->path), "%s", info->dlpi_name);
	return 1;
}

static void write_module(const char *want, const char *exe)
{
	static struct module_rec m;
	struct find f = { want, &m };

	memset(&m, 0, sizeof(m));
	snprintf(m.path, sizeof(m.path), "%s", exe);
	if (!dl_iterate_phdr(find_module, &f))
		die("module not found");
	m.rec.ts = w.ts;
	m.rec.path_len = (uint32_t)strlen(m.path) + 1;
	put(SC_REC_MODULE_LOAD, SC_MODULE_AT_START | (*want ? 0 : SC_MODULE_MAIN), &m.rec,
	    sizeof(m.rec), m.path, m.rec.path_len);
}

static void write_process(int32_t pid, const char *exe)
{
	struct sc_rec_process p = { .ts = w.ts, .pid = pid, .ppid = 1, .uid = getuid() };
	char tail[PATH_MAX * 2 + 64];
	uint32_t n;

	p.exe_len = (uint32_t)strlen(exe) + 1;
	memcpy(tail, exe, p.exe_len);
	memcpy(tail + p.exe_len, "python3\0train.py", 17);
	p.cmdline_len = 17;
	n = p.exe_len + p.cmdline_len;
	memcpy(tail + n, "/", 2);
	p.cwd_len = 2;
	put(SC_REC_PROCESS, 0, &p, sizeof(p), tail, n + 2);
}

/* A code object whose instruction i is on line first + i + 1 (3.11's one-line entries). */
static void write_code(uint32_t id, int32_t first, const char *file, const char *qualname)
{
	struct sc_rec_py_code c = { .id = id,
				    .first_line = first,
				    .address = 0x7f0000001000ull + id * 0x100,
				    .fingerprint = id * 77,
				    .version = 0x030b };
	uint8_t tail[512];
	uint32_t n = 0;

	c.filename_len = (uint16_t)strlen(file);
	c.qualname_len = (uint16_t)strlen(qualname);
	memcpy(tail, file, c.filename_len);
	memcpy(tail + c.filename_len, qualname, c.qualname_len);
	n = c.filename_len + c.qualname_len;
	for (int i = 0; i < 16; i++) { /* code 11: one code unit, line + 1, two column bytes */
		tail[n++] = 0x80 | 11 << 3;
		tail[n++] = 1;
		tail[n++] = 2;
	}
	c.linetable_len = 16 * 3;
	put(SC_REC_PY_CODE, 0, &c, sizeof(c), tail, n);
}

struct py_frame_spec {
	uint32_t code, index; /* index: code-unit index of the instruction */
	int group_end;
};

static uint8_t py_walk_flags; /* SC_PY_STACK_* of the samples written next */

/* A sample: native frames (functions, innermost first: the first an exact address, the rest
 * return addresses) and Python frames (innermost first). */
static void write_sample(uint16_t kind, uint16_t flags, uint64_t (*const *native)(uint64_t),
			 unsigned nn, const struct py_frame_spec *py, unsigned np, uint8_t gil)
{
	uint8_t buf[1024];
	struct sc_rec_sample *s = (void *)buf;
	struct sc_py_stack *ps;
	struct sc_py_frame *pf;

	memset(buf, 0, sizeof(buf));
	w.ts += 1000000;
	if (kind == SC_SAMPLE_CPUTIME)
		w.cpu += 1000000;
	s->ts = w.ts;
	s->cpu_ns = w.cpu;
	s->kind = kind;
	s->nframes = (uint16_t)nn;
	for (unsigned i = 0; i < nn; i++)
		s->frames[i] = (uint64_t)(uintptr_t)native[i] + (i ? 8 : 4);
	ps = (void *)&s->frames[nn];
	ps->nframes = (uint16_t)np;
	ps->gil = gil;
	ps->flags = py_walk_flags;
	pf = (void *)(ps + 1);
	for (unsigned i = 0; i < np; i++) {
		pf[i].code_id = py[i].code;
		pf[i].instr = (py[i].index + 1) | (py[i].group_end ? SC_PY_FRAME_GROUP_END : 0);
	}
	put(SC_REC_SAMPLE, flags | SC_SAMPLE_PYTHON, s, (uint32_t)((uint8_t *)(pf + np) - buf),
	    NULL, 0);
}

static void write_thread_begin(int32_t tid, uint32_t index, const char *name, uint16_t kind)
{
	struct sc_rec_thread tb = { .ts = w.ts, .tid = tid, .index = index };
	struct sc_rec_thread_name tn = { .ts = w.ts };
	struct sc_rec_sampler sm = { .ts = w.ts,
				     .period_ns = 1000000,
				     .kind = kind,
				     .mechanism = SC_SAMPLER_PERF_TASK_CLOCK };

	switch_thread(tid);
	put(SC_REC_THREAD_BEGIN, 0, &tb, sizeof(tb), NULL, 0);
	snprintf(tn.name, sizeof(tn.name), "%s", name);
	put(SC_REC_THREAD_NAME, 0, &tn, sizeof(tn), NULL, 0);
	put(SC_REC_SAMPLER, 0, &sm, sizeof(sm), NULL, 0);
}

static int with_gpu;
static uint64_t next_corr = 100;

/* The CUDA API call as the tracer writes it: a whole region of this thread, 5 us. */
static void write_api_call(const char *name, uint64_t corr)
{
	static const char category[] = "CUDA_RUNTIME_API";
	struct sc_rec_region_span sp = { .r = { .ts = w.ts, .corr_id = corr },
					 .end = w.ts + 5000,
					 .tid = w.tid };
	char tail[128];

	sp.r.name_len = (uint32_t)strlen(name) + 1;
	sp.r.cat_len = sizeof(category);
	memcpy(tail, name, sp.r.name_len);
	memcpy(tail + sp.r.name_len, category, sp.r.cat_len);
	put(SC_REC_REGION_SPAN, 0, &sp, sizeof(sp), tail, sp.r.name_len + sp.r.cat_len);
}

/* A CUDA call from Python (its stack, innermost first) and the GPU op it started. */
static void write_gpu_call(const struct py_frame_spec *py, unsigned np, uint16_t kind,
			   uint64_t gpu_ns)
{
	uint8_t buf[512];
	struct sc_rec_py_callsite *cs = (void *)buf;
	struct sc_py_frame *pf = (void *)(cs + 1);
	struct sc_rec_gpu_op op = { .kind = kind, .tid = w.tid, .stream = 7 };

	memset(buf, 0, sizeof(buf));
	w.ts += 10000;
	cs->ts = w.ts;
	cs->corr_id = ++next_corr;
	cs->stack.nframes = (uint16_t)np;
	cs->stack.gil = SC_PY_GIL_HELD;
	for (unsigned i = 0; i < np; i++) {
		pf[i].code_id = py[i].code;
		pf[i].instr = (py[i].index + 1) | (py[i].group_end ? SC_PY_FRAME_GROUP_END : 0);
	}
	put(SC_REC_PY_CALLSITE, 0, cs, (uint32_t)((uint8_t *)(pf + np) - buf), NULL, 0);
	write_api_call(kind == SC_GPU_COPY ? "cudaMemcpyAsync" : "cudaLaunchKernel", cs->corr_id);
	if (kind == SC_GPU_COPY) {
		op.copy_kind = SC_COPY_HTOD;
		op.bytes = 1 << 20;
		op.src_agent = SC_AGENT_HOST;
	}
	op.corr_id = cs->corr_id;
	op.start = w.ts + 1000;
	op.end = op.start + gpu_ns;
	put(SC_REC_GPU_OP, 0, &op, sizeof(op), NULL, 0);
}

static void write_main_gpu_calls(void)
{
	const struct py_frame_spec at22[] = { { 3, 1, 0 }, { 2, 2, 1 }, { 1, 3, 1 } };
	const struct py_frame_spec at25[] = { { 3, 4, 0 }, { 2, 2, 1 }, { 1, 3, 1 } };
	const struct py_frame_spec at13[] = { { 2, 2, 1 }, { 1, 3, 1 } };
	struct sc_rec_gpu_op native = { .kind = SC_GPU_KERNEL, .corr_id = 999, .tid = w.tid };

	for (int i = 0; i < 5; i++)
		write_gpu_call(at22, 3, SC_GPU_KERNEL, 2000000);
	for (int i = 0; i < 3; i++)
		write_gpu_call(at25, 3, SC_GPU_KERNEL, 1000000);
	for (int i = 0; i < 2; i++)
		write_gpu_call(at13, 2, SC_GPU_COPY, 2500000);
	write_gpu_call(at22, 3, SC_GPU_ALLOC, 0); /* no device time */
	native.start = w.ts + 1000;
	native.end = native.start + 4000000;
	put(SC_REC_GPU_OP, 0, &native, sizeof(native), NULL, 0);
}

static void write_thread_end(int32_t tid)
{
	struct sc_rec_thread te = { .ts = ++w.ts, .tid = tid, .cpu_ns = w.cpu };

	put(SC_REC_THREAD_END, 0, &te, sizeof(te), NULL, 0);
}

static void func(uint16_t type, uint32_t code)
{
	struct sc_rec_func f = { .ts = w.ts, .addr = SC_PY_FUNC_ADDR(code) };

	put(type, SC_FUNC_PYTHON, &f, sizeof(f), NULL, 0);
}

static void write_main_thread(int32_t pid)
{
	static uint64_t (*const deflate[])(uint64_t) = { gen_deflate,
							 zlib_compress,
							 _PyEval_EvalFrameDefault,
							 _PyObject_Vectorcall,
							 _PyEval_EvalFrameDefault,
							 Py_RunMain,
							 gen_main };
	static uint64_t (*const self[])(
		uint64_t) = { PyNumber_Add,	    _PyEval_EvalFrameDefault,
			      _PyObject_Vectorcall, _PyEval_EvalFrameDefault,
			      Py_RunMain,	    gen_main };
	const struct py_frame_spec in_deflate[] = { { 3, 1, 0 }, { 2, 2, 1 }, { 1, 3, 1 } };
	const struct py_frame_spec in_self[] = { { 3, 4, 0 }, { 2, 2, 1 }, { 1, 3, 1 } };
	struct sc_rec_py_runtime rt = { .ts = w.ts,
					.runtime = (uint64_t)(uintptr_t)gen_py_runtime(),
					.version = 0x030b07f0,
					.state = SC_PY_FRAMES,
					.flags = SC_PY_TRACING };
	static const uint64_t step_ms[] = { 1, 2, 3, 6 };

	write_thread_begin(pid, 0, "python3", SC_SAMPLE_CPUTIME);
	put(SC_REC_PY_RUNTIME, 0, &rt, sizeof(rt), NULL, 0);
	write_code(1, 1, "/app/train.py", "<module>");
	write_code(2, 10, "/app/train.py", "Trainer.step");
	for (int i = 0; i < 40; i++)
		write_sample(SC_SAMPLE_CPUTIME, 0, deflate, 7, in_deflate, 3, SC_PY_GIL_HELD);
	for (int i = 0; i < 20; i++)
		write_sample(SC_SAMPLE_CPUTIME, 0, self, 6, in_self, 3, SC_PY_GIL_HELD);
	for (int i = 0; i < 5; i++) /* cut below the inner eval frame */
		write_sample(SC_SAMPLE_CPUTIME, SC_SAMPLE_TRUNCATED, deflate, 3, in_deflate, 3,
			     SC_PY_GIL_HELD);
	for (int i = 0; i < 4; i++) {
		w.ts += 1000000;
		func(SC_REC_FUNC_ENTER, 2);
		w.ts += step_ms[i] * 250000;
		func(SC_REC_FUNC_ENTER, 3);
		w.ts += step_ms[i] * 500000;
		func(SC_REC_FUNC_EXIT, 3);
		w.ts += step_ms[i] * 250000;
		func(SC_REC_FUNC_EXIT, 2);
	}
	if (with_gpu)
		write_main_gpu_calls();
	write_thread_end(pid);
}

/* A sample whose Python header claims 9 frames where the record holds one. */
static void write_damaged_sample(void)
{
	struct {
		struct sc_rec_sample s;
		uint64_t frame;
		struct sc_py_stack ps;
		struct sc_py_frame pf;
	} r = { .s = { .kind = SC_SAMPLE_REALTIME, .nframes = 1 },
		.frame = (uint64_t)(uintptr_t)gen_deflate + 4,
		.ps = { .nframes = 9, .gil = SC_PY_GIL_HELD },
		.pf = { .code_id = 4, .instr = 1 } };

	w.ts += 1000000;
	r.s.ts = w.ts;
	put(SC_REC_SAMPLE, SC_SAMPLE_PYTHON, &r, sizeof(r), NULL, 0);
}

static void write_worker_thread(int32_t tid, int damaged)
{
	static uint64_t (*const waiting[])(uint64_t) = {
		gen_futex_wait,		  take_gil,	  PyEval_RestoreThread, time_sleep,
		_PyEval_EvalFrameDefault, gen_thread_root
	};
	static uint64_t (*const released[])(uint64_t) = { gen_deflate, zlib_compress,
							  _PyEval_EvalFrameDefault,
							  gen_thread_root };
	static uint64_t (*const held[])(uint64_t) = { PyNumber_Add, _PyEval_EvalFrameDefault,
						      gen_thread_root };
	const struct py_frame_spec at_wait[] = { { 4, 1, 1 } }, at_deflate[] = { { 4, 5, 1 } },
				   at_held[] = { { 4, 7, 1 } };

	write_thread_begin(tid, 1, "worker", SC_SAMPLE_REALTIME);
	write_code(3, 20, "/app/model.py", "Model.forward");
	write_code(4, 30, "/app/train.py", "worker");
	for (int i = 0; i < 30; i++)
		write_sample(SC_SAMPLE_REALTIME, 0, waiting, 6, at_wait, 1, SC_PY_GIL_RELEASED);
	for (int i = 0; i < 10; i++)
		write_sample(SC_SAMPLE_REALTIME, 0, released, 4, at_deflate, 1, SC_PY_GIL_RELEASED);
	for (int i = 0; i < 10; i++)
		write_sample(SC_SAMPLE_REALTIME, 0, held, 3, at_held, 1, SC_PY_GIL_HELD);
	for (int i = 0; damaged && i < 3; i++)
		write_damaged_sample();
	for (int i = 0; damaged && i < 3; i++) {
		py_walk_flags = i < 2 ? SC_PY_STACK_TRUNCATED : SC_PY_STACK_BAD_CODE;
		write_sample(SC_SAMPLE_REALTIME, 0, held, 3, at_wait, 1, SC_PY_GIL_HELD);
	}
	py_walk_flags = 0;
	for (int i = 0; with_gpu && i < 2; i++)
		write_gpu_call(at_deflate, 1, SC_GPU_KERNEL, 1000000);
	write_thread_end(tid);
}

int main(int argc, char **argv)
{
	int32_t pid = 5151;
	const char *dir = NULL;
	int damaged = 0;
	char path[PATH_MAX], exe[PATH_MAX];
	struct sc_file_header h;
	struct timespec now;
	ssize_t n;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pid") && i + 1 < argc)
			pid = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--damaged"))
			damaged = 1;
		else if (!strcmp(argv[i], "--gpu"))
			with_gpu = 1;
		else if (argv[i][0] != '-')
			dir = argv[i];
		else
			die("usage: gen_py_session DIR [--pid N] [--damaged] [--gpu]");
	}
	if (!dir || pid <= 0)
		die("usage: gen_py_session DIR [--pid N] [--damaged] [--gpu]");
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/raw", dir);
	if (mkdir(path, 0755) && errno != EEXIST)
		die("cannot create the session folder");
	snprintf(path, sizeof(path), "%s/raw/%d.sraw", dir, (int)pid);
	w.f = fopen(path, "wb");
	if (!w.f)
		die("cannot create the raw file");
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	clock_gettime(CLOCK_MONOTONIC, &now);
	w.ts = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	test_file_header(&h, SC_FORMAT_VERSION, CHUNK_SIZE, pid);
	h.clock_id = CLOCK_MONOTONIC;
	h.features = SC_FEATURE_FRAMES_ARE_RETURN_ADDRS;
	h.ppid = 1;
	h.start_ns = w.ts;
	clock_gettime(CLOCK_REALTIME, &now);
	h.start_realtime_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	snprintf(h.hostname, sizeof(h.hostname), "synthetic-node");
	if (fwrite(&h, sizeof(h), 1, w.f) != 1)
		die("write failed");
	switch_thread(pid);
	write_process(pid, exe);
	write_module("", exe);
	write_module("libgen_py_interp", exe);
	write_main_thread(pid);
	write_worker_thread(pid + 1, damaged);
	flush_chunk();
	h.chunks_claimed = w.chunks;
	h.end_ns = w.ts + 1000;
	h.end_reason = SC_END_EXIT;
	h.threads_seen = 2;
	rewind(w.f);
	if (fwrite(&h, sizeof(h), 1, w.f) != 1 || fclose(w.f))
		die("write failed");
	return 0;
}
