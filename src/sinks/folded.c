/* SPDX-License-Identifier: MIT */
/*
 * `folded`: <metric>-<pid>.folded, one line per distinct call path of the process (all
 * threads together): "outer;...;inner count", the input of flamegraph.pl, speedscope and
 * inferno. Counts are samples; for the wall_clock profile of regions, microseconds of
 * exclusive time (regions have no samples to count), and for gpu_time_by_python microseconds
 * of GPU time launched. Characters that would break the format in a frame name (';' and line
 * breaks) are replaced. Paths end at SC_TREE_MAX_DEPTH frames: below, one line per function
 * "...;[deeper calls not shown];FUNCTION" under the frame at the cut, so every count is kept
 * and the file stays proportional to the call tree's nodes, not to their depth.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/hashmap.h"
#include "sink.h"

static void put_frame(FILE *f, const char *name)
{
	for (const char *c = name; *c; c++)
		fputc(*c == ';' ? ':' : (*c == '\n' || *c == '\r') ? ' ' : *c, f);
}

/* What a node's line counts: samples, or microseconds for the kinds without samples. */
static unsigned long long line_value(const struct sc_profile *p, const struct sc_stats *excl)
{
	return p->kind == SC_PROFILE_REGIONS || p->kind == SC_PROFILE_GPU_PYTHON
		       ? (unsigned long long)(excl->sum * 1e6 + 0.5)
		       : (unsigned long long)excl->count;
}

/* The functions below a cut, each with the exclusive weight of its nodes there. */
struct deeper {
	VEC(struct deeper_func) v;
	struct sc_hashmap index; /* func + 1 -> index in v + 1 */
};

struct deeper_func {
	uint32_t func;
	struct sc_stats excl;
};

static void gather_below(const struct sc_tree *t, uint32_t node, struct deeper *d)
{
	for (uint32_t k = t->nodes.v[node].first_child; k != UINT32_MAX;
	     k = t->nodes.v[k].next_sibling) {
		const struct sc_node *n = &t->nodes.v[k];
		bool inserted;
		uint64_t *slot;

		if (n->excl.count) {
			slot = sc_hashmap_upsert(&d->index, (uint64_t)n->func + 1, 0, &inserted);
			if (inserted) {
				*VEC_PUSH(&d->v) = (struct deeper_func){ .func = n->func };
				*slot = d->v.n;
			}
			d->v.v[*slot - 1].excl.count += n->excl.count;
			d->v.v[*slot - 1].excl.sum += n->excl.sum;
		}
		gather_below(t, k, d);
	}
}

static int by_weight(const void *a, const void *b)
{
	const struct deeper_func *x = a, *y = b;

	if (x->excl.sum != y->excl.sum)
		return x->excl.sum > y->excl.sum ? -1 : 1;
	if (x->excl.count != y->excl.count)
		return x->excl.count > y->excl.count ? -1 : 1;
	return x->func < y->func ? -1 : x->func > y->func;
}

static void put_path(FILE *f, const struct sc_profile *p, const struct sc_tree *t,
		     const uint32_t *path, size_t depth)
{
	for (size_t i = 0; i < depth; i++) {
		if (i)
			fputc(';', f);
		put_frame(f, sc_func_of(p->set, t->nodes.v[path[i]].func)->name);
	}
}

/* One line per node with weight of its own, down to SC_TREE_MAX_DEPTH: below it, a line
 * per path would make the file grow with the square of the depth (a recursion 5 000 deep:
 * gigabytes), so what lies deeper is a line per function under the node at the cut, its
 * leaf the function (the hot one stays visible), its count all of that function's there. */
static void walk(FILE *f, const struct sc_profile *p, const struct sc_tree *t, uint32_t node,
		 uint32_t *path, size_t depth)
{
	const struct sc_node *n = &t->nodes.v[node];
	size_t nkids;
	uint32_t *kids;

	if (node && n->excl.count) {
		put_path(f, p, t, path, depth);
		fprintf(f, " %llu\n", line_value(p, &n->excl));
	}
	if (node && depth >= SC_TREE_MAX_DEPTH) {
		struct deeper d = { 0 };

		sc_hashmap_init(&d.index);
		gather_below(t, node, &d);
		VEC_SORT(&d.v, by_weight);
		for (size_t i = 0; i < d.v.n; i++) {
			put_path(f, p, t, path, depth);
			fputs(";[deeper calls not shown];", f);
			put_frame(f, sc_func_of(p->set, d.v.v[i].func)->name);
			fprintf(f, " %llu\n", line_value(p, &d.v.v[i].excl));
		}
		VEC_FREE(&d.v);
		sc_hashmap_free(&d.index);
		return;
	}
	kids = sc_tree_sorted_children(t, node, &nkids);
	for (size_t i = 0; i < nkids; i++) {
		path[depth] = kids[i];
		walk(f, p, t, kids[i], path, depth + 1);
	}
	free(kids);
}

static int write_profile(struct sc_output *out, const struct sc_profile *p)
{
	uint32_t depth = 0, *path;
	struct sc_outfile of;
	int rc;

	for (size_t n = 0; n < p->merged.nodes.n; n++)
		if (p->merged.nodes.v[n].depth > depth)
			depth = p->merged.nodes.v[n].depth;
	rc = sc_out_open(out, &of, "%s-%d.folded", p->metric, (int)p->proc->pid);
	if (rc)
		return rc;
	path = sc_xcalloc(depth + 1, sizeof(*path));
	walk(of.f, p, &p->merged, 0, path, 0);
	free(path);
	return sc_out_close(out, &of);
}

static int write_folded(struct sc_output *out)
{
	return sc_output_each_profile(out, write_profile);
}

const struct sc_sink sc_sink_folded = {
	.token = "folded",
	.description = "folded stacks for flame graphs (<metric>-<pid>.folded)",
	.write = write_folded,
};
