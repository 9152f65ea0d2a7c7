/* SPDX-License-Identifier: MIT */
/*
 * The raw record format: the one contract between libsyscope.so (the writer, inside the
 * profiled process) and the reader (in the syscope CLI). docs/record-format.md describes it
 * in prose; this header is authoritative.
 *
 * A raw file holds what one process image recorded (a fork child or an exec'd image gets its
 * own file). Each thread fills chunks in buffers of its own, which reach the file with pwrite
 * when full, every flush period while it records, and at its end (runtime/recorder.c), so a
 * writer killed outright loses at most its threads' last moments:
 *
 *   offset 0                 struct sc_file_header (live counters updated atomically)
 *   header_size + i*chunk    chunk i: struct sc_chunk_header, then records
 *
 * A chunk is claimed by one thread at a time; its records are written by that thread and by
 * signal handlers running on it, never by another thread. A chunk a thread gave up when it
 * exited may be continued by a later thread: an SC_REC_OWNER record then says whose records
 * follow. Only a thread's first chunk can be such a continued one; every later chunk it uses
 * is claimed fresh, with a higher index. So reading chunks in index order gives each
 * thread's records in the order the thread wrote them.
 *
 * Records are 8-byte aligned and start with struct sc_record. The writer reserves space,
 * fills the payload, and stores the header word last with release order, so a reader sees
 * either a complete record or a zero header, which ends the chunk's valid data. Unknown record
 * types are skipped by size; the reader counts them.
 */
#ifndef SYSCOPE_STORE_FORMAT_H
#define SYSCOPE_STORE_FORMAT_H

#include <assert.h>
#include <stdint.h>

#define SC_FILE_MAGIC "SCRAWv1" /* 8 bytes with the terminating NUL */
#define SC_FORMAT_VERSION 1	/* bumped on incompatible change */
#define SC_FORMAT_MIN_VERSION 1 /* oldest version this reader accepts */
#define SC_BYTE_ORDER_MARK 0x01020304u
#define SC_CHUNK_MAGIC 0x4b434353u /* "SCCK" little-endian */
#define SC_FILE_HEADER_SIZE 4096u
#define SC_RECORD_ALIGN 8u
#define SC_RAW_SUFFIX ".sraw"

/* Why a process image stopped recording (sc_file_header.end_reason). */
enum sc_end_reason {
	SC_END_RUNNING = 0, /* no end seen: still running, killed, or crashed without a trace */
	SC_END_EXIT = 1,    /* exit() or return from main; end_status = exit status */
	SC_END__EXIT = 2,   /* _exit()/_Exit(); end_status = status */
	SC_END_SIGNAL = 3,  /* fatal signal; end_status = signal number */
	SC_END_EXEC = 4,    /* replaced by execve(); the new image has its own file */
	SC_END_DETACH = 5,  /* syscope attach detached; the process goes on */
};

/*
 * First page of a raw file. Fields up to `identity_end` are written once when the file is
 * created; the counters after it are updated with atomic operations while the process runs.
 */
struct sc_file_header {
	char magic[8];	      /* SC_FILE_MAGIC */
	uint32_t version;     /* SC_FORMAT_VERSION of the writer */
	uint32_t header_size; /* offset of chunk 0 */
	uint32_t byte_order;  /* SC_BYTE_ORDER_MARK as stored by the writer */
	uint32_t chunk_size;  /* bytes per chunk, a multiple of the page size */
	uint32_t clock_id;    /* clockid_t of every timestamp (CLOCK_MONOTONIC) */
	uint32_t features;    /* SC_FEATURE_* bits */
	int32_t pid;
	int32_t ppid;
	uint32_t image_seq; /* 0 for the first image of a pid, +1 per exec */
	uint32_t reserved0;
	uint64_t start_ns;	    /* clock_id time when recording started */
	uint64_t start_realtime_ns; /* CLOCK_REALTIME at the same moment */
	char hostname[64];
	uint64_t identity_end; /* marker: fields above are immutable */

	/* Live counters (atomic). */
	uint64_t chunks_claimed; /* chunks handed out so far */
	uint64_t lost_records;	 /* records dropped; lost_by_cause says why */
	uint64_t lost_bytes;
	uint64_t lost_samples; /* samples dropped for other reasons (re-entry, stack fault) */
	uint64_t end_ns;       /* when the image stopped recording, 0 if unknown */
	uint32_t end_reason;   /* enum sc_end_reason */
	int32_t end_status;
	uint64_t threads_seen; /* threads that recorded anything */
	/* Why records were lost: lost_records split by enum sc_lost_cause (all zero in files of
	 * writers older than these fields). */
	uint64_t lost_by_cause[8];
	/* Bytes of the records counted in lost_write_records (files of older writers: bytes of
	 * every failed write attempt, the same bytes again at each retry). */
	uint64_t write_failed_bytes;
	uint64_t file_reopened; /* times the program closed this file behind syscope's
				 * back (a raw system call) and syscope opened it again */
	/* lost_records's ninth cause (SC_LOST_WRITE), after lost_by_cause's eight: records
	 * whose write into this file failed, counted once each when their thread's buffer gave
	 * them up. */
	uint64_t lost_write_records;
	/* The errno of the last claim of a chunk that the file system refused (EFBIG: the file
	 * size limit, ENOSPC, EDQUOT), which says what SC_LOST_DISK was; 0: none, or the disk
	 * below --buffer-disk-reserve-mb (and in files of older writers). */
	int32_t disk_errno;
	uint32_t reserved1;
	uint8_t pad[4096 - 8 - 10 * 4 - 2 * 8 - 64 - 8 - 5 * 8 - 2 * 4 - 8 - 8 * 8 - 3 * 8 - 8];
};

