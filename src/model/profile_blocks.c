/* SPDX-License-Identifier: MIT */
/*
 * The building blocks every profile builder uses (profile_build.h): interned function and
 * line ids, call trees, flat tables, the profile of a process and kind, and the orders the
 * sinks list them in. Imports nothing of the builders, which all import it.
 */
#include "profile_build.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

uint32_t sc_profile_func_id(struct sc_profile_set *set, const char *name, const char *module)
{
	uint64_t key = sc_hash_bytes(&name, sizeof(name), (uint64_t)(uintptr_t)module);
	bool inserted;
	uint64_t *slot;

	/* Interned strings: pointer identity is string identity. Chain on hash collision. */
	for (;;) {
		slot = sc_hashmap_upsert(&set->func_index, key, 0, &inserted);
		if (inserted)
			break;
		struct sc_func *f = &set->funcs.v[*slot - 1];

		if (f->name == name && f->module == module)
			return (uint32_t)(*slot - 1);
		key = sc_hash_u64(key);
	}
	struct sc_func *f = VEC_PUSH(&set->funcs);

	f->name = name;
	f->module = module;
	*slot = set->funcs.n;
	return (uint32_t)(set->funcs.n - 1);
}

uint32_t sc_profile_line_id(struct sc_profile_set *set, uint32_t func, const char *file,
			    uint32_t line)
{
	uint64_t key = sc_hash_bytes(&file, sizeof(file), ((uint64_t)func << 32) | line);
	bool inserted;
	uint64_t *slot;

	for (;;) {
		slot = sc_hashmap_upsert(&set->line_index, key, 0, &inserted);
		if (inserted)
			break;
		struct sc_line *l = &set->lines.v[*slot - 1];

		if (l->func == func && l->file == file && l->line == line)
			return (uint32_t)(*slot - 1);
		key = sc_hash_u64(key);
	}
	struct sc_line *l = VEC_PUSH(&set->lines);

	l->func = func;
	l->file = file;
	l->line = line;
	*slot = set->lines.n;
	return (uint32_t)(set->lines.n - 1);
}

static void tree_init(struct sc_tree *t, int32_t tid)
{
	struct sc_node *root;

	memset(t, 0, sizeof(*t));
	t->tid = tid;
	sc_hashmap_init(&t->children);
	root = VEC_PUSH(&t->nodes);
	root->func = NONE;
	root->parent = NONE;
	root->first_child = root->next_sibling = NONE;
}

uint32_t sc_tree_child(struct sc_tree *t, uint32_t parent, uint32_t func)
{
	bool inserted;
	uint64_t *slot =
		sc_hashmap_upsert(&t->children, ((uint64_t)parent << 32 | func) + 1, 0, &inserted);
	struct sc_node *n;
	uint32_t id;

	if (!inserted)
		return (uint32_t)*slot;
	id = (uint32_t)t->nodes.n;
	n = VEC_PUSH(&t->nodes);
	n->func = func;
	n->parent = parent;
	n->depth = t->nodes.v[parent].depth + 1;
	n->first_child = NONE;
	n->next_sibling = t->nodes.v[parent].first_child;
	t->nodes.v[parent].first_child = id;
	*slot = id;
	return id;
}

void sc_tree_add(struct sc_tree *t, const uint32_t *funcs, size_t n, const struct sc_stats *w)
{
	uint32_t node = 0;

	sc_stats_merge(&t->nodes.v[0].incl, w);
	for (size_t i = 0; i < n; i++) {
		node = sc_tree_child(t, node, funcs[i]);
		sc_stats_merge(&t->nodes.v[node].incl, w);
	}
	sc_stats_merge(&t->nodes.v[node].excl, w);
}

void sc_tree_free(struct sc_tree *t)
{
	VEC_FREE(&t->nodes);
	sc_hashmap_free(&t->children);
}

