/* SPDX-License-Identifier: MIT */
/*
 * `json`: <metric>-<pid>.json in the layout of rocprof-sys/timemory profiles, which hatchet
 * reads (GraphFrame.from_timemory):
 *
 *   timemory.<metric>: properties and counts, then
 *     ranks[0].graph[]  the flat list: one entry per call-tree node of each thread, with a
 *                       "|TT>>> |_name" prefix, entry {laps, value, accum, repr_*} and stats
 *     graph[[...]]      the hierarchical form: one dummy root (hash 0) per thread, nodes
 *     or mpi[[...]]     with tid (thread index), pid, inclusive and exclusive {entry, stats},
 *                       children, and the prefix "NAME    [MODULE/FILE:LINE]" from which
 *                       hatchet takes name, file (its base name) and line ("name" has the
 *                       name alone). hatchet's reader
 *                       needs a rank as soon as there are several threads, so "mpi" (one
 *                       entry per rank, this process's at its rank, empty before it) holds
 *                       the tree unless the process is one thread and no MPI rank.
 *   syscope:            what timemory has no place for: threads, flat functions and lines
 *                       with file and line, sampling rates, truncation
 *
 * Times are seconds in stats and repr_*, nanoseconds in value/accum (unit_value 1e9). The
 * document is written compact (one line): its size follows the distinct call paths.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/hashmap.h"
#include "../common/strutil.h"
#include "json_out.h"
#include "sink.h"
#include "summary_idle.h"

/* Written as it goes (json_out.h), the same bytes as jansson's compact dump: a tree of
 * many thousand nodes as jansson objects cost more than the rest of the conversion. */
static void put_stats(FILE *f, const struct sc_stats *s)
{
	fputs("{\"sum\":", f);
	sc_json_put_real(f, s->sum);
	fputs(",\"count\":", f);
	sc_json_put_int(f, (long long)s->count);
	fputs(",\"min\":", f);
	sc_json_put_real(f, s->min);
	fputs(",\"max\":", f);
	sc_json_put_real(f, s->max);
	fputs(",\"sqr\":", f);
	sc_json_put_real(f, s->sumsq);
	fputs(",\"mean\":", f);
	sc_json_put_real(f, sc_stats_mean(s));
	fputs(",\"stddev\":", f);
	sc_json_put_real(f, sqrt(sc_stats_var(s)));
	putc_unlocked('}', f);
}

static void put_entry(FILE *f, const struct sc_stats *s)
{
	fputs("{\"laps\":", f);
	sc_json_put_int(f, (long long)s->count);
	fputs(",\"value\":", f);
	sc_json_put_real(f, s->sum * 1e9);
	fputs(",\"accum\":", f);
	sc_json_put_real(f, s->sum * 1e9);
	fputs(",\"repr_data\":", f);
	sc_json_put_real(f, s->sum);
	fputs(",\"repr_display\":", f);
	sc_json_put_real(f, s->sum);
	putc_unlocked('}', f);
}

/* {"entry":..., "stats":...} of `s`. */
static void put_entry_stats(FILE *f, const struct sc_stats *s)
{
	fputs("{\"entry\":", f);
	put_entry(f, s);
	fputs(",\"stats\":", f);
	put_stats(f, s);
	putc_unlocked('}', f);
}

static uint64_t name_hash(const char *name)
{
	return sc_hash_bytes(name, strlen(name), 0x7e) & 0x7fffffffffffffffull;
}

struct walk {
	const struct sc_profile *p;
	const struct sc_tree *t;
	const uint32_t *hot; /* per function: its hottest line, UINT32_MAX when none */
	long long tid, pid;
	char prefix[32];
	FILE *f;
	size_t nflat; /* entries of the flat list written */
};

/* A frame as hatchet's timemory reader parses it ("label  [func/file:line]"): the name
 * whole (spaces allowed), then the module, file and line. The reader splits at the last
 * '/', so the file is its base name; names of modules have none. */