/* Why a record could not be stored (sc_file_header.lost_by_cause). */
enum sc_lost_cause {
	SC_LOST_LIMIT = 0,     /* the recording buffer limit (--buffer-limit-mb) was reached */
	SC_LOST_DISK = 1,      /* the disk was full or below --buffer-disk-reserve-mb */
	SC_LOST_REENTRY = 2,   /* a signal handler recorded while its thread changed chunks */
	SC_LOST_NO_THREAD = 3, /* the thread had ended or was forking */
	SC_LOST_TOO_LARGE = 4, /* a record larger than half a chunk */
	SC_LOST_NO_FILE = 5,   /* the raw file was closed under syscope and could not be reopened */
	SC_LOST_NO_MEMORY = 6, /* a thread's buffer could not be mapped */
	SC_LOST_FAULT = 7,     /* memory being copied into the record faulted (LOST in place) */
	SC_LOST_WRITE = 8,     /* its write into the file failed (lost_write_records) */
	SC_LOST_CAUSES = 9,
};

/* The header's count of records lost for `cause` (lost_by_cause, or lost_write_records). */
static inline uint64_t *sc_lost_counter(struct sc_file_header *h, unsigned cause)
{
	return cause == SC_LOST_WRITE ? &h->lost_write_records : &h->lost_by_cause[cause & 7];
}
static inline uint64_t sc_lost_by_cause(const struct sc_file_header *h, unsigned cause)
{
	return cause == SC_LOST_WRITE  ? h->lost_write_records
	       : cause < SC_LOST_WRITE ? h->lost_by_cause[cause]
				       : 0;
}
static_assert(sizeof(struct sc_file_header) == SC_FILE_HEADER_SIZE, "header is one page");

#define SC_FEATURE_FRAMES_ARE_RETURN_ADDRS 0x1u /* frames after the first are return addresses */
#define SC_FEATURE_TSC_CLOCK 0x2u /* timestamps from the TSC, steered onto clock_id at write time */

enum sc_chunk_state {
	SC_CHUNK_OPEN = 1,
	SC_CHUNK_CLOSED = 2, /* full or released; `used` is final */
};

struct sc_chunk_header {
	uint32_t magic; /* SC_CHUNK_MAGIC, stored last when the chunk is claimed */
	uint32_t index; /* chunk number in the file */
	int32_t tid;	/* first owner; SC_REC_OWNER records name later ones */
	uint32_t state; /* enum sc_chunk_state */
	uint32_t used;	/* bytes used including this header; set when closed */
	uint32_t reserved;
	uint64_t first_ns;
	uint8_t pad[32];
};
static_assert(sizeof(struct sc_chunk_header) == 64, "chunk header is 64 bytes");

/* Every record starts with this; `size` includes the header and is a multiple of 8. */
struct sc_record {
	uint32_t size;
	uint16_t type;	/* enum sc_record_type; 0 never appears in a complete record */
	uint16_t flags; /* type-specific */
};
static_assert(sizeof(struct sc_record) == 8, "record header is 8 bytes");

/* The record types: one row each in records.def. */
enum sc_record_type {
#define SC_RECORD(name, id, text, type, size, what) SC_REC_##name = id,
#include "records.def"
#undef SC_RECORD
	SC_REC_TYPE_COUNT
};

struct sc_rec_owner {
	struct sc_record hdr;
	int32_t tid;
	uint32_t reserved;
};

struct sc_rec_process {
	struct sc_record hdr;
	uint64_t ts;
	int32_t pid;
	int32_t ppid;
	uint32_t uid;
	uint32_t exe_len;     /* bytes of exe path incl. NUL, after this struct */
	uint32_t cmdline_len; /* bytes of NUL-separated argv, after exe */
	uint32_t cwd_len;     /* bytes of cwd incl. NUL, after cmdline */
};

/* Thread begin/end. `index` is the thread's creation order in the process (main = 0). */
struct sc_rec_thread {
	struct sc_record hdr;
	uint64_t ts;
	uint64_t cpu_ns; /* thread CPU time at the event */
	int32_t tid;
	uint32_t index;
	int32_t creator_tid; /* thread that called pthread_create, 0 if unknown */
	uint32_t reserved;
};

/* hdr.flags: SC_THREAD_NAME_GIVEN for a name the program gave its thread through a tool API
 * (nvtxNameOsThread), which later OS names of the thread do not replace. */
struct sc_rec_thread_name {
	struct sc_record hdr;
	uint64_t ts;
	char name[16];
};

#define SC_THREAD_NAME_GIVEN 0x1u

enum sc_module_flags {
	SC_MODULE_AT_START = 0x1, /* present when recording started */
	SC_MODULE_LATE = 0x2,	  /* found by a rescan, not at its load: valid from start */
	SC_MODULE_VDSO = 0x4,
	SC_MODULE_MAIN = 0x8, /* the main executable */
};

#define SC_MAX_SEGMENTS 8
#define SC_MAX_BUILD_ID 32

