/* SPDX-License-Identifier: MIT */
/*
 * What the reader builds from a session: processes (one per pid, with one image per exec),
 * their threads and modules, notes and losses, and every distinct sampled stack with the
 * statistics of the samples that had it. Profiles (profile.h) and the sinks work from here;
 * nothing after this point reads raw records.
 *
 * Memory is bounded by distinct stacks, not by samples: a sample only updates the counters
 * of its stack's entry.
 */
#ifndef SYSCOPE_MODEL_MODEL_H
#define SYSCOPE_MODEL_MODEL_H

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>

#include "../common/hashmap.h"
#include "../common/vec.h"
#include "../store/session.h"
#include "strtab.h"
#include "python.h"
#include "func_view.h"
#include "symbols.h"

struct sc_spill_sort;  /* spill_sort.h */
struct sc_spill_table; /* spill_table.h */

#define SC_KINDS 5 /* indexed by enum sc_sample_kind */
/* The profile kind of time in regions (no sample kind uses 0); metric "wall_clock". */
#define SC_PROFILE_REGIONS 0
/* The profile kind of GPU time by the Python line that launched it (gpu_python.h); beyond
 * the sample kinds, so threads have no sample counts of it. */
#define SC_PROFILE_GPU_PYTHON SC_KINDS

/* Count, sum, sum of squares, min and max of sample weights in seconds. */
struct sc_stats {
	uint64_t count;
	double sum, sumsq, min, max;
};

void sc_stats_add(struct sc_stats *s, double w);
void sc_stats_merge(struct sc_stats *dst, const struct sc_stats *src);
double sc_stats_mean(const struct sc_stats *s);
double sc_stats_var(const struct sc_stats *s); /* sample variance; 0 below 2 samples */

struct sc_module {
	const char *path;	     /* interned, as recorded */
	uint64_t base;		     /* load bias */
	uint64_t lo, hi;	     /* runtime address range of its segments */
	uint64_t load_ts, unload_ts; /* unload_ts: UINT64_MAX while loaded */
	uint32_t flags;		     /* SC_MODULE_* */
	uint8_t build_id[SC_MAX_BUILD_ID];
	uint32_t build_id_len;
	bool is_self;	    /* libsyscope.so: its frames are elided from profiles */
	bool is_system;	    /* libc and the loader, below which a syscope wrapper hides frames */
	struct sc_elf *elf; /* opened on first use */
};

struct sc_thread {
	int32_t tid;
	uint32_t index; /* creation order within the process image, main = 0 */
	int32_t creator;
	char name[17];
	uint64_t begin_ts, end_ts; /* 0 when not seen */
	uint64_t begin_cpu, end_cpu;
	/* After an exec, the new image's begin: its first sample of each kind (a bit of
	 * exec_fresh until then) is weighed from there, as a thread's first one is, not from
	 * the previous image's last sample across the exec and the loader's work. */
	uint64_t exec_begin_ts, exec_begin_cpu;
	uint32_t exec_fresh;
	uint64_t samples[SC_KINDS];
	double seconds[SC_KINDS]; /* summed sample weights */
	uint64_t first_sample_ts[SC_KINDS], last_sample_ts[SC_KINDS];
	uint64_t last_cpu[SC_KINDS];
	uint64_t period_ns[SC_KINDS];	      /* requested sampling period, from SAMPLER records */
	uint64_t sampling_start_ts[SC_KINDS]; /* SAMPLER records with SC_SAMPLER_STARTS, or 0 */
	uint64_t throttled_period_ns[SC_KINDS]; /* raised by the runtime to spare the program */
	uint16_t mechanism[SC_KINDS];		/* enum sc_sampler_mechanism, 0 = none */
	int32_t sampler_error[SC_KINDS];
	uint32_t pmc_stack; /* index + 1 of its last sample's stack, until its PMC_READ */
	double pmc_pending[SC_PMC_MAX]; /* counted since its last sample's read (region reads) */
	bool name_given; /* named through a tool API: OS names no longer replace it */
};

struct sc_note {
	int32_t pid;
	uint64_t ts;
	uint32_t level; /* enum sc_note_level */
	const char *text;
};

struct sc_counter_track {
	uint32_t id;
	const char *name; /* interned */
	const char *unit; /* interned */
	/* Its values: count, min, max; the mean weighted by how long each value held (a
	 * counter is a step function) while values came in time order, else the plain mean. */
	struct sc_stats values;
	double area, last; /* sum of value x ns held; the last value */
	uint64_t first_ts, last_ts;
	bool unordered;
};

/* The summary of a counter track's values (see struct sc_counter_track). */
double sc_counter_mean(const struct sc_counter_track *c);