static char *frame_prefix(const struct walk *w, uint32_t func)
{
	const struct sc_func *fn = sc_func_of(w->p->set, func);
	const struct sc_line *ln =
		w->hot[func] != UINT32_MAX ? &w->p->set->lines.v[w->hot[func]] : NULL;
	const char *file = ln && *ln->file ? sc_base_name(ln->file) : "<unknown>";
	const char *module = fn->module && *fn->module ? sc_base_name(fn->module) : "<unknown>";

	return sc_xasprintf("%s    [%s/%s:%u]", fn->name, module, file, ln ? ln->line : 0);
}

/* The children of node `id` that are written (none below the depth limit); caller frees. */
static uint32_t *written_children(const struct walk *w, uint32_t id, size_t *n, bool *cut)
{
	uint32_t *kids = sc_tree_sorted_children(w->t, id, n);

	*cut = *n && w->t->nodes.v[id].depth >= SC_TREE_MAX_DEPTH;
	if (*cut)
		*n = 0;
	return kids;
}

/* ranks[0].graph: one entry per node below the root, parents first. */
static void put_flat(struct walk *w, uint32_t id, uint64_t rolling)
{
	const struct sc_node *n = &w->t->nodes.v[id];
	FILE *f = w->f;
	size_t nkids;
	bool cut;
	uint32_t *kids;

	if (id) {
		const char *name = sc_func_of(w->p->set, n->func)->name;
		uint64_t h = name_hash(name);
		char *label = sc_xasprintf("%s%*s%s%s", w->prefix,
					   n->depth > 1 ? (int)(2 * (n->depth - 2)) : 0, "",
					   n->depth > 1 ? "|_" : "", name);

		rolling += h;
		fputs(w->nflat++ ? ",{\"hash\":" : "{\"hash\":", f);
		sc_json_put_int(f, (long long)h);
		fputs(",\"prefix\":", f);
		sc_json_put_str(f, label);
		fputs(",\"depth\":", f);
		sc_json_put_int(f, (long long)n->depth - 1);
		fputs(",\"entry\":", f);
		put_entry(f, &n->incl);
		fputs(",\"stats\":", f);
		put_stats(f, &n->incl);
		fputs(",\"rolling_hash\":", f);
		sc_json_put_int(f, (long long)(rolling & 0x7fffffffffffffffull));
		putc_unlocked('}', f);
		free(label);
	}
	kids = written_children(w, id, &nkids, &cut);
	for (size_t i = 0; i < nkids; i++)
		put_flat(w, kids[i], rolling);
	free(kids);
}

/* The hierarchical form of node `id` and what is below it. */
static void put_node(struct walk *w, uint32_t id)
{
	const struct sc_node *n = &w->t->nodes.v[id];
	const char *name = id ? sc_func_of(w->p->set, n->func)->name : "unknown-hash=0";
	char *prefix = id ? frame_prefix(w, n->func) : NULL;
	FILE *f = w->f;
	size_t nkids;
	bool cut;
	uint32_t *kids;

	fputs("{\"node\":{\"hash\":", f);
	sc_json_put_int(f, id ? (long long)name_hash(name) : 0);
	fputs(",\"prefix\":", f);
	sc_json_put_str(f, prefix ? prefix : name);
	fputs(",\"name\":", f);
	sc_json_put_str(f, name);
	fputs(",\"tid\":", f);
	sc_json_put_int(f, w->tid);
	fputs(",\"pid\":", f);
	sc_json_put_int(f, w->pid);
	fputs(",\"depth\":", f);
	sc_json_put_int(f, (long long)n->depth);
	fputs(id ? ",\"is_dummy\":false" : ",\"is_dummy\":true", f);
	fputs(",\"inclusive\":", f);
	put_entry_stats(f, &n->incl);
	fputs(",\"exclusive\":", f);
	put_entry_stats(f, &n->excl);
	free(prefix);
	kids = written_children(w, id, &nkids, &cut);
	fputs(cut ? ",\"truncated\":true},\"children\":[" : "},\"children\":[", f);
	for (size_t i = 0; i < nkids; i++) {
		if (i)
			putc_unlocked(',', f);
		put_node(w, kids[i]);
	}
	free(kids);
	fputs("]}", f);
}