struct sc_rec_module_segment {
	uint64_t vaddr; /* p_vaddr of the PT_LOAD segment (add `base` for the address) */
	uint64_t memsz;
	uint64_t offset; /* p_offset in the file */
	uint32_t flags;	 /* p_flags (PF_X, PF_W, PF_R) */
	uint32_t reserved;
};

struct sc_rec_module {
	struct sc_record hdr;
	uint64_t ts;
	uint64_t base; /* load bias (dlpi_addr) */
	uint32_t nsegments;
	uint32_t build_id_len;
	uint8_t build_id[SC_MAX_BUILD_ID];
	struct sc_rec_module_segment seg[SC_MAX_SEGMENTS];
	uint32_t path_len; /* bytes of path incl. NUL, after this struct */
	uint32_t reserved;
};

enum sc_sample_kind {
	SC_SAMPLE_CPUTIME = 1,	/* thread CPU-time sampler */
	SC_SAMPLE_REALTIME = 2, /* wall-clock sampler */
	SC_SAMPLE_CRASH = 3,	/* the stack at a fatal signal */
	SC_SAMPLE_OVERFLOW = 4, /* every N occurrences of a perf event (--sample-overflow) */
};

enum sc_sample_flags {
	SC_SAMPLE_TRUNCATED = 0x1,  /* stack deeper than the depth limit; root frames missing */
	SC_SAMPLE_UNWIND_ERR = 0x2, /* the unwinder stopped early on an error */
	SC_SAMPLE_PYTHON = 0x4,	    /* a struct sc_py_stack follows the frames */
};

/* hdr.flags carries enum sc_sample_flags. frames[0] is the interrupted PC. */
struct sc_rec_sample {
	struct sc_record hdr;
	uint64_t ts;
	uint64_t cpu_ns; /* thread CPU time at the sample */
	uint16_t kind;	 /* enum sc_sample_kind */
	uint16_t nframes;
	uint32_t reserved;
	uint64_t frames[];
};

struct sc_rec_fork {
	struct sc_record hdr;
	uint64_t ts;
	int32_t child_pid;
	uint32_t reserved;
};

struct sc_rec_exec {
	struct sc_record hdr;
	uint64_t ts;
	uint32_t path_len;
	uint32_t reserved;
};

struct sc_rec_lost {
	struct sc_record hdr;
	uint64_t ts;
	uint64_t records;
	uint64_t bytes;
};

enum sc_note_level {
	SC_NOTE_INFO = 0,
	SC_NOTE_WARN = 1
};

struct sc_rec_note {
	struct sc_record hdr;
	uint64_t ts;
	uint32_t level;
	uint32_t text_len; /* incl. NUL */
};

enum sc_sampler_mechanism {
	SC_SAMPLER_PERF_TASK_CLOCK = 1, /* perf_event task-clock overflow */
	SC_SAMPLER_POSIX_CPU = 2,	/* timer_create(CLOCK_THREAD_CPUTIME_ID) */
	SC_SAMPLER_POSIX_MONO = 3,	/* timer_create(CLOCK_MONOTONIC) */
	SC_SAMPLER_PERF_OVERFLOW = 4,	/* a perf event's overflow; period_ns is in its events */
};

/* hdr.flags of a SAMPLER record: the period was raised by throttling; period_ns is the last
 * one the thread used. */
#define SC_SAMPLER_THROTTLED 0x1u
/* hdr.flags of a SAMPLER record: ts is when the thread's sampling starts (after any delay),
 * which is where its first sample's time begins. */
#define SC_SAMPLER_STARTS 0x2u

struct sc_rec_sampler {
	struct sc_record hdr;
	uint64_t ts;
	uint64_t period_ns;
	uint16_t kind;	    /* enum sc_sample_kind */
	uint16_t mechanism; /* enum sc_sampler_mechanism */
	int32_t error;	    /* 0, or the errno that kept it from arming */
};

/*
 * Regions and marks. After the struct: the name (name_len bytes with its NUL), the category
 * (cat_len), then args_len bytes of arguments: for each, three NUL-terminated strings, its
 * type (enum sc_arg_type, as one character), its name and its value as text.
 */
struct sc_rec_region {
	struct sc_record hdr;
	uint64_t ts;
	uint32_t name_len;
	uint32_t cat_len;
	uint32_t args_len;
	uint32_t nargs;
	uint64_t corr_id; /* links a host call to the device work it caused (sc_rec_gpu_op); 0 */
};

enum sc_arg_type {
	SC_ARG_INT = 'i',
	SC_ARG_UINT = 'u',
	SC_ARG_DOUBLE = 'd',
	SC_ARG_STRING = 's',
	SC_ARG_POINTER = 'p',
};

/*
 * A region recorded whole, after it ended, by a thread other than the one it belongs to (the
 * CUDA tracer writes the API calls of CUPTI's activity records so). `r.ts` is its start;
 * name, category and arguments follow this struct as they follow sc_rec_region. Readers
 * place it on thread `tid` by its times.
 */
struct sc_rec_region_span {
	struct sc_rec_region r;
	uint64_t end;
	int32_t tid;
	uint32_t reserved;
};

struct sc_rec_region_end {
	struct sc_record hdr;
	uint64_t ts;
};

/* A counter track of this process image: its id is used by SC_REC_COUNTER records. */
struct sc_rec_counter_track {
	struct sc_record hdr;
	uint64_t ts;
	uint32_t id;
	uint32_t flags;	   /* SC_COUNTER_* */
	uint32_t name_len; /* name then unit, NUL-terminated, after the struct */
	uint32_t unit_len;
};