/* A device of a process image (sc_rec_gpu_agent). */
struct sc_gpu_agent {
	uint32_t id;		   /* the runtime's ordinal, as GPU ops name it */
	uint32_t type;		   /* enum sc_agent_type */
	const char *name, *vendor; /* interned */
	uint8_t uuid[16];
	uint64_t memory_bytes;
	uint32_t multiprocessors, compute_major, compute_minor;
	uint32_t pci_domain, pci_bus, pci_device;
};

struct sc_gpu_stream {
	uint64_t stream;
	uint32_t agent;
	const char *name; /* interned */
};

#define SC_CORR_HOST 0x1u    /* a host region carries the correlation id */
#define SC_CORR_DEVICE 0x2u  /* a GPU op carries it */
#define SC_CORR_OP_SHIFT 2   /* above the two flags: how many GPU ops carry it (30 bits) */
#define SC_CORR_TID_SHIFT 32 /* above those: the host call's thread */

struct sc_process;

struct sc_image;

/* The records of an image that has no raw file (an importer made it), produced anew on each
 * call in the order a raw file would hold them. */
struct sc_record_feed {
	int (*foreach)(void *src, const struct sc_image *img, sc_raw_record_fn cb, void *ctx);
	void *src;
	const char *origin; /* the file they come from */
};

struct sc_coverage {
	uint64_t addr;
	uint64_t calls;
};

/* A syscope wrapper's name and the module of the function it stands for (NULL: none). */
struct sc_wrapped_module {
	const char *name; /* interned */
	const char *module;
};

struct sc_image {
	struct sc_raw *raw;	    /* NULL for an imported image */
	struct sc_record_feed feed; /* for an imported image */
	struct sc_process *proc;
	int32_t pid, ppid;
	uint32_t uid;
	uint64_t start_ns, end_ns, last_ts, start_realtime_ns;
	uint32_t end_reason; /* enum sc_end_reason */
	int32_t end_status;
	int killed_by; /* no end recorded, and the launcher saw this signal end it (SIGKILL) */
	bool on_merged_clock; /* times moved onto a merge's one clock (store/rocpd_clock.h) */
	const char *exe, *cwd, *exec_path; /* interned; NULL when unknown */
	const char *hostname;
	VEC(const char *) argv;
	VEC(const char *) env;
	VEC(const char *) settings; /* "NAME=value" as the runtime resolved them */
	VEC(struct sc_module) modules;
	VEC(struct sc_counter_track) counter_tracks;
	struct sc_hashmap counter_index;   /* track id + 1 -> index in counter_tracks + 1 */
	VEC(struct sc_gpu_agent) agents;   /* every agent a GPU op names, recorded or not */
	VEC(struct sc_gpu_stream) streams; /* every (agent, stream) a GPU op names */
	struct sc_hashmap names;	   /* sc_rec_string id -> interned text */
	/* Correlation id -> SC_CORR_* flags, GPU op count and host thread: notes gathered in a
	 * bounded sorter while the image is read, then one slot per id in a spilled table
	 * sorted by id (sc_image_corr_finish; a lookup moves its cache, hence pointers). */
	struct sc_spill_sort *corr_notes;
	struct sc_spill_table *corr;
	VEC(int32_t) children; /* fork/spawn records */
	/* Coverage mode: each patched function's address and calls (FUNC_COVERAGE). */
	VEC(struct sc_coverage) coverage;
	/* Profiles: the module each syscope wrapper's name stands for (stack_path.c), looked
	 * up once per name; module NULL when none of the image's modules exports it. */
	VEC(struct sc_wrapped_module) wrapped_modules;
	struct sc_hashmap func_ids; /* FUNC_ID: id + 1 -> address (FUNC_CALL records name ids) */
	uint64_t regions, marks, counter_values; /* counts, for the summary */
	int32_t mpi_rank, mpi_size; /* from MPI_Init's record: rank + 1 (0: none), job size */
	uint64_t gpu_ops[SC_GPU_OP_KINDS];	      /* by enum sc_gpu_op_kind */
	uint64_t gpu_busy_ns;			      /* kernels, copies and sets, summed */
	uint64_t gpu_static_allocs, gpu_static_bytes; /* of gpu_ops[SC_GPU_ALLOC]: module globals */
	uint64_t lost_records, lost_bytes, lost_samples;
	int64_t crash_stack;		   /* index of the crash stack in sc_model.stacks, or -1 */
	const char *pmc_names[SC_PMC_MAX]; /* CPU counters (--cpu-events), interned */
	uint32_t pmc_n;
	struct sc_py_image *py; /* interpreters and code objects (python.h), or NULL */
	struct sc_py_callsites *py_callsites; /* Python stacks of CUDA calls (gpu_python.h) */
	/* GPU hardware counters per kernel (GPU_METRICS): the metric names, interned, and each
	 * kernel's values, gpu_metric_n of them from the index its correlation id maps to. */
	const char *gpu_metric_names[SC_GPU_METRICS_MAX];
	uint32_t gpu_metric_n;
	VEC(double) gpu_metric_values;
	struct sc_hashmap gpu_metric_index; /* corr_id -> index in gpu_metric_values + 1 */
	struct sc_nccl_links *nccl_links;   /* NCCL calls -> their GPU ops (nccl_links.h) */
	struct sc_perf_map *perf_map;	    /* JIT code names (perf_map.h), or NULL */
	bool perf_map_read;
};