static json_t *stats_json(const struct sc_stats *s)
{
	return json_pack("{s:f, s:I, s:f, s:f, s:f, s:f, s:f}", "sum", s->sum, "count",
			 (json_int_t)s->count, "min", s->min, "max", s->max, "sqr", s->sumsq,
			 "mean", sc_stats_mean(s), "stddev", sqrt(sc_stats_var(s)));
}

static json_t *flat_functions(const struct sc_profile *p)
{
	const struct sc_profile_set *set = p->set;
	uint32_t *hot = sc_profile_hot_lines(p);
	size_t n;
	uint32_t *ids = sc_profile_sorted_flat(p, false, &n);
	json_t *arr = json_array();

	for (size_t i = 0; i < n; i++) {
		const struct sc_flat *fl = &p->funcs.v[ids[i]];
		const struct sc_func *fn = sc_func_of(set, ids[i]);
		const struct sc_line *ln =
			hot[ids[i]] != UINT32_MAX ? &set->lines.v[hot[ids[i]]] : NULL;

		json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:f, s:f}", "name", fn->name,
				      "module", fn->module, "file", ln ? ln->file : "", "line",
				      (json_int_t)(ln ? ln->line : 0), "samples",
				      (json_int_t)fl->incl.count, "self_samples",
				      (json_int_t)fl->excl.count, "inclusive", fl->incl.sum,
				      "exclusive", fl->excl.sum);

		const double *pmc = sc_profile_func_pmc(p, ids[i]);

		if (p->kind == SC_PROFILE_REGIONS) { /* every call, recursive ones too */
			json_object_set_new(o, "calls", json_integer((json_int_t)fl->excl.count));
			/* a call's time (count, mean, min, max, stddev): the outermost calls */
			json_object_set_new(o, "call_stats", stats_json(&fl->incl));
		}
		if (fl->gpu_launched > 0)
			json_object_set_new(o, "gpu_seconds_launched", json_real(fl->gpu_launched));
		if (pmc) {
			json_t *c = json_object();

			for (unsigned k = 0; k < p->pmc_n; k++)
				json_object_set_new(c, p->pmc_names[k],
						    json_pack("{s:f, s:f}", "self",
							      pmc[SC_PMC_MAX + k], "inclusive",
							      pmc[k]));
			json_object_set_new(o, "cpu_counters", c);
		}
		json_array_append_new(arr, o);
	}
	free(ids);
	free(hot);
	return arr;
}

static json_t *flat_lines(const struct sc_profile *p)
{
	const struct sc_profile_set *set = p->set;
	size_t n;
	uint32_t *ids = sc_profile_sorted_flat(p, true, &n);
	json_t *arr = json_array();

	for (size_t i = 0; i < n; i++) {
		const struct sc_flat *fl = &p->lines.v[ids[i]];
		const struct sc_line *ln = &set->lines.v[ids[i]];
		const struct sc_func *fn = sc_func_of(set, ln->func);

		json_array_append_new(
			arr, json_pack("{s:s, s:I, s:s, s:s, s:I, s:I, s:f, s:f}", "file", ln->file,
				       "line", (json_int_t)ln->line, "function", fn->name, "module",
				       fn->module, "samples", (json_int_t)fl->incl.count,
				       "self_samples", (json_int_t)fl->excl.count, "inclusive",
				       fl->incl.sum, "exclusive", fl->excl.sum));
	}
	free(ids);
	return arr;
}

static json_t *threads_json(const struct sc_profile *p)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < p->threads.n; i++) {
		const struct sc_thread *t = &p->proc->threads.v[p->threads.v[i].thread_idx];

		if (p->kind >= SC_KINDS) { /* not a sample kind: no sampler counts */
			json_array_append_new(
				arr, json_pack("{s:I, s:I, s:s, s:I, s:f}", "tid",
					       (json_int_t)t->tid, "index",
					       (t->index == UINT32_MAX ? (json_int_t)-1
								       : (json_int_t)t->index),
					       "name", t->name, "calls",
					       (json_int_t)p->threads.v[i].nodes.v[0].incl.count,
					       "seconds", p->threads.v[i].nodes.v[0].incl.sum));
			continue;
		}
		json_array_append_new(
			arr,
			json_pack("{s:I, s:I, s:s, s:I, s:f, s:f, s:f}", "tid", (json_int_t)t->tid,
				  "index",
				  (t->index == UINT32_MAX ? (json_int_t)-1 : (json_int_t)t->index),
				  "name", t->name, "samples", (json_int_t)t->samples[p->kind],
				  "seconds", t->seconds[p->kind], "requested_hz",
				  sc_period_hz(t->period_ns[p->kind]), "delivered_hz",
				  sc_thread_delivered_hz(t, p->kind)));
	}
	return arr;
}