/*
 * CPU counters (--cpu-events), counted per thread with perf_event_open. The process names
 * them once (PMC_EVENTS, in the order of the values); each thread writes a PMC_READ right
 * after each of its samples with what its counters counted since its previous read, which
 * belongs to the sample's stack.
 */
#define SC_PMC_MAX 8

struct sc_rec_pmc_events {
	struct sc_record hdr;
	uint64_t ts;
	uint32_t count;	    /* <= SC_PMC_MAX */
	uint32_t names_len; /* count NUL-terminated names after the struct */
};

struct sc_rec_pmc_read {
	struct sc_record hdr;
	uint64_t ts;
	uint32_t valid; /* bit i: event i is counted on this thread */
	uint32_t reserved;
	uint64_t values[SC_PMC_MAX]; /* since the thread's previous read (or since its counters
				       * opened), scaled when multiplexed (x enabled / running) */
};

/*
 * An instrumented function's entry or exit on the recording thread (compiler hooks:
 * -finstrument-functions): the address of the function's first instruction, which readers
 * symbolize. Exits pair with the innermost open entry of the same function.
 */
struct sc_rec_func {
	struct sc_record hdr;
	uint64_t ts;
	uint64_t addr;
};

/* FUNC_ENTER/EXIT flag: a loop (syscope instrument -l), `addr` its first instruction. */
#define SC_FUNC_LOOP 0x1u
/* FUNC_ENTER/EXIT flags bits 8-15: the stack the call runs on. 0: the thread's own (a signal
 * handler's included); 1-254: the stack of a context made by makecontext (a coroutine), so
 * that calls interleaved on one thread pair and nest within their own stack. */
#define SC_FUNC_CONTEXT_SHIFT 8
#define SC_FUNC_CONTEXT(flags) (((flags) >> SC_FUNC_CONTEXT_SHIFT) & 0xffu)

/*
 * A whole instrumented call (FUNC_CALL), written once when it returns: 24 bytes a call
 * instead of FUNC_ENTER + FUNC_EXIT. Calls reach the file in the order they end (callees
 * before their callers); readers nest them by time. `id` is a FUNC_ID of the same file
 * (native functions and loops) or, with SC_FUNC_PYTHON, the Python code id. Flags: those of
 * FUNC_ENTER/EXIT (SC_FUNC_LOOP, SC_FUNC_PYTHON, the context in bits 8-15), and
 * SC_FUNC_OPEN. A call that does not fit (4.29 s or longer, or no id) is written as the
 * FUNC_ENTER/FUNC_EXIT pair when it returns.
 */
struct sc_rec_func_call {
	struct sc_record hdr;
	uint64_t start;	 /* entry time */
	uint32_t dur_ns; /* exit time - start */
	uint32_t id;
};

/* FUNC_CALL flag: the call had not returned when its thread or process ended (exit, exec,
 * fatal signal); `dur_ns` runs to that end. */
#define SC_FUNC_OPEN 0x4u

/* The address of function id `id` (first used by the recording thread; ids are per process
 * image). Flags: SC_FUNC_LOOP when `addr` is a loop's first instruction. */
struct sc_rec_func_id {
	struct sc_record hdr;
	uint64_t addr;
	uint32_t id;
	uint32_t reserved;
};

/* A throttled function (FUNC_COUNT, at the image's end or its thread's): the calls it made
 * after it was throttled, which have no FUNC_CALL records, and their total time. Flags as
 * FUNC_CALL's (SC_FUNC_PYTHON: `id` is a code id). */
struct sc_rec_func_count {
	struct sc_record hdr;
	uint32_t id;
	uint32_t reserved;
	uint64_t calls;
	uint64_t total_ns;
};
/* FUNC_COUNT flag: some of these calls were counted without their time (a patched
 * function's calls stop at its entry stub once throttled, a compiler-hooked one reads no
 * clock); total_ns is the time of the others only, and theirs is in their callers'. */
#define SC_FUNC_UNTIMED 0x8u

/* Python calls aggregated in the process (syscope python's throttling, FUNC_STATS, at the
 * image's end): the calls of code `id` that have no FUNC_CALL record. `calls` of them, with
 * `total_ns` inclusive and `self_ns` their own time (less the traced calls inside). Of all
 * its calls, recorded or not, those not inside a call of the same function on their thread:
 * `outer_calls` with `outer_ns`, `min_ns`, `max_ns` and `outer_sumsq` (ns^2), the profile's
 * inclusive statistics when `throttled` (the function was; then every traced function has
 * a record, and these replace what the reader makes of its recorded calls).
 * `hidden_ns`: time inside the function's recorded calls that belongs to calls the reader
 * does not see (aggregated ones, less the recorded calls inside them), to be taken out of
 * the recorded calls' self time. Flags: SC_FUNC_PYTHON. */
struct sc_rec_func_stats {
	struct sc_record hdr;
	uint32_t id;
	uint32_t throttled;
	uint64_t calls;
	uint64_t total_ns;
	uint64_t self_ns;
	uint64_t outer_calls;
	uint64_t outer_ns;
	uint64_t min_ns;
	uint64_t max_ns;
	double outer_sumsq;
	uint64_t hidden_ns;
};

/* Coverage mode (syscope instrument --mode coverage): at the image's end, one per patched
 * function, called or not. */
