/* SPDX-License-Identifier: MIT */
/*
 * `folded`: <metric>-<pid>.folded, one line per distinct call path of the process (all
 * threads together): "outer;...;inner count", the input of flamegraph.pl, speedscope and
 * inferno. Counts are samples; for the wall_clock profile of regions, microseconds of
 * exclusive time (regions have no samples to count), and for gpu_time_by_python microseconds
 * of GPU time launched. Characters that would break the format in a frame name (';' and line
 * breaks) are replaced.
 */
#include <stdlib.h>
#include <string.h>

#include "sink.h"

static void put_frame(FILE *f, const char *name)
{
	for (const char *c = name; *c; c++)
		fputc(*c == ';' ? ':' : (*c == '\n' || *c == '\r') ? ' ' : *c, f);
}

static void walk(FILE *f, const struct sc_profile *p, const struct sc_tree *t, uint32_t node,
		 uint32_t *path, size_t depth)
{
	const struct sc_node *n = &t->nodes.v[node];
	size_t nkids;
	uint32_t *kids;

	if (node && n->excl.count) {
		for (size_t i = 0; i < depth; i++) {
			if (i)
				fputc(';', f);
			put_frame(f, sc_func_of(p->set, t->nodes.v[path[i]].func)->name);
		}
		fprintf(f, " %llu\n",
			p->kind == SC_PROFILE_REGIONS || p->kind == SC_PROFILE_GPU_PYTHON
				? (unsigned long long)(n->excl.sum * 1e6 + 0.5)
				: (unsigned long long)n->excl.count);
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