/* Nodes of a thread's tree that ranks[0].graph lists: all below the root down to the depth
 * where the trees stop (put_flat's walk). */
static size_t flat_count(const struct sc_tree *t)
{
	size_t n = 0;

	for (size_t i = 1; i < t->nodes.n; i++)
		n += t->nodes.v[i].depth <= SC_TREE_MAX_DEPTH;
	return n;
}

static void init_walk(struct walk *w, const struct sc_profile *p, size_t i, const uint32_t *hot,
		      FILE *f)
{
	const struct sc_thread *th = &p->proc->threads.v[p->threads.v[i].thread_idx];

	*w = (struct walk){ .p = p,
			    .t = &p->threads.v[i],
			    .hot = hot,
			    .f = f,
			    .tid = th->index == UINT32_MAX ? th->tid : (long long)th->index,
			    .pid = p->proc->pid };
	snprintf(w->prefix, sizeof(w->prefix), "|%02u>>> ",
		 th->index == UINT32_MAX ? 99 : th->index);
}

/* "ranks" (the flat list), then the trees of every thread, for hatchet: under "mpi" at the
 * process's rank when it has one or a thread other than 0 (see the top of the file), else
 * under "graph". */
static void put_graphs(FILE *f, const struct sc_profile *p, int rank, bool threads)
{
	uint32_t *hot = sc_profile_hot_lines(p);
	size_t nflat = 0, written = 0;
	struct walk w;

	for (size_t i = 0; i < p->threads.n; i++)
		nflat += flat_count(&p->threads.v[i]);
	fputs(",\"ranks\":[{\"rank\":0,\"graph_size\":", f);
	sc_json_put_int(f, (long long)nflat);
	fputs(",\"graph\":[", f);
	for (size_t i = 0; i < p->threads.n; i++) {
		init_walk(&w, p, i, hot, f);
		w.nflat = written;
		put_flat(&w, 0, 0);
		written = w.nflat;
	}
	fputs(rank >= 0 || threads ? "]}],\"mpi\":[" : "]}],\"graph\":[", f);
	for (int r = 0; r < rank; r++)
		fputs("[],", f);
	putc_unlocked('[', f);
	for (size_t i = 0; i < p->threads.n; i++) {
		if (i)
			putc_unlocked(',', f);
		init_walk(&w, p, i, hot, f);
		put_node(&w, 0);
	}
	fputs("]]", f);
	free(hot);
}