/* The address of function id `id` of a FUNC_CALL record with `flags` (a Python code id's
 * SC_PY_FUNC_ADDR), 0 when no FUNC_ID named it. */
uint64_t sc_image_func_addr(const struct sc_image *img, uint32_t id, uint16_t flags);

/* The counter track of CPU counter `event` of thread `tid` (built from PMC_READ records,
 * named "<event> [tid]"): ids no runtime hands out. */
#define SC_PMC_TRACK_ID(tid, event) (0x80000000u | ((uint32_t)(tid)&0xfffffff) << 3 | (event))
/* Its value is what the event counted since the thread's previous sample. */

struct sc_process {
	int32_t pid, ppid;
	const char *hostname;	       /* interned */
	VEC(struct sc_image *) images; /* by start time; more than one when it exec'd */
	VEC(struct sc_thread) threads;
	struct sc_hashmap thread_index; /* tid -> index + 1 */
	uint64_t samples[SC_KINDS];
};

/* Stack flag (beside enum sc_sample_flags), set by importers only: the frames are indices in
 * sc_model.symframes, symbolized already, instead of addresses. */
#define SC_STACK_SYMBOLIC 0x8000u

/* One distinct stack: the same image, thread, kind, flags and frames. */
struct sc_stack {
	struct sc_image *img;
	int32_t tid;
	uint16_t kind, flags;
	uint32_t nframes;
	uint32_t py_nframes; /* Python frames (struct sc_py_frame) after the native ones */
	uint64_t *frames;    /* leaf first; frames[0] is an exact PC, the rest return addresses */
	uint64_t first_ts;
	uint64_t hash;
	uint32_t next_same_hash;
	struct sc_stats w;
};

struct sc_model {
	struct sc_session *session;
	struct sc_strtab strings;
	struct sc_symbolizer sym;
	VEC(struct sc_image *) images;
	VEC(struct sc_process *) processes; /* by first start time */
	VEC(struct sc_stack) stacks;
	struct sc_hashmap stack_index; /* hash -> stack index + 1 (chained) */
	uint32_t recent_stacks[4];     /* the stacks sc_model_stack_of found last, + 1 (0: none) */
	unsigned recent_next;
	struct sc_hashmap demangled; /* interned name -> its interned demangled form */
	VEC(uint64_t *) frame_blocks;
	uint64_t *frame_free;
	size_t frame_left;
	VEC(struct sc_note) notes;
	VEC(struct sc_symframe) symframes; /* frames of imported stacks (SC_STACK_SYMBOLIC) */
	void *importer;			   /* what made imported images, and frees them */
	void (*importer_free)(void *importer);
	uint64_t import_rows; /* rows of the databases one pass over them reads */
	struct sc_raw_stats stats;
	uint64_t samples[SC_KINDS];
	uint64_t first_ts, last_ts; /* over every image */
	/* The reader's view (func_view.h): which instrumented functions the outputs show and
	 * how they are labelled; NULL shows them all, unlabelled. Owned by the caller. */
	struct sc_func_view *view;
	/* CPU counters per stack: SC_PMC_MAX sums per stack (in its image's event order),
	 * grown with the stacks once any image has counters; empty otherwise. */
	VEC(double) stack_pmc;
	bool python_native; /* PYTHON_NATIVE: spliced stacks keep the interpreter's frames */
};

/* The CPU counter sums of stack `idx` (SC_PMC_MAX of them), or NULL when none. */
static inline const double *sc_stack_pmc(const struct sc_model *m, size_t idx)
{
	return (idx + 1) * SC_PMC_MAX <= m->stack_pmc.n ? &m->stack_pmc.v[idx * SC_PMC_MAX] : NULL;
}

/*
 * Build the model of an opened session. Problems (damaged records, unreadable files) are
 * added to the session's problem list; the model holds whatever was valid. `inlines`
 * controls inline frames in symbolization. Returns 0.
 */
int sc_model_build(struct sc_model *m, struct sc_session *s, bool inlines);
/* The counter track `id` of an image, or NULL. */
const struct sc_counter_track *sc_image_counter_track(const struct sc_image *img, uint32_t id);
void sc_model_free(struct sc_model *m);

/* The same in steps, for importers: init, add images (with a record feed), finish (reads
 * every image's records: metadata, then samples). */
