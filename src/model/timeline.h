/* SPDX-License-Identifier: MIT */
/*
 * The timeline of a process image, replayed from its raw file for the trace sinks (Perfetto,
 * rocpd): regions as they begin and end (paired per thread, nesting kept), marks, counter
 * values, and samples with the index of their stack in the model. Instrumented calls of
 * FUNC_CALL records come whole (region_begin then region_end at once) in the order they
 * ended, callees before their callers; OpenMP constructs of OMP_REGION records come whole
 * before what ran inside them: consumers nest by time. Events of one thread come
 * in the order the thread recorded them; threads are not interleaved by time (both trace
 * formats sort on reading). Nothing is kept but the open regions of each thread, so a replay
 * takes memory for the model only, whatever the size of the trace.
 */
#ifndef SYSCOPE_MODEL_TIMELINE_H
#define SYSCOPE_MODEL_TIMELINE_H

#include "model.h"

struct sc_region_ev {
	uint64_t start;
	uint64_t end;	  /* 0 in region_begin */
	const char *name; /* NUL-terminated; valid during the callback */
	const char *category;
	const char *args; /* nargs (type, name, value) string triples */
	uint32_t args_len;
	uint32_t nargs;
	uint64_t corr_id;   /* host call -> device work link, 0 = none */
	uint32_t depth;	    /* 0 for a thread's outermost region */
	bool unterminated;  /* closed by syscope at the thread's or process's end */
	uint64_t func_addr; /* an instrumented function's address; 0 for other regions */
	uint32_t context;   /* the stack it ran on (SC_FUNC_CONTEXT): 0 the thread's own */
	bool whole;	    /* a FUNC_CALL: begin and end come together, callees first */
};

/* Device work (sc_rec_gpu_op), with its names resolved. */
struct sc_gpu_op_ev {
	const struct sc_rec_gpu_op *rec; /* every field as recorded */
	const char *name;		 /* interned: the kernel's demangled name, or the op's */
	const char *mangled;		 /* interned: the kernel name as recorded */
	const struct sc_gpu_agent *agent;
	const struct sc_gpu_stream *stream; /* NULL for allocations */
	/* A kernel's GPU counters (img->gpu_metric_names, gpu_metric_n; NaN: not measured), or
	 * NULL. */
	const double *metrics;
};

/* Callbacks; any may be NULL. `t` is never NULL, except for a GPU op whose issuing thread
 * is unknown. */
struct sc_timeline_ops {
	void (*region_begin)(void *ctx, struct sc_image *img, struct sc_thread *t,
			     const struct sc_region_ev *r);
	void (*region_end)(void *ctx, struct sc_image *img, struct sc_thread *t,
			   const struct sc_region_ev *r);
	void (*mark)(void *ctx, struct sc_image *img, struct sc_thread *t,
		     const struct sc_region_ev *r);
	void (*counter)(void *ctx, struct sc_image *img, struct sc_thread *t,
			const struct sc_counter_track *track, uint64_t ts, double value);
	void (*sample)(void *ctx, struct sc_image *img, struct sc_thread *t, uint64_t ts,
		       uint64_t cpu_ns, uint32_t stack);
	void (*gpu_op)(void *ctx, struct sc_image *img, struct sc_thread *t,
		       const struct sc_gpu_op_ev *op);
	/* Calls that were only counted (a throttled function's FUNC_COUNT, MPI queries'
	 * MPI_COUNT): how many, and their total time; `name` and `category` (interned) as
	 * their regions'. */
	void (*func_count)(void *ctx, struct sc_image *img, struct sc_thread *t, const char *name,
			   const char *category, uint64_t calls, uint64_t total_ns);
	/* A throttled Python function's calls aggregated in the process (FUNC_STATS). */
	void (*func_stats)(void *ctx, struct sc_image *img, struct sc_thread *t, const char *name,
			   const struct sc_rec_func_stats *stats);
};

struct sc_timeline_stats {
	uint64_t regions, marks, counters, samples, gpu_ops;
	uint64_t unmatched_ends; /* region ends with no region open on their thread */
	uint64_t unterminated;	 /* regions still open at their thread's end */
	uint64_t too_deep;	 /* regions nested deeper than the replay keeps */
	uint64_t unknown_ids;	 /* FUNC_CALL records whose function id no FUNC_ID named */
};

/* Replay one image. Returns 0. */
int sc_timeline_replay(struct sc_model *m, struct sc_image *img, const struct sc_timeline_ops *ops,
		       void *ctx, struct sc_timeline_stats *stats);

/* Iterate the (type, name, value) argument triples of a region: returns the next position,
 * or NULL after the last. */
const char *sc_region_arg_next(const char *p, const char *end, char *type, const char **name,
			       const char **value);

/* The name rocpd gives an operation (MEMORY_COPY_HOST_TO_DEVICE, ...), for ops without one. */
const char *sc_gpu_op_default_name(uint16_t kind, uint16_t copy_kind);
/* "HtoD", "DtoH", ...: the short form of a copy direction. */
const char *sc_copy_kind_short(uint16_t copy_kind);
/* rocpd's names: the category of an op's kind (KERNEL_DISPATCH, MEMORY_COPY,
 * MEMORY_ALLOCATION), an allocation's type (ALLOC, FREE) and level (REAL, VIRTUAL,
 * SCRATCH; enum sc_gpu_mem_level). */
const char *sc_gpu_op_category(uint16_t kind);
const char *sc_gpu_alloc_type(uint16_t kind);
const char *sc_gpu_mem_level(uint16_t level);

#endif /* SYSCOPE_MODEL_TIMELINE_H */
