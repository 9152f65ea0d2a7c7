/* SPDX-License-Identifier: MIT */
/*
 * The building blocks of profiles (profile_blocks.c), shared by the builders: sample profiles
 * (profile.c, from stack_path.c's paths), region profiles (region_profile.c) and GPU time by
 * Python line (gpu_python.c). The blocks import no builder. Internal to the model.
 */
#ifndef SYSCOPE_MODEL_PROFILE_BUILD_H
#define SYSCOPE_MODEL_PROFILE_BUILD_H

#include "profile.h"

/* The profile of `proc` and `kind`, created (with an empty tree per thread) on first use. */
struct sc_profile *sc_profile_for(struct sc_profile_set *set, struct sc_process *proc,
				  unsigned kind);
/* Ids of interned (function, module) and (function, file, line), created on first use. */
uint32_t sc_profile_func_id(struct sc_profile_set *set, const char *name, const char *module);
uint32_t sc_profile_line_id(struct sc_profile_set *set, uint32_t func, const char *file,
			    uint32_t line);
/* The child of `parent` for `func`, created on first use. */
uint32_t sc_tree_child(struct sc_tree *t, uint32_t parent, uint32_t func);
/* Add a path of `n` function ids (root first) with weight `w` to tree `t`. */
void sc_tree_add(struct sc_tree *t, const uint32_t *funcs, size_t n, const struct sc_stats *w);
void sc_tree_free(struct sc_tree *t);
/* Add a path to p's flat tables: inclusive once per function and line of the path (stamps:
 * per id, the last `stamp` that counted it), exclusive to the leaf; CPU counter sums with it. */
void sc_profile_flat_add(struct sc_profile *p, const uint32_t *funcs, const uint32_t *lines,
			 size_t n, const struct sc_stats *w, const double *pmc, uint32_t *stamp_f,
			 uint32_t *stamp_l, uint32_t stamp);
/* stack_path.c: free the buffers sc_stack_path keeps between calls. */
void sc_stack_path_free(void);
/* The flat entry of function id `id` in p->funcs, the table grown to hold it. */
struct sc_flat *sc_profile_func_flat(struct sc_profile *p, uint32_t id);
/* The counter sums of function `id` (inclusive[SC_PMC_MAX], then self), grown to hold it. */
double *sc_profile_func_pmc_at(struct sc_profile *p, uint32_t id);
/* The tree of thread `tid` in a profile being built, or NULL. */
struct sc_tree *sc_profile_thread_tree(struct sc_profile *p, int32_t tid);

/* Add one weighted path (root to leaf, `n` function and line ids) of thread `tid` to the
 * merged tree, the thread's tree and the flat tables (a function or line counts once per
 * path). */
void sc_profile_add_path(struct sc_profile *p, int32_t tid, const uint32_t *funcs,
			 const uint32_t *lines, size_t n, double weight);

/* region_profile.c: the wall-clock profiles of every process's regions. */
void sc_region_profiles_build(struct sc_profile_set *set, struct sc_model *m);

#endif /* SYSCOPE_MODEL_PROFILE_BUILD_H */
