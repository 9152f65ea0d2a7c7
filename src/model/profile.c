/* SPDX-License-Identifier: MIT */
/*
 * Building every profile of a model (sc_profiles_build): the sample profiles here, from each
 * distinct stack's path (stack_path.c); then the region profiles (region_profile.c) and the
 * GPU time by Python line (gpu_python.c); all of them on the blocks of profile_blocks.c.
 */
#include "gpu_python.h"
#include "profile_build.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

static void python_counts(struct sc_profile *p, struct sc_tree *t, const struct sc_stack *st)
{
	const struct sc_py_splice *sp = &p->set->last_splice;

	p->py_samples += st->w.count;
	if (sp->extra_groups)
		p->py_extra_groups += st->w.count;
	if (sp->extra_evals)
		p->py_extra_evals += st->w.count;
	if (st->flags & SC_STACK_PY_TRUNCATED)
		p->py_truncated += st->w.count;
	if (st->flags & SC_STACK_PY_BAD_CODE)
		p->py_bad_code += st->w.count;
	p->merged.gil[sp->gil] += st->w.count;
	if (t)
		t->gil[sp->gil] += st->w.count;
}

static int by_creation(const void *a, const void *b)
{
	const struct sc_tree *x = a, *y = b;

	return x->thread_idx < y->thread_idx ? -1 : x->thread_idx > y->thread_idx;
}

void sc_profiles_build(struct sc_profile_set *set, struct sc_model *m, bool regions)
{
	VEC(uint32_t) stamp_f = { 0 }, stamp_l = { 0 };

	memset(set, 0, sizeof(*set));
	set->model = m;
	sc_hashmap_init(&set->func_index);
	sc_hashmap_init(&set->line_index);
	/* Profiles in process order, so outputs are listed the same way every time. */
	for (size_t i = 0; i < m->processes.n; i++)
		for (unsigned k = 0; k < SC_KINDS; k++)
			if (sc_sample_kind_profiled(k) && m->processes.v[i]->samples[k])
				sc_profile_for(set, m->processes.v[i], k);

	for (size_t s = 0; s < m->stacks.n; s++) {
		const struct sc_stack *st = &m->stacks.v[s];
		struct sc_profile *p;
		uint32_t *funcs, *lines;
		size_t n;

		if (!sc_sample_kind_profiled(st->kind))
			continue;
		p = sc_profile_for(set, st->img->proc, st->kind);
		n = sc_stack_path(set, st, &funcs, &lines);
		sc_tree_add(&p->merged, funcs, n, &st->w);
		uint64_t *tt = sc_hashmap_get(&p->thread_tree, (uint64_t)(uint32_t)st->tid + 1);

		if (tt)
			sc_tree_add(&p->threads.v[*tt - 1], funcs, n, &st->w);
		VEC_RESERVE(&stamp_f, set->funcs.n);
		VEC_RESERVE(&stamp_l, set->lines.n);
		while (stamp_f.n < set->funcs.n)
			*VEC_PUSH(&stamp_f) = NONE;
		while (stamp_l.n < set->lines.n)
			*VEC_PUSH(&stamp_l) = NONE;
		if (!p->pmc_n && st->img->pmc_n) { /* the process's events, from its image */
			p->pmc_n = st->img->pmc_n;
			memcpy(p->pmc_names, st->img->pmc_names, sizeof(p->pmc_names));
		}
		sc_profile_flat_add(p, funcs, lines, n, &st->w, sc_stack_pmc(m, s), stamp_f.v,
				    stamp_l.v, (uint32_t)s);
		sc_stats_merge(&p->total, &st->w);
		if (st->flags & SC_SAMPLE_TRUNCATED)
			p->truncated += st->w.count;
		if (st->flags & SC_SAMPLE_PYTHON)
			python_counts(p, tt ? &p->threads.v[*tt - 1] : NULL, st);
	}
	if (regions)
		sc_region_profiles_build(set, m);
	sc_gpu_python_profiles_build(set, m);
	for (size_t i = 0; i < set->profiles.n; i++) {
		struct sc_profile *p = set->profiles.v[i];
		size_t keep = 0;

		/* Threads without samples of this kind have empty trees: leave them out. */
		for (size_t t = 0; t < p->threads.n; t++) {
			if (p->threads.v[t].nodes.v[0].incl.count)
				p->threads.v[keep++] = p->threads.v[t];
			else
				sc_tree_free(&p->threads.v[t]);
		}
		p->threads.n = keep;
		if (p->threads.n > 1)
			qsort(p->threads.v, p->threads.n, sizeof(*p->threads.v), by_creation);
		sc_hashmap_free(&p->thread_tree);
	}
	VEC_FREE(&stamp_f);
	VEC_FREE(&stamp_l);
}

void sc_profiles_free(struct sc_profile_set *set)
{
	for (size_t i = 0; i < set->profiles.n; i++) {
		struct sc_profile *p = set->profiles.v[i];

		sc_tree_free(&p->merged);
		for (size_t t = 0; t < p->threads.n; t++)
			sc_tree_free(&p->threads.v[t]);
		VEC_FREE(&p->threads);
		VEC_FREE(&p->funcs);
		VEC_FREE(&p->lines);
		VEC_FREE(&p->func_pmc);
		free(p);
	}
	VEC_FREE(&set->profiles);
	VEC_FREE(&set->funcs);
	VEC_FREE(&set->lines);
	VEC_FREE(&set->stack_gil);
	sc_hashmap_free(&set->func_index);
	sc_hashmap_free(&set->line_index);
	sc_stack_path_free();
}