struct sc_rec_func_coverage {
	struct sc_record hdr;
	uint64_t ts;
	uint64_t addr;
	uint64_t calls;
};

#define SC_COUNTER_PER_THREAD 0x1u /* values belong to the recording thread's track */

struct sc_rec_counter {
	struct sc_record hdr;
	uint64_t ts;
	uint32_t track;
	uint32_t reserved;
	double value;
};

/*
 * A string of this process image, named by `id` (> 0) in later records of any thread, so that
 * long names (kernel names) are stored once. A reader keeps the last text given for an id.
 */
struct sc_rec_string {
	struct sc_record hdr;
	uint64_t ts;
	uint32_t id;
	uint32_t len; /* incl. NUL */
};

enum sc_agent_type {
	SC_AGENT_CPU = 1,
	SC_AGENT_GPU = 2,
};

/* A device the process used. `id` is the runtime's device ordinal, used by GPU records. */
struct sc_rec_gpu_agent {
	struct sc_record hdr;
	uint64_t ts;
	uint32_t id;
	uint32_t type; /* enum sc_agent_type */
	uint8_t uuid[16];
	uint64_t memory_bytes;
	uint32_t multiprocessors;
	uint32_t compute_major, compute_minor;
	uint32_t pci_domain, pci_bus, pci_device;
	uint32_t name_len; /* name then vendor, NUL-terminated, after the struct */
	uint32_t vendor_len;
};

/* A stream (queue) of a device; `stream` is the id GPU records use. */
struct sc_rec_gpu_stream {
	struct sc_record hdr;
	uint64_t ts;
	uint64_t stream;
	uint32_t agent;
	uint32_t name_len; /* name, NUL-terminated, after the struct */
};

enum sc_gpu_op_kind {
	SC_GPU_KERNEL = 1,
	SC_GPU_COPY = 2,
	SC_GPU_SET = 3,	  /* memset */
	SC_GPU_ALLOC = 4, /* start = end = when */
	SC_GPU_FREE = 5,
	SC_GPU_GRAPH = 6, /* a whole CUDA graph's execution, its nodes not shown one by one */
	SC_GPU_OP_KINDS
};

enum sc_gpu_copy_kind {
	SC_COPY_UNKNOWN = 0,
	SC_COPY_HTOD = 1,
	SC_COPY_DTOH = 2,
	SC_COPY_DTOD = 3,
	SC_COPY_HTOH = 4,
	SC_COPY_PTOP = 5, /* between two devices */
	SC_COPY_KINDS
};

enum sc_gpu_mem_level {
	SC_MEM_REAL = 0,
	SC_MEM_VIRTUAL = 1,
	SC_MEM_SCRATCH = 2,
	SC_MEM_STATIC = 3, /* a loaded module's globals (__device__ variables): the driver's */
};

#define SC_AGENT_HOST UINT32_MAX /* src/dst agent of a copy: host memory */

/*
 * Work a device did, in the recording clock (the source converts device timestamps). Written
 * by whichever thread collects device activity; `tid` names the host thread that issued it.
 */
struct sc_rec_gpu_op {
	struct sc_record hdr;
	uint64_t start;
	uint64_t end;
	uint64_t corr_id; /* the host call's sc_rec_region.corr_id, 0 if unknown */
	uint64_t stream;
	uint64_t bytes;	  /* copy, set, allocation size */
	uint64_t address; /* allocation address; set destination */
	int32_t tid;	  /* issuing host thread, 0 if unknown */
	uint32_t agent;
	uint16_t kind;	    /* enum sc_gpu_op_kind */
	uint16_t copy_kind; /* enum sc_gpu_copy_kind; allocations: enum sc_gpu_mem_level */
	uint32_t name_id;   /* sc_rec_string id of the kernel or operation name, 0 = none */
	uint32_t src_agent, dst_agent; /* copies: device ids or SC_AGENT_HOST */
	uint32_t grid[3], block[3];
	uint32_t shared_static, shared_dynamic; /* bytes per block */
	uint32_t local_per_thread;		/* bytes */
	uint32_t registers;			/* per thread */
};

/*
 * Python (CPython 3.10-3.13). PY_RUNTIME says an interpreter was found in the process and
 * what syscope does with it; PY_CODE describes one code object, once per process, the first
 * time a sample or the tracer meets it. Code ids are process-wide (a fork child starts its
 * own table), 0 is "unknown code".
 */
enum sc_py_runtime_state {
	SC_PY_FRAMES = 1,	 /* Python frames are read in samples */
	SC_PY_UNSUPPORTED = 2,	 /* a version syscope has no layout for: native frames only */
	SC_PY_FREE_THREADED = 3, /* a free-threaded build (3.13t): native frames only */
	SC_PY_INVALID = 4,	 /* the layout did not match the running interpreter: off */
	SC_PY_OFF = 5,		 /* found, and --no-python said leave it alone */
};

#define SC_PY_TRACING 0x1u /* flag of PY_RUNTIME: Python calls are traced (syscope python) */

struct sc_rec_py_runtime {
	struct sc_record hdr;
	uint64_t ts;
	uint64_t runtime; /* address of _PyRuntime */
	uint32_t version; /* PY_VERSION_HEX, e.g. 0x030b02f0 for 3.11.2 */
	uint16_t state;	  /* enum sc_py_runtime_state */
	uint16_t flags;	  /* SC_PY_TRACING */
};