struct sc_profile *sc_profile_for(struct sc_profile_set *set, struct sc_process *proc,
				  unsigned kind)
{
	for (size_t i = 0; i < set->profiles.n; i++)
		if (set->profiles.v[i]->proc == proc && set->profiles.v[i]->kind == kind)
			return set->profiles.v[i];

	struct sc_profile *p = sc_xcalloc(1, sizeof(*p));

	p->set = set;
	p->proc = proc;
	p->kind = kind;
	p->metric = sc_kind_metric(kind);
	tree_init(&p->merged, -1);
	sc_hashmap_init(&p->thread_tree);
	for (size_t i = 0; i < proc->threads.n; i++) {
		struct sc_tree *t = VEC_PUSH(&p->threads);

		tree_init(t, proc->threads.v[i].tid);
		t->thread_idx = (uint32_t)i;
		*sc_hashmap_upsert(&p->thread_tree, (uint64_t)(uint32_t)t->tid + 1, 0, NULL) =
			p->threads.n;
	}
	*VEC_PUSH(&set->profiles) = p;
	return p;
}

static struct sc_flat *flat_at(void *vec_, size_t id);

struct sc_flat *sc_profile_func_flat(struct sc_profile *p, uint32_t id)
{
	return flat_at(&p->funcs, id);
}

struct sc_tree *sc_profile_thread_tree(struct sc_profile *p, int32_t tid)
{
	uint64_t *tt = sc_hashmap_get(&p->thread_tree, (uint64_t)(uint32_t)tid + 1);

	return tt ? &p->threads.v[*tt - 1] : NULL;
}

static struct sc_flat *flat_at(void *vec_, size_t id)
{
	VEC(struct sc_flat) *vec = vec_;

	while (vec->n <= id)
		VEC_PUSH(vec);
	return &vec->v[id];
}

/* Add a stack's statistics to the flat tables: exclusive to the leaf, inclusive once to each
 * distinct function or line on the path (recursion counts once). */
/* The counter sums of function `id`, the table grown to hold it. */
double *sc_profile_func_pmc_at(struct sc_profile *p, uint32_t id)
{
	size_t need = ((size_t)id + 1) * 2 * SC_PMC_MAX;

	VEC_RESERVE(&p->func_pmc, need);
	while (p->func_pmc.n < need)
		*VEC_PUSH(&p->func_pmc) = 0;
	return &p->func_pmc.v[(size_t)id * 2 * SC_PMC_MAX];
}

void sc_profile_flat_add(struct sc_profile *p, const uint32_t *funcs, const uint32_t *lines,
			 size_t n, const struct sc_stats *w, const double *pmc, uint32_t *stamp_f,
			 uint32_t *stamp_l, uint32_t stamp)
{
	for (size_t i = 0; i < n; i++) {
		if (stamp_f[funcs[i]] != stamp) {
			stamp_f[funcs[i]] = stamp;
			sc_stats_merge(&flat_at(&p->funcs, funcs[i])->incl, w);
			if (pmc) {
				double *f = sc_profile_func_pmc_at(p, funcs[i]);

				for (unsigned k = 0; k < p->pmc_n; k++)
					f[k] += pmc[k];
			}
		}
		if (stamp_l[lines[i]] != stamp) {
			stamp_l[lines[i]] = stamp;
			sc_stats_merge(&flat_at(&p->lines, lines[i])->incl, w);
		}
	}
	if (n) {
		sc_stats_merge(&flat_at(&p->funcs, funcs[n - 1])->excl, w);
		sc_stats_merge(&flat_at(&p->lines, lines[n - 1])->excl, w);
		if (pmc) {
			double *f = sc_profile_func_pmc_at(p, funcs[n - 1]);

			for (unsigned k = 0; k < p->pmc_n; k++) {
				f[SC_PMC_MAX + k] += pmc[k];
				p->pmc_total[k] += pmc[k];
			}
		}
	}
}

/* A Python stack's GIL state and splice outcome (of the sc_stack_path just made). */