void sc_model_init(struct sc_model *m, struct sc_session *s, bool inlines);
struct sc_image *sc_model_add_image(struct sc_model *m, int32_t pid, const char *hostname);
void sc_model_finish(struct sc_model *m);

/* Every record of an image, from its raw file or its feed. */
int sc_image_foreach(const struct sc_image *img, sc_raw_record_fn cb, void *ctx,
		     struct sc_raw_stats *stats, sc_raw_diag_fn diag, void *diag_ctx);

struct sc_thread *sc_process_thread(struct sc_process *p, int32_t tid);
/* The agent or stream of an image, or NULL. */
const struct sc_gpu_agent *sc_image_agent(const struct sc_image *img, uint32_t id);
/* The GPU counter values of the kernel of `corr_id` (img->gpu_metric_n of them; NaN: not
 * measured), or NULL. */
const double *sc_image_gpu_metrics(const struct sc_image *img, uint64_t corr_id);
const struct sc_gpu_stream *sc_image_stream(const struct sc_image *img, uint32_t agent,
					    uint64_t stream);
/* A non-zero key for maps of (agent, stream). */
uint64_t sc_stream_key(uint32_t agent, uint64_t stream);
/* Both a host call and device work carry correlation id `corr` (a flow links them). */
bool sc_image_corr_linked(const struct sc_image *img, uint64_t corr);
/* How many GPU ops carry `corr` (a graph launch or a split copy causes several). */
uint64_t sc_image_corr_ops(const struct sc_image *img, uint64_t corr);
/* The thread of the host call with correlation id `corr`, 0 if unknown. */
int32_t sc_image_corr_tid(const struct sc_image *img, uint64_t corr);
/* What the model notes of a correlation id while it reads an image: `who` SC_CORR_HOST
 * (the host call, on thread `tid`) or SC_CORR_DEVICE (one more GPU op). The lookups above
 * answer once sc_image_corr_finish has run (sc_model_finish runs it after each image). */
void sc_image_note_corr(struct sc_image *img, uint64_t corr, unsigned who, int32_t tid);
void sc_image_corr_finish(struct sc_image *img);
void sc_image_corr_free(struct sc_image *img);
/* The MPI rank (from MPI_Init's record, else the launcher's task id in the image's
 * environment), or -1. */
int sc_image_rank(const struct sc_image *img);
/* The MPI job's size (MPI_COMM_WORLD) as MPI_Init reported it, or 0. */
int sc_image_mpi_size(const struct sc_image *img);
/* `name` (interned) demangled, once per name (kernel names come with every launch). */
const char *sc_model_demangle(struct sc_model *m, const char *name);
/* The text of string `id` of an image, or NULL. */
const char *sc_image_name(const struct sc_image *img, uint32_t id);
/* The index of a sample's stack in m->stacks (adding it if it is new). */
uint32_t sc_model_stack_of(struct sc_model *m, struct sc_image *img, int32_t tid,
			   const struct sc_record *sample);
/* The module of `img` containing runtime address `addr` at time `ts`, or NULL. */
struct sc_module *sc_image_module_at(struct sc_image *img, uint64_t addr, uint64_t ts);
/* Open (once) and return the symbolizer file of a module. */
struct sc_elf *sc_model_module_elf(struct sc_model *m, struct sc_image *img, struct sc_module *mod);
/* The interned name of the function at runtime address `addr` of `mod` (NULL: none), or
 * "0x<addr>" when it has none; `*frame` gets its symbolized frame (file, line), or NULL.
 * A traced Python call's address (SC_PY_FUNC_ADDR, no module) is named by its code. */
const char *sc_model_function_at(struct sc_model *m, struct sc_image *img, struct sc_module *mod,
				 uint64_t addr, const struct sc_symframe **frame);
const char *sc_kind_metric(unsigned kind); /* "sampling_cpu_clock", ... */
/* Sample kinds that make profiles and timeline samples (not crash stacks). */
static inline bool sc_sample_kind_profiled(unsigned kind)
{
	return kind == SC_SAMPLE_CPUTIME || kind == SC_SAMPLE_REALTIME ||
	       kind == SC_SAMPLE_OVERFLOW;
}
/* What a sample of `kind` weighs: "sec", or "events" for overflow samples. */
static inline const char *sc_sample_kind_unit(unsigned kind)
{
	return kind == SC_SAMPLE_OVERFLOW ? "events" : "sec";
}
/* The rate of a sampling period in Hz, rounded to 1 mHz (periods are whole nanoseconds). */
double sc_period_hz(uint64_t period_ns);
/* Samples per second of the time they cover (thread CPU time for CPU-time sampling, wall
 * time for wall-clock sampling): what the sampler delivered, to compare with the request. */
double sc_thread_delivered_hz(const struct sc_thread *t, unsigned kind);
const char *sc_end_reason_text(uint32_t reason);

#endif /* SYSCOPE_MODEL_MODEL_H */