#define SC_PY_CODE_TRUNCATED 0x1u /* a string or the line table was cut at its bound */
#define SC_PY_CODE_MAX_FILENAME 1024u
#define SC_PY_CODE_MAX_QUALNAME 256u
#define SC_PY_CODE_MAX_LINETABLE 16384u

/* Followed by filename, qualname (UTF-8, no NUL) and the line table (co_linetable's bytes,
 * in the format of `version`; 3.10: co_linetable, PEP 626 pairs), padded to 8. */
struct sc_rec_py_code {
	struct sc_record hdr;
	uint32_t id;
	int32_t first_line;   /* co_firstlineno */
	uint64_t address;     /* the code object's address when seen; may be reused later */
	uint64_t fingerprint; /* tells a new code object at a reused address from the old one */
	uint32_t linetable_len;
	uint16_t filename_len, qualname_len;
	uint16_t version; /* PY_VERSION_HEX >> 16: 0x030b for 3.11 (line table format) */
	uint16_t flags;	  /* SC_PY_CODE_* */
	uint32_t reserved;
};

/*
 * An MPI call of the recording thread, written once when it returns (libsyscope-mpi.so):
 * every argument is known then (a receive's actual source and tag come from its status),
 * and one fixed record costs far less than a REGION_BEGIN with strings. Readers make it a
 * region of category "mpi". `fn` numbers the functions of src/store/mpi_functions.def.
 * Ranks are ranks of MPI_COMM_WORLD (translated from the call's communicator); `ndone`
 * struct sc_mpi_done follow: the requests an MPI_Wait or MPI_Test call completed.
 */
#define SC_MPI_NONE INT32_MIN /* no peer, no tag */
#define SC_MPI_FORTRAN 0x1u   /* hdr.flags: called through a Fortran binding */
#define SC_MPI_ATTACHED 0x2u  /* hdr.flags: recorded by syscope attach (not from MPI_Init) */
/* `comm` of a communicator the tracer did not see made (before the attach, or by a function
 * it does not wrap): this bit and its order of first use on this rank, from 1. Its peers are
 * still world ranks (translated through its group). */
#define SC_MPI_COMM_UNSEEN 0x80000000u

struct sc_rec_mpi_call {
	struct sc_record hdr;
	uint64_t ts, end;
	uint16_t fn;
	uint16_t ndone;
	uint32_t comm; /* 0 none, 1 MPI_COMM_WORLD, 2 MPI_COMM_SELF, then in order of creation */
	int32_t comm_size;   /* 0 when there is no communicator */
	int32_t peer;	     /* world rank of dest, source (the actual one) or root; SC_MPI_NONE */
	int32_t tag;	     /* SC_MPI_NONE */
	uint32_t unfollowed; /* requests completed that were not seen started (not in `ndone`) */
	uint64_t sent, received; /* bytes: count x type size, summed over ranks and v-counts */
	uint64_t request;	 /* the request a non-blocking call started (ids from 1), or 0 */
};

enum sc_mpi_kind {
	SC_MPIK_SETUP,
	SC_MPIK_LOCAL,
	SC_MPIK_SEND, /* the send end of a message (Sendrecv: and the receive end) */
	SC_MPIK_RECV,
	SC_MPIK_COLL,
	SC_MPIK_DONE, /* completes requests (sc_mpi_done follow) */
};

enum sc_mpi_fn {
#define SC_MPI_FN(name, id, text, kind) SC_MPI_##name = id,
#include "mpi_functions.def"
#undef SC_MPI_FN
	SC_MPI_FN_END
};

struct sc_mpi_done {
	uint64_t request;
	int32_t peer, tag; /* a receive's actual source and tag; SC_MPI_NONE for a send */
	uint32_t comm;	   /* as sc_rec_mpi_call's */
	uint32_t reserved;
	uint64_t bytes; /* bytes a receive got, a send sent */
};

/*
 * An MPI call with nothing to say but its communicator (MPI_Comm_rank, MPI_Barrier...): a
 * third of MPI_CALL's size, for the calls a program makes most. hdr.flags is the function
 * (its id, as MPI_CALL's `fn`) with SC_MPI_SHORT_FORTRAN; only communicators whose size
 * the reader knows are written so (none, MPI_COMM_WORLD, MPI_COMM_SELF).
 */
#define SC_MPI_SHORT_FN(flags) ((flags)&0x7fffu)
#define SC_MPI_SHORT_FORTRAN 0x8000u

struct sc_rec_mpi_short {
	struct sc_record hdr;
	uint64_t ts;
	uint32_t duration; /* ns; longer calls are written as MPI_CALL */
	uint32_t comm;	   /* 0, 1 or 2, as sc_rec_mpi_call's */
};

/*
 * Calls of an MPI query that does no work (MPI_Comm_rank, MPI_Comm_size) past the first
 * --mpi-queries-recorded (16) of a thread on one communicator: counted, not recorded one by one
 * (a record costs more than the call), written every few thousand calls and at MPI_Finalize
 * and the process's end; `calls` is the number since the last MPI_COUNT of the same function,
 * binding and communicator. hdr.flags as MPI_SHORT's. Queries are not timed (their regions
 * have no duration either): `total_ns` is 0 from this runtime.
 */
