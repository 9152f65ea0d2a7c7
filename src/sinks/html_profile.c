/* SPDX-License-Identifier: MIT */
/*
 * The report's sampled profile: one flame graph over every process (a process level when
 * there are several) and the top functions by self and by total time, of the CPU-time
 * samples (wall-clock or overflow samples when there are none).
 *
 * The flame graph keeps at most SC_HTML_FLAME_NODES nodes, those with the most samples
 * (ties to the shallower): a parent has at least its child's samples, so the nodes kept
 * form a tree, and what a kept node's dropped children had becomes its "[other]" child.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/strutil.h"
#include "html.h"

/* One node of one tree, as a candidate for the flame graph. */
struct cand {
	uint64_t count;
	uint32_t depth, tree, node;
};

struct flame {
	const struct sc_profile **profs;
	size_t nprofs;
	uint8_t **kept; /* per tree, per node */
	json_t *names, *nodes;
	struct sc_hashmap name_index; /* func id + 1 -> index in names + 1 */
	json_int_t other;	      /* index of "[other]" in names, or -1 */
	size_t n;
};

static int by_count(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

static json_int_t name_of(struct flame *f, uint32_t func, const char *label)
{
	const struct sc_profile_set *set = f->profs[0]->set;
	bool inserted = false;
	uint64_t *slot =
		label ? NULL : sc_hashmap_upsert(&f->name_index, (uint64_t)func + 1, 0, &inserted);

	if (slot && !inserted)
		return (json_int_t)*slot - 1;
	json_array_append_new(f->names, sc_html_str(label ? label : sc_func_of(set, func)->name));
	if (slot)
		*slot = json_array_size(f->names);
	return (json_int_t)json_array_size(f->names) - 1;
}

static size_t add_node(struct flame *f, json_int_t name, size_t parent, const struct sc_stats *incl,
		       double self)
{
	json_array_append_new(f->nodes, json_pack("[I, I, I, f, f]", name, (json_int_t)parent,
						  (json_int_t)incl->count, incl->sum, self));
	return f->n++;
}

static void emit(struct flame *f, uint32_t tree, uint32_t id, size_t parent)
{
	const struct sc_tree *t = &f->profs[tree]->merged;
	const struct sc_node *nd = &t->nodes.v[id];
	struct sc_stats other = { 0 };
	size_t nk, me = add_node(f, name_of(f, nd->func, NULL), parent, &nd->incl, nd->excl.sum);
	uint32_t *kids = sc_tree_sorted_children(t, id, &nk);

	for (size_t i = 0; i < nk; i++)
		if (f->kept[tree][kids[i]])
			emit(f, tree, kids[i], me);
		else
			sc_stats_merge(&other, &t->nodes.v[kids[i]].incl);
	if (other.count)
		add_node(f, f->other >= 0 ? f->other : (f->other = name_of(f, 0, "[other]")), me,
			 &other, other.sum);
	free(kids);
}

static void choose_nodes(struct flame *f)
{
	size_t total = 0, k = 0;
	struct cand *c;

	for (size_t i = 0; i < f->nprofs; i++)
		total += f->profs[i]->merged.nodes.n;
	c = sc_xcalloc(total ? total : 1, sizeof(*c));
	f->kept = sc_xcalloc(f->nprofs, sizeof(*f->kept));
	for (uint32_t i = 0; i < f->nprofs; i++) {
		const struct sc_tree *t = &f->profs[i]->merged;

		f->kept[i] = sc_xcalloc(t->nodes.n ? t->nodes.n : 1, 1);
		for (uint32_t j = 1; j < t->nodes.n; j++)
			if (t->nodes.v[j].depth <= SC_TREE_MAX_DEPTH)
				c[k++] = (struct cand){ t->nodes.v[j].incl.count,
							t->nodes.v[j].depth, i, j };
	}
	qsort(c, k, sizeof(*c), by_count);
	for (size_t i = 0; i < k && i < SC_HTML_FLAME_NODES; i++)
		f->kept[c[i].tree][c[i].node] = 1;
	free(c);
}

static json_t *flame_json(const struct sc_profile **profs, size_t n)
{
	struct flame f = { .profs = profs,
			   .nprofs = n,
			   .names = json_array(),
			   .nodes = json_array(),
			   .other = -1 };
	struct sc_stats all = { 0 };
	size_t root;

	sc_hashmap_init(&f.name_index);
	choose_nodes(&f);
	for (size_t i = 0; i < n; i++)
		sc_stats_merge(&all, &profs[i]->merged.nodes.v[0].incl);
	root = add_node(&f, name_of(&f, 0, "all"), 0, &all, 0);
	for (uint32_t i = 0; i < n; i++) {
		const struct sc_tree *t = &profs[i]->merged;
		size_t parent = root, nk;
		uint32_t *kids;

		if (n > 1) {
			const struct sc_image *img = profs[i]->proc->images.v[0];
			char label[300];

			snprintf(label, sizeof(label), "pid %d %s", (int)profs[i]->proc->pid,
				 img->exe ? sc_base_name(img->exe) : "");
			parent = add_node(&f, name_of(&f, 0, label), root, &t->nodes.v[0].incl, 0);
		}
		kids = sc_tree_sorted_children(t, 0, &nk);
		for (size_t j = 0; j < nk; j++)
			if (f.kept[i][kids[j]])
				emit(&f, i, kids[j], parent);
		free(kids);
		free(f.kept[i]);
	}
	free(f.kept);
	sc_hashmap_free(&f.name_index);
	return json_pack("{s:o, s:o}", "names", f.names, "nodes", f.nodes);
}

/* Self and total time of each function over the chosen profiles. */
struct func_row {
	uint32_t id;
	struct sc_stats incl, excl;
	uint32_t line; /* its hottest line id, UINT32_MAX if none */
};

static int by_self(const void *a, const void *b)
{
	const struct func_row *x = a, *y = b;

	return x->excl.sum > y->excl.sum   ? -1
	       : x->excl.sum < y->excl.sum ? 1
					   : (x->id > y->id) - (x->id < y->id);
}

static int by_total(const void *a, const void *b)
{
	const struct func_row *x = a, *y = b;

	return x->incl.sum > y->incl.sum   ? -1
	       : x->incl.sum < y->incl.sum ? 1
					   : (x->id > y->id) - (x->id < y->id);
}

static json_t *func_json(const struct sc_profile_set *set, const struct func_row *r)
{
	const struct sc_func *fn = sc_func_of(set, r->id);
	const struct sc_line *ln = r->line != UINT32_MAX ? &set->lines.v[r->line] : NULL;

	return json_pack("{s:o, s:o, s:o, s:I, s:f, s:f, s:I, s:I}", "name", sc_html_str(fn->name),
			 "module", sc_html_str(fn->module), "file", sc_html_str(ln ? ln->file : ""),
			 "line", (json_int_t)(ln ? ln->line : 0), "self", r->excl.sum, "total",
			 r->incl.sum, "self_samples", (json_int_t)r->excl.count, "samples",
			 (json_int_t)r->incl.count);
}

static json_t *functions_json(const struct sc_profile **profs, size_t n)
{
	const struct sc_profile_set *set = profs[0]->set;
	size_t nf = set->funcs.n;
	struct func_row *rows = sc_xcalloc(nf ? nf : 1, sizeof(*rows));
	uint8_t *listed = sc_xcalloc(nf ? nf : 1, 1);
	json_t *arr = json_array();

	for (size_t f = 0; f < nf; f++)
		rows[f] = (struct func_row){ .id = (uint32_t)f, .line = UINT32_MAX };
	for (size_t i = 0; i < n; i++) {
		uint32_t *hot = sc_profile_hot_lines(profs[i]);

		for (size_t f = 0; f < profs[i]->funcs.n && f < nf; f++) {
			sc_stats_merge(&rows[f].incl, &profs[i]->funcs.v[f].incl);
			sc_stats_merge(&rows[f].excl, &profs[i]->funcs.v[f].excl);
			if (rows[f].line == UINT32_MAX)
				rows[f].line = hot[f];
		}
		free(hot);
	}
	for (int pass = 0; pass < 2; pass++) {
		qsort(rows, nf, sizeof(*rows), pass ? by_total : by_self);
		for (size_t k = 0, taken = 0; k < nf && taken < SC_HTML_TOP_FUNCS; k++) {
			if (!rows[k].incl.count)
				break;
			taken++;
			if (listed[rows[k].id]++)
				continue;
			json_array_append_new(arr, func_json(set, &rows[k]));
		}
	}
	free(rows);
	free(listed);
	return arr;
}

/* The sample kind the report shows: CPU time first. */
static unsigned chosen_kind(const struct sc_profile_set *set)
{
	static const unsigned order[] = { SC_SAMPLE_CPUTIME, SC_SAMPLE_REALTIME,
					  SC_SAMPLE_OVERFLOW };

	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++)
		for (size_t i = 0; i < set->profiles.n; i++)
			if (set->profiles.v[i]->kind == order[k] && set->profiles.v[i]->total.count)
				return order[k];
	return 0;
}

json_t *sc_html_profile_json(struct sc_output *out)
{
	const struct sc_profile_set *set = out->profiles;
	unsigned kind = chosen_kind(set);
	const struct sc_profile **profs;
	struct sc_stats total = { 0 };
	size_t n = 0;
	json_t *doc;

	if (!kind)
		return NULL;
	profs = sc_xcalloc(set->profiles.n, sizeof(*profs));
	for (size_t i = 0; i < set->profiles.n; i++)
		if (set->profiles.v[i]->kind == kind) {
			profs[n++] = set->profiles.v[i];
			sc_stats_merge(&total, &set->profiles.v[i]->total);
		}
	doc = json_pack("{s:s, s:s, s:I, s:f, s:o, s:o}", "metric", profs[0]->metric, "unit",
			sc_sample_kind_unit(kind), "samples", (json_int_t)total.count, "seconds",
			total.sum, "flame", flame_json(profs, n), "functions",
			functions_json(profs, n));
	free(profs);
	return doc;
}