/* The metric's object before its graphs, as text without its closing brace. */
static char *metric_head(const struct sc_profile *p, const struct sc_image *img, int rank)
{
	json_t *metric = json_pack(
		"{s:{s:I, s:s, s:s, s:[s]}, s:s, s:s, s:I, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I}",
		"properties", "value", (json_int_t)p->kind, "enum",
		p->kind == SC_PROFILE_REGIONS	   ? "WALL_CLOCK"
		: p->kind == SC_PROFILE_GPU_PYTHON ? "GPU_TIME_BY_PYTHON"
		: p->kind == SC_SAMPLE_REALTIME	   ? "SAMPLING_WALL_CLOCK"
		: p->kind == SC_SAMPLE_OVERFLOW	   ? "SAMPLING_OVERFLOW"
						   : "SAMPLING_CPU_CLOCK",
		"id", p->metric, "ids", p->metric, "type", p->metric, "description",
		p->kind == SC_PROFILE_REGIONS ? "Wall-clock time inside regions"
		: p->kind == SC_PROFILE_GPU_PYTHON
			? "GPU time of the kernels, copies and sets each Python line launched"
		: p->kind == SC_SAMPLE_REALTIME ? "Wall-clock time between samples of a thread"
		: p->kind == SC_SAMPLE_OVERFLOW ? "Events of the overflow event between samples"
						: "Thread CPU time between samples of a thread",
		"unit_value", (json_int_t)(p->kind == SC_SAMPLE_OVERFLOW ? 1 : 1000000000),
		"unit_repr", sc_sample_kind_unit(p->kind), "thread_scope_only", 0, "thread_count",
		(json_int_t)p->threads.n, "mpi_size", (json_int_t)1, "upcxx_size", (json_int_t)1,
		"process_count", (json_int_t)1, "num_ranks", (json_int_t)1, "concurrency",
		(json_int_t)p->threads.n);
	char *text;

	if (rank >= 0 && sc_image_mpi_size(img) > 0)
		json_object_set_new(metric, "mpi_size",
				    json_integer((json_int_t)sc_image_mpi_size(img)));
	text = json_dumps(metric, JSON_COMPACT | JSON_REAL_PRECISION(9));
	json_decref(metric);
	if (text && *text)
		text[strlen(text) - 1] = 0;
	return text;
}

/* What timemory has no place for. */
static json_t *syscope_json(const struct sc_profile *p)
{
	json_t *doc = json_pack(
		"{s:s, s:I, s:s, s:s, s:I, s:f, s:I, s:o, s:o, s:o}", "version", SYSCOPE_VERSION,
		"pid", (json_int_t)p->proc->pid, "metric", p->metric, "units",
		sc_sample_kind_unit(p->kind), "samples", (json_int_t)p->total.count, "seconds",
		p->total.sum, "truncated_samples", (json_int_t)p->truncated, "threads",
		threads_json(p), "functions", flat_functions(p), "lines", flat_lines(p));

	json_object_set_new(doc, "counters", sc_counters_json(p->proc));
	if (p->pmc_n) {
		json_t *ev = json_array();

		for (unsigned k = 0; k < p->pmc_n; k++)
			json_array_append_new(ev, json_pack("{s:s, s:f}", "name", p->pmc_names[k],
							    "total", p->pmc_total[k]));
		json_object_set_new(doc, "cpu_events", ev);
	}
	return doc;
}

static int write_profile(struct sc_output *out, const struct sc_profile *p)
{
	const struct sc_image *img = p->proc->images.v[p->proc->images.n - 1];
	int rank = sc_image_rank(img), rc;
	struct sc_outfile of;
	bool threads = false;
	char *head;

	for (size_t i = 0; i < p->threads.n; i++) {
		const struct sc_thread *th = &p->proc->threads.v[p->threads.v[i].thread_idx];

		threads |= (th->index == UINT32_MAX ? th->tid : (long long)th->index) != 0;
	}
	rc = sc_out_open(out, &of, "%s-%d.json", p->metric, (int)p->proc->pid);
	if (rc)
		return rc;
	/* One line: a tree 256 deep would indent its lines by thousands of spaces, and deep
	 * stacks made profiles of a few thousand samples gigabytes. */
	head = metric_head(p, img, rank);
	fputs("{\"timemory\":{", of.f);
	sc_json_put_str(of.f, p->metric);
	putc_unlocked(':', of.f);
	fputs(head ? head : "{", of.f);
	free(head);
	put_graphs(of.f, p, rank, threads);
	fputs("}},\"syscope\":", of.f);
	sc_json_put_value(of.f, syscope_json(p));
	fputs("}\n", of.f);
	return sc_out_close(out, &of);
}

static int write_json(struct sc_output *out)
{
	int rc = sc_output_each_profile(out, write_profile);

	if (sc_idle_write_json(out, 5))
		rc = -1;
	return sc_coverage_write(out, true) ? -1 : rc;
}

const struct sc_sink sc_sink_json = {
	.token = "json",
	.description = "profiles as JSON, flat and hatchet-compatible tree (<metric>-<pid>.json)",
	.write = write_json,
};
