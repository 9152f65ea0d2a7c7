/* SPDX-License-Identifier: MIT */
/*
 * Sampling profiles of one process and one sample kind, built from the model's stacks:
 * a call tree per thread and one merged over threads, and flat statistics per function and
 * per source line. Each statistic is over sample weights in seconds: count, sum, sum of
 * squares, min, max; inclusive (samples anywhere below) and exclusive (samples here).
 *
 * Frames: every raw frame becomes its inline chain; syscope's own frames are removed
 * (a syscope wrapper at the leaf stays, named after the function it wraps, and hides the
 * libc frames below it); a stack cut by the depth limit starts at a "[truncated]" root.
 */
#ifndef SYSCOPE_MODEL_PROFILE_H
#define SYSCOPE_MODEL_PROFILE_H

#include "model.h"

struct sc_func {
	const char *name;   /* interned */
	const char *module; /* interned basename */
};

struct sc_line {
	uint32_t func;
	const char *file; /* interned, "" when unknown */
	uint32_t line;
};

struct sc_node {
	uint32_t func;
	uint32_t parent;
	uint32_t first_child, next_sibling; /* UINT32_MAX = none */
	uint32_t depth;			    /* root = 0; its children 1 */
	struct sc_stats incl, excl;
};

/* Node 0 is a root without function; its children are the outermost frames. */
struct sc_tree {
	int32_t tid;	     /* -1 for the tree merged over threads */
	uint32_t thread_idx; /* index in the process's thread list; unused when merged */
	VEC(struct sc_node) nodes;
	struct sc_hashmap children;  /* (parent << 32 | func) + 1 -> node index */
	uint64_t gil[SC_GIL_STATES]; /* samples of Python threads by GIL state (python.h) */
};

struct sc_flat {
	struct sc_stats incl, excl;
	/* Regions: GPU time of the work launched inside (seconds; kernels, copies and sets
	 * whose launching call, by correlation id, lies inside; counted once in recursion). */
	double gpu_launched;
};

struct sc_profile_set; /* the interning tables shared by all profiles of a conversion */

struct sc_profile {
	struct sc_profile_set *set;
	struct sc_process *proc;
	unsigned kind;	    /* enum sc_sample_kind */
	const char *metric; /* "sampling_cpu_clock", "sampling_wall_clock" */
	struct sc_tree merged;
	VEC(struct sc_tree) threads;   /* ordered by thread creation */
	struct sc_hashmap thread_tree; /* tid + 1 -> index in threads + 1, while building */
	VEC(struct sc_flat) funcs;     /* indexed by function id */
	VEC(struct sc_flat) lines;     /* indexed by line id */
	struct sc_stats total;
	uint64_t truncated; /* samples whose stacks hit the depth limit */
	/* Samples whose Python frames did not line up with the native eval frames (python.h:
	 * groups put at the root, eval frames left without Python frames). */
	uint64_t py_extra_groups, py_extra_evals, py_samples;
	uint64_t py_truncated, py_bad_code; /* Python walks cut at their bound, stopped early */
	/* CPU counters (--cpu-events) attributed to functions: what was counted between a
	 * thread's previous sample and each sample goes to that sample's functions. */
	unsigned pmc_n;
	const char *pmc_names[SC_PMC_MAX];
	VEC(double) func_pmc; /* per function id: SC_PMC_MAX inclusive, then SC_PMC_MAX self */
	double pmc_total[SC_PMC_MAX];
};

/* Function `id`'s counter sums (inclusive[SC_PMC_MAX], then self[SC_PMC_MAX]), or NULL. */
static inline const double *sc_profile_func_pmc(const struct sc_profile *p, size_t id)
{
	return p->pmc_n && (id + 1) * 2 * SC_PMC_MAX <= p->func_pmc.n
		       ? &p->func_pmc.v[id * 2 * SC_PMC_MAX]
		       : NULL;
}

struct sc_profile_set {
	struct sc_model *model;
	VEC(struct sc_func) funcs;
	VEC(struct sc_line) lines;
	struct sc_hashmap func_index; /* hash -> id + 1 */
	struct sc_hashmap line_index;
	VEC(struct sc_profile *) profiles; /* per process (model order), then kind */
	struct sc_py_splice last_splice;   /* what the last sc_stack_path made of Python */
	VEC(uint8_t) stack_gil;		   /* sc_stack_gil's answers, per stack + 1 (0: not yet) */
};

/* Build the profiles of every process and kind that has samples, and with `regions` the
 * wall_clock profiles of regions (their memory grows with the number of regions, so only
 * when an output shows them). */
void sc_profiles_build(struct sc_profile_set *set, struct sc_model *m, bool regions);
void sc_profiles_free(struct sc_profile_set *set);

/*
 * The symbolized path of a stack, root to leaf, as (func, line) ids: fills `funcs` and
 * `lines` (either may be NULL) and returns the length. Python frames are spliced in
 * (python.h): a function named by its qualname in the "module" of its file; set->last_splice
 * tells the stack's GIL state and how the splice went.
 */
size_t sc_stack_path(struct sc_profile_set *set, const struct sc_stack *st, uint32_t **funcs,
		     uint32_t **lines);
/* The frames of the path sc_stack_path made last, as addresses: per frame its module and the
 * address looked up (a return address less one), NULL and 0 for frames without one (Python,
 * unknown, syscope's). Valid until the next sc_stack_path. */
void sc_stack_path_addresses(const struct sc_module *const **mods, const uint64_t **addrs);

/* The GIL state (enum sc_gil_state) of stack `idx` of the model, once its native frames are
 * symbolized: SC_GIL_NONE for stacks without Python. */
unsigned sc_stack_gil(struct sc_profile_set *set, uint32_t idx);

/* Call-tree outputs (text and JSON trees) stop at this depth: below it, calls stay in the
 * node at the cut, which says so. Readers refuse deeper nesting and a 10 000-deep recursion
 * would make each line 20 000 characters wide; the flat lists count every call. */
#define SC_TREE_MAX_DEPTH 256

/* Children of a node sorted by inclusive sum, largest first. Caller frees. */
uint32_t *sc_tree_sorted_children(const struct sc_tree *t, uint32_t node, size_t *n);

/* Ids of functions (lines = false) or lines with samples, by exclusive time, largest first.
 * Caller frees. */
uint32_t *sc_profile_sorted_flat(const struct sc_profile *p, bool lines, size_t *n);
/* For each function id, its line with the most exclusive time (or UINT32_MAX). Caller frees. */
uint32_t *sc_profile_hot_lines(const struct sc_profile *p);

static inline const struct sc_func *sc_func_of(const struct sc_profile_set *set, uint32_t id)
{
	return &set->funcs.v[id];
}

#endif /* SYSCOPE_MODEL_PROFILE_H */