struct sc_rec_mpi_count {
	struct sc_record hdr;
	uint32_t comm; /* 0, 1 or 2, as sc_rec_mpi_short's */
	uint32_t reserved;
	uint64_t calls;
	uint64_t total_ns;
};

/*
 * This process's clock against its job's rank 0, measured by ping-pongs at MPI_Init and
 * MPI_Finalize (libsyscope-mpi.so): `offset` is what to add to this process's timestamps
 * around `when` to read rank 0's clock; `syscope merge` interpolates between the two.
 */
/*
 * The begin of an OpenMP construct (libsyscope.so's OpenMP tracer) whose arguments are all
 * numbers: the region a REGION_BEGIN would give, in 16-32 bytes instead of ~90, its name and
 * argument names implied by numbers of src/store/omp_events.def. hdr.flags: the kind (bits
 * 0-5), the number of arguments (6-7, at most 2), the id of each (8-11, 12-15); their values
 * follow as u64. Ended by REGION_END, as a REGION_BEGIN. Files of this version have
 * OMP_REGION records instead (below); OMP_BEGIN is still read.
 */
#define SC_OMP_KIND_OF(flags) ((flags)&0x3fu)
#define SC_OMP_NARGS(flags) (((flags) >> 6) & 0x3u)
#define SC_OMP_ARG_ID(flags, i) (((flags) >> (8 + 4 * (i))) & 0xfu)
#define SC_OMP_MAX_ARGS 2

enum sc_omp_kind {
#define SC_OMP_KIND(e, id, name) SC_OMP_##e = id,
#include "omp_events.def"
#undef SC_OMP_KIND
	SC_OMP_KIND_END
};

enum sc_omp_arg {
#define SC_OMP_ARG(n, id, type) SC_OMP_ARG_##n = id,
#include "omp_events.def"
#undef SC_OMP_ARG
	SC_OMP_ARG_END
};

struct sc_rec_omp_begin {
	struct sc_record hdr;
	uint64_t ts;
};

/*
 * An OpenMP construct in one record (libsyscope.so's OpenMP tracer): written at its begin,
 * `dur` stored into it in place when the construct ends (0 until then). hdr.flags as
 * OMP_BEGIN's. The arguments: the first one in `first` when the record has room for one
 * argument fewer than the flags count (it fits 32 bits), the others (or all) as u64 after
 * it; a record of two arguments with none after it (both fit 16 bits: an implicit task's
 * member id and team size) has both in `first`, the first one in its low half
 * (SC_OMP_PAIR_*). A record whose `dur` stayed 0 (the construct was still open when the thread's records
 * last reached the file, its end came too late to change the record, or it lasted 2^32 ns
 * or more) is ended by a REGION_END, or not at all, as an OMP_BEGIN. Its records follow it
 * in the stream though it may already carry its end: readers nest by time.
 */
struct sc_rec_omp_region {
	struct sc_record hdr;
	uint64_t ts;
	uint32_t dur;	/* ns, at least 1 once ended; 0: not in the record */
	uint32_t first; /* the first argument, when it is not among the u64 ones */
};
/* The number of u64 arguments after the record's fixed part. */
#define SC_OMP_REGION_WIDE(size) (((size) - (uint32_t)sizeof(struct sc_rec_omp_region)) / 8)
/* Two arguments in `first` (above): whether values fit, and each one back. */
#define SC_OMP_PAIR_FITS(a, b) ((a) <= 0xffffu && (b) <= 0xffffu)
#define SC_OMP_PAIR_LOW(first) ((first)&0xffffu)
#define SC_OMP_PAIR_HIGH(first) ((first) >> 16)
/*
 * An "omp parallel" of kind SC_OMP_PARALLEL_TEAM: its arguments `requested` (at most 16 bits,
 * in the low half of `first`) and `code` (the u64 after it), 32 bytes. Once the thread that
 * began the region begins its own implicit task (team member 0, which spans the region: the
 * tracer gives it the region's begin and end), the team size goes into the high half of
 * `first`, and that task has no record of its own: readers give the region, then the task
 * ("omp implicit task", thread 0, team N) with the same begin and end. Left 0: no task in it
 * (the task, if any, has its own record). A REGION_END after such a record that holds a task
 * and no end closes the task, a second one the region.
 */
#define SC_OMP_TEAM_OF(flags, first) \
	(SC_OMP_KIND_OF(flags) == SC_OMP_PARALLEL_TEAM ? SC_OMP_PAIR_HIGH(first) : 0u)

#define SC_CLOCK_SYNC_FINALIZE 0x1u /* hdr.flags: measured at MPI_Finalize (else MPI_Init) */

struct sc_rec_clock_sync {
	struct sc_record hdr;
	uint64_t ts, end; /* the measurement, on this process's clock */
	uint64_t when;	  /* midpoint of the round kept (the shortest round trip) */
	int64_t offset;	  /* ns */
	uint64_t rtt;	  /* the round trip of the round kept, ns */
	int32_t peer;	  /* the reference's world rank */
	uint32_t rounds;
};

/*
 * A sample of a thread that runs Python carries its Python frames too: SC_SAMPLE_PYTHON in
 * the sample's hdr.flags says that after frames[nframes] come a struct sc_py_stack and its
 * frames, innermost first (one record, so the two halves cannot be parted).
 */
enum sc_py_gil {
	SC_PY_GIL_NONE = 0,	/* the thread has no Python thread state (or unknown) */
	SC_PY_GIL_HELD = 1,	/* it holds the GIL */
	SC_PY_GIL_RELEASED = 2, /* it has a thread state but does not hold the GIL */
};