void sc_profile_add_path(struct sc_profile *p, int32_t tid, const uint32_t *funcs,
			 const uint32_t *lines, size_t n, double weight)
{
	static VEC(uint32_t) stamp_f, stamp_l; /* the model is built by one thread */
	static uint32_t stamp;
	struct sc_profile_set *set = p->set;
	struct sc_stats w = { 0 };
	struct sc_tree *t = sc_profile_thread_tree(p, tid);

	sc_stats_add(&w, weight);
	sc_tree_add(&p->merged, funcs, n, &w);
	if (t)
		sc_tree_add(t, funcs, n, &w);
	while (stamp_f.n < set->funcs.n)
		*VEC_PUSH(&stamp_f) = NONE;
	while (stamp_l.n < set->lines.n)
		*VEC_PUSH(&stamp_l) = NONE;
	if (++stamp == NONE) { /* wrapped: no stale stamp may match */
		memset(stamp_f.v, 0xff, stamp_f.n * sizeof(*stamp_f.v));
		memset(stamp_l.v, 0xff, stamp_l.n * sizeof(*stamp_l.v));
		stamp = 0;
	}
	sc_profile_flat_add(p, funcs, lines, n, &w, NULL, stamp_f.v, stamp_l.v, stamp);
	sc_stats_merge(&p->total, &w);
}

static const struct sc_tree *sort_tree;

static int by_incl_desc(const void *a, const void *b)
{
	const struct sc_node *x = &sort_tree->nodes.v[*(const uint32_t *)a];
	const struct sc_node *y = &sort_tree->nodes.v[*(const uint32_t *)b];

	if (x->incl.sum != y->incl.sum)
		return x->incl.sum > y->incl.sum ? -1 : 1;
	return x->incl.count > y->incl.count ? -1 : x->incl.count < y->incl.count;
}

uint32_t *sc_tree_sorted_children(const struct sc_tree *t, uint32_t node, size_t *n)
{
	size_t count = 0;
	uint32_t *v;

	for (uint32_t c = t->nodes.v[node].first_child; c != NONE; c = t->nodes.v[c].next_sibling)
		count++;
	v = sc_xcalloc(count ? count : 1, sizeof(*v));
	count = 0;
	for (uint32_t c = t->nodes.v[node].first_child; c != NONE; c = t->nodes.v[c].next_sibling)
		v[count++] = c;
	sort_tree = t;
	qsort(v, count, sizeof(*v), by_incl_desc);
	*n = count;
	return v;
}

static const struct sc_profile *sort_profile;
static bool sort_lines;

static int flat_by_excl_desc(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct sc_flat *fx =
		sort_lines ? &sort_profile->lines.v[x] : &sort_profile->funcs.v[x];
	const struct sc_flat *fy =
		sort_lines ? &sort_profile->lines.v[y] : &sort_profile->funcs.v[y];

	if (fx->excl.sum != fy->excl.sum)
		return fx->excl.sum > fy->excl.sum ? -1 : 1;
	if (fx->incl.sum != fy->incl.sum)
		return fx->incl.sum > fy->incl.sum ? -1 : 1;
	return x < y ? -1 : x > y;
}

uint32_t *sc_profile_sorted_flat(const struct sc_profile *p, bool lines, size_t *n)
{
	size_t total = lines ? p->lines.n : p->funcs.n, count = 0;
	uint32_t *v = sc_xcalloc(total ? total : 1, sizeof(*v));

	for (size_t i = 0; i < total; i++) {
		const struct sc_flat *f = lines ? &p->lines.v[i] : &p->funcs.v[i];

		if (f->incl.count)
			v[count++] = (uint32_t)i;
	}
	sort_profile = p;
	sort_lines = lines;
	qsort(v, count, sizeof(*v), flat_by_excl_desc);
	*n = count;
	return v;
}

uint32_t *sc_profile_hot_lines(const struct sc_profile *p)
{
	const struct sc_profile_set *set = p->set;
	uint32_t *hot = sc_xcalloc(set->funcs.n ? set->funcs.n : 1, sizeof(*hot));

	for (size_t i = 0; i < set->funcs.n; i++)
		hot[i] = NONE;
	for (size_t l = 0; l < p->lines.n; l++) {
		uint32_t f = set->lines.v[l].func;
		const struct sc_flat *cur = &p->lines.v[l];

		if (!cur->incl.count)
			continue;
		if (hot[f] == NONE || cur->excl.sum > p->lines.v[hot[f]].excl.sum ||
		    (cur->excl.sum == p->lines.v[hot[f]].excl.sum &&
		     cur->incl.sum > p->lines.v[hot[f]].incl.sum))
			hot[f] = (uint32_t)l;
	}
	return hot;
}