#define SC_PY_STACK_TRUNCATED 0x1u /* more frames than the walk's bound */
#define SC_PY_STACK_BAD_CODE 0x2u  /* the walk stopped at a frame whose code did not check out */
#define SC_PY_STACK_MAX 256u

struct sc_py_stack {
	uint16_t nframes;
	uint8_t gil;   /* enum sc_py_gil */
	uint8_t flags; /* SC_PY_STACK_* */
	uint32_t reserved;
};

/* bit 31 of sc_py_frame.instr: the last (outermost) frame run by one C-level call of the
 * interpreter's eval loop, where the next native eval frame takes over. */
#define SC_PY_FRAME_GROUP_END 0x80000000u

struct sc_py_frame {
	uint32_t code_id; /* a PY_CODE id, 0 = unknown */
	uint32_t instr;	  /* bits 0-30: code-unit index + 1 (0: index -1, not started) */
};

/*
 * The Python stack that made a CUDA launch, copy or set (the CUDA tracer's runtime- and
 * driver-API callback, at the call): its correlation id is the one of the API region and of
 * the GPU ops it caused (sc_rec_gpu_op.corr_id). stack.nframes struct sc_py_frame follow,
 * innermost first, as in a sample.
 */
struct sc_rec_py_callsite {
	struct sc_record hdr;
	uint64_t ts;
	uint64_t corr_id;
	struct sc_py_stack stack;
};

/*
 * GPU hardware counters of one kernel (--gpu-events, the CUDA tracer's range profiler):
 * `count` doubles follow, in the order of the process's metric names (NaN: not measured);
 * `corr_id` is the kernel's sc_rec_gpu_op.corr_id. With SC_GPU_METRICS_NAMES the record
 * names the metrics instead, once per process before any values: `count` NUL-terminated
 * names follow, corr_id is 0.
 */
#define SC_GPU_METRICS_MAX 32u
#define SC_GPU_METRICS_NAMES 0x1u

struct sc_rec_gpu_metrics {
	struct sc_record hdr;
	uint64_t ts;
	uint64_t corr_id;
	uint32_t agent;
	uint32_t count; /* <= SC_GPU_METRICS_MAX */
};

/*
 * Causal profiling (syscope causal). One CAUSAL_EXPERIMENT per experiment: the scope unit
 * (function or line, numbered by the scope file the CLI wrote in the session) that was
 * virtually sped up by `speedup` percent from `ts` to `end_ns`, the delays inserted into the
 * other threads meanwhile, the samples of the unit, then `npoints` progress deltas. Flag
 * SC_CAUSAL_END_TO_END: the experiment was the whole run (the program's end is its one
 * visit of progress). After the deltas, in records that have room for it (older writers'
 * do not: read as 0), a u64: the ns the program's threads were kept off their CPUs while
 * runnable during the experiment, summed over threads (preemption, a real-time throttle).
 */
struct sc_rec_causal_experiment {
	struct sc_record hdr;
	uint64_t ts;
	uint64_t end_ns;
	uint64_t delay_ns;
	uint64_t selected_samples;
	uint32_t unit;
	uint16_t speedup; /* percent */
	uint16_t npoints; /* struct sc_causal_delta follow */
};
struct sc_causal_delta {
	uint32_t point; /* a CAUSAL_POINT id of the process */
	/* A COZ_BEGIN point paired with a COZ_END of its name: how many were in flight (begun,
	 * not ended) on average over the experiment's virtual time (its wall time less the
	 * delays inserted, and the in-flight area they took out), x 1000; else 0. */
	uint32_t in_flight_milli;
	uint64_t delta; /* visits during the experiment */
};
#define SC_CAUSAL_END_TO_END 0x1u

/* A progress point of the process: its id, kind and name (which follows, NUL included). */
enum sc_causal_point_kind {
	SC_CAUSAL_THROUGHPUT = 1, /* COZ_PROGRESS, syscope_progress */
	SC_CAUSAL_BEGIN = 2,	  /* COZ_BEGIN: a latency point's arrivals */
	SC_CAUSAL_END = 3,	  /* COZ_END: its departures */
	SC_CAUSAL_SAMPLED = 4,	  /* --progress: samples of a function or line */
};
struct sc_rec_causal_point {
	struct sc_record hdr;
	uint64_t ts;
	uint32_t id;
	uint16_t kind;
	uint16_t name_len; /* incl. NUL */
};

/* FUNC_ENTER/EXIT flag: a Python call traced by syscope python; `addr` is
 * SC_PY_FUNC_ADDR(code id). */
#define SC_FUNC_PYTHON 0x2u
#define SC_PY_FUNC_ADDR(code_id) (0x8000000000000000ull | (uint64_t)(code_id) << 32)

/* Every record type's fixed part has the size its row pins (a layout change fails here). */
#define SC_RECORD(name, id, text, type, size, what) \
	static_assert(sizeof(struct type) == size,  \
		      "record " #name ": struct " #type " is not " #size " bytes");
#include "records.def"
#undef SC_RECORD

static inline uint32_t sc_record_align(uint32_t n)
{
	return (n + SC_RECORD_ALIGN - 1) & ~(SC_RECORD_ALIGN - 1);
}

#endif /* SYSCOPE_STORE_FORMAT_H */
