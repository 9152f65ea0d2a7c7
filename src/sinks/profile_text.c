/* SPDX-License-Identifier: MIT */
/*
 * `text`: <metric>-<pid>.txt, the sampling profile as tables a terminal shows well: the call
 * tree of each thread and of all threads together (columns as rocprof-sys's wall_clock.txt:
 * LABEL COUNT DEPTH METRIC UNITS SUM MEAN MIN MAX VAR STDDEV % SELF), then flat tables per
 * function and per source line.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sink.h"
#include "table.h"

static const char *kind_title(unsigned kind)
{
	switch (kind) {
	case SC_PROFILE_REGIONS:
		return "WALL-CLOCK TIME IN REGIONS (API CALLS, RANGES, USER REGIONS)";
	case SC_PROFILE_GPU_PYTHON:
		return "GPU TIME LAUNCHED BY PYTHON LINE (KERNELS, COPIES, SETS)";
	case SC_SAMPLE_REALTIME:
		return "WALL-CLOCK SAMPLING (WALL TIME BETWEEN SAMPLES)";
	case SC_SAMPLE_OVERFLOW:
		return "EVENT-OVERFLOW SAMPLING (EVENTS COUNTED PER SAMPLE)";
	default:
		return "CPU-CLOCK SAMPLING (THREAD CPU TIME BETWEEN SAMPLES)";
	}
}

struct tree_walk {
	struct sc_table *table;
	const struct sc_profile *p;
	const struct sc_tree *t;
	const char *prefix;
};

static void tree_rows(struct tree_walk *w, uint32_t node)
{
	const struct sc_node *n = &w->t->nodes.v[node];
	size_t nkids;
	uint32_t *kids;

	if (node) {
		const struct sc_func *f = sc_func_of(w->p->set, n->func);
		char c[11][64];
		double var = sc_stats_var(&n->incl);
		bool cut = n->depth >= SC_TREE_MAX_DEPTH && n->first_child != UINT32_MAX;
		char *label = sc_xasprintf(
			"%s%*s%s%s%s", w->prefix, n->depth > 1 ? (int)(2 * (n->depth - 2)) : 0, "",
			n->depth > 1 ? "|_" : "", f->name, cut ? " [deeper calls not shown]" : "");

		sc_table_row(w->table, label,
			     sc_table_fmt(c[0], "%llu", (unsigned long long)n->incl.count),
			     sc_table_fmt(c[1], "%u", n->depth - 1), w->p->metric,
			     sc_sample_kind_unit(w->p->kind),
			     sc_table_fmt(c[2], "%.6f", n->incl.sum),
			     sc_table_fmt(c[3], "%.6f", sc_stats_mean(&n->incl)),
			     sc_table_fmt(c[4], "%.6f", n->incl.min),
			     sc_table_fmt(c[5], "%.6f", n->incl.max),
			     sc_table_fmt(c[6], "%.6f", var), sc_table_fmt(c[7], "%.6f", sqrt(var)),
			     sc_table_fmt(c[8], "%.1f",
					  n->incl.sum > 0 ? 100.0 * n->excl.sum / n->incl.sum : 0));
		free(label);
		if (cut)
			return;
	}
	kids = sc_tree_sorted_children(w->t, node, &nkids);
	for (size_t i = 0; i < nkids; i++)
		tree_rows(w, kids[i]);
	free(kids);
}

static void print_tree(FILE *f, const struct sc_profile *p, const struct sc_tree *t,
		       const char *prefix, const char *title, unsigned width)
{
	struct sc_table table;
	struct tree_walk w = { .table = &table, .p = p, .t = t, .prefix = prefix };

	sc_table_init(&table, width, "LABEL", "-COUNT", "-DEPTH", "METRIC", "UNITS", "-SUM",
		      "-MEAN", "-MIN", "-MAX", "-VAR", "-STDDEV", "-% SELF", NULL);
	tree_rows(&w, 0);
	sc_table_print(&table, f, title);
	sc_table_free(&table);
	fputc('\n', f);
}

static void line_location(const struct sc_profile_set *set, const struct sc_line *ln, char *buf,
			  size_t n)
{
	if (ln->line)
		snprintf(buf, n, "%s:%u", ln->file, ln->line);
	else
		snprintf(buf, n, "(no line info: %s)", sc_func_of(set, ln->func)->module);
}

/* Flat statistics per function (with its hottest line) or per source line, by self time. */
static void print_flat(FILE *f, const struct sc_profile *p, bool lines, unsigned width)
{
	const struct sc_profile_set *set = p->set;
	uint32_t *hot = lines ? NULL : sc_profile_hot_lines(p);
	size_t n;
	uint32_t *ids = sc_profile_sorted_flat(p, lines, &n);
	struct sc_table table;
	double total = p->total.sum > 0 ? p->total.sum : 1;

	sc_table_init(&table, width, lines ? "SOURCE LINE" : "FUNCTION",
		      lines ? "FUNCTION" : "MODULE", lines ? "MODULE" : "HOTTEST LINE", "-SAMPLES",
		      "-SELF", "-INCL SEC", "-SELF SEC", "-% INCL", "-% SELF", NULL);
	for (size_t i = 0; i < n; i++) {
		const struct sc_flat *fl = lines ? &p->lines.v[ids[i]] : &p->funcs.v[ids[i]];
		const struct sc_func *fn;
		char c[6][64], where[4200] = "";

		if (lines) {
			line_location(set, &set->lines.v[ids[i]], where, sizeof(where));
			fn = sc_func_of(set, set->lines.v[ids[i]].func);
		} else {
			fn = sc_func_of(set, ids[i]);
			if (hot[ids[i]] != UINT32_MAX && set->lines.v[hot[ids[i]]].line)
				line_location(set, &set->lines.v[hot[ids[i]]], where,
					      sizeof(where));
		}
		sc_table_row(&table, lines ? where : fn->name, lines ? fn->name : fn->module,
			     lines ? fn->module : where,
			     sc_table_fmt(c[0], "%llu", (unsigned long long)fl->incl.count),
			     sc_table_fmt(c[1], "%llu", (unsigned long long)fl->excl.count),
			     sc_table_fmt(c[2], "%.6f", fl->incl.sum),
			     sc_table_fmt(c[3], "%.6f", fl->excl.sum),
			     sc_table_fmt(c[4], "%.1f", 100.0 * fl->incl.sum / total),
			     sc_table_fmt(c[5], "%.1f", 100.0 * fl->excl.sum / total));
	}
	sc_table_print(&table, f, lines ? "SOURCE LINES (ALL THREADS)" : "FUNCTIONS (ALL THREADS)");
	sc_table_free(&table);
	fputc('\n', f);
	free(ids);
	free(hot);
}

/* Flat statistics per region name (API function, range, user region): calls and time per
 * call, by inclusive time. */
static void print_region_flat(FILE *f, const struct sc_profile *p, unsigned width)
{
	size_t n;
	uint32_t *ids = sc_profile_sorted_flat(p, false, &n);
	struct sc_table table;
	double total = p->total.sum > 0 ? p->total.sum : 1;

	bool gpu = false;

	for (size_t i = 0; i < n; i++)
		gpu |= p->funcs.v[ids[i]].gpu_launched > 0;
	/* With GPU work: the device time each region launched (the call, and every region
	 * around it). */
	sc_table_init(&table, width, "REGION", "CATEGORY", "-CALLS", "-TOTAL SEC", "-MEAN US",
		      "-MIN US", "-MAX US", "-SELF SEC", "-% SELF",
		      gpu ? "-GPU SEC LAUNCHED" : NULL, NULL);
	for (size_t i = 0; i < n; i++) {
		const struct sc_flat *fl = &p->funcs.v[ids[i]];
		const struct sc_func *fn = sc_func_of(p->set, ids[i]);
		char c[8][32];

		sc_table_row(&table, fn->name, fn->module,
			     sc_table_fmt(c[0], "%llu", (unsigned long long)fl->excl.count),
			     sc_table_fmt(c[1], "%.6f", fl->incl.sum),
			     sc_table_fmt(c[2], "%.3f", sc_stats_mean(&fl->incl) * 1e6),
			     sc_table_fmt(c[3], "%.3f", fl->incl.min * 1e6),
			     sc_table_fmt(c[4], "%.3f", fl->incl.max * 1e6),
			     sc_table_fmt(c[5], "%.6f", fl->excl.sum),
			     sc_table_fmt(c[6], "%.1f", 100.0 * fl->excl.sum / total),
			     sc_table_fmt(c[7], "%.6f", fl->gpu_launched));
	}
	sc_table_print(&table, f, "REGIONS (ALL THREADS)");
	sc_table_free(&table);
	fputc('\n', f);
	free(ids);
}

static const struct sc_profile *sort_pmc_profile;

static int by_first_event_self(const void *a, const void *b)
{
	const double *x = sc_profile_func_pmc(sort_pmc_profile, *(const uint32_t *)a);
	const double *y = sc_profile_func_pmc(sort_pmc_profile, *(const uint32_t *)b);

	return x[SC_PMC_MAX] > y[SC_PMC_MAX] ? -1 : x[SC_PMC_MAX] < y[SC_PMC_MAX];
}

/* Index of event `name` in the profile's counters, or -1. */
static int pmc_index(const struct sc_profile *p, const char *name)
{
	for (unsigned i = 0; i < p->pmc_n; i++)
		if (!strcmp(p->pmc_names[i], name))
			return (int)i;
	return -1;
}

/* CPU counters per function (self counts, with the share of each event's total), and IPC
 * where instructions and cycles were both counted. */
static void print_pmc(FILE *f, const struct sc_profile *p, unsigned width)
{
	int ins = pmc_index(p, "instructions"), cyc = pmc_index(p, "cycles");
	uint32_t *ids = sc_xcalloc(p->set->funcs.n + 1, sizeof(*ids));
	char headers[SC_PMC_MAX][136];
	struct sc_table table;
	size_t n = 0;

	if (cyc < 0)
		cyc = pmc_index(p, "cpu-cycles");
	for (size_t id = 0; id < p->set->funcs.n; id++) {
		const double *v = sc_profile_func_pmc(p, id);
		bool any = false;

		for (unsigned k = 0; v && k < p->pmc_n; k++)
			any = any || v[SC_PMC_MAX + k] > 0;
		if (any)
			ids[n++] = (uint32_t)id;
	}
	sort_pmc_profile = p;
	qsort(ids, n, sizeof(*ids), by_first_event_self);
	sc_table_init(&table, width, "FUNCTION", "MODULE", NULL);
	for (unsigned k = 0; k < p->pmc_n; k++) {
		snprintf(headers[k], sizeof(headers[k]), "-%s", p->pmc_names[k]);
		sc_table_column(&table, headers[k]);
	}
	if (ins >= 0 && cyc >= 0)
		sc_table_column(&table, "-IPC");
	for (size_t i = 0; i < n; i++) {
		const double *v = sc_profile_func_pmc(p, ids[i]);
		const struct sc_func *fn = sc_func_of(p->set, ids[i]);
		char cell[64];

		sc_table_cell(&table, fn->name);
		sc_table_cell(&table, fn->module);
		for (unsigned k = 0; k < p->pmc_n; k++)
			sc_table_cell(&table,
				      sc_table_fmt(cell, "%.0f (%.1f%%)", v[SC_PMC_MAX + k],
						   p->pmc_total[k] > 0 ? 100.0 * v[SC_PMC_MAX + k] /
										 p->pmc_total[k]
								       : 0.0));
		if (ins >= 0 && cyc >= 0)
			sc_table_cell(&table, v[SC_PMC_MAX + cyc] > 0
						      ? sc_table_fmt(cell, "%.2f",
								     v[SC_PMC_MAX + ins] /
									     v[SC_PMC_MAX + cyc])
						      : "");
	}
	sc_table_print(&table, f, "CPU COUNTERS BY FUNCTION (SELF)");
	sc_table_free(&table);
	fputc('\n', f);
	free(ids);
}

/* Counter tracks (host telemetry, user counters): what each did over the run. */
static void print_counters(FILE *f, const struct sc_process *proc, unsigned width)
{
	struct sc_table table;
	bool any = false;

	sc_table_init(&table, width, "COUNTER", "UNITS", "-VALUES", "-MIN", "-MEAN", "-MAX",
		      "-LAST", NULL);
	for (size_t i = 0; i < proc->images.n; i++)
		for (size_t k = 0; k < proc->images.v[i]->counter_tracks.n; k++) {
			const struct sc_counter_track *c = &proc->images.v[i]->counter_tracks.v[k];
			char v[5][64];

			if (!c->values.count)
				continue;
			any = true;
			sc_table_row(
				&table, c->name, c->unit,
				sc_table_fmt(v[0], "%llu", (unsigned long long)c->values.count),
				sc_table_fmt(v[1], "%.6g", c->values.min),
				sc_table_fmt(v[2], "%.6g", sc_counter_mean(c)),
				sc_table_fmt(v[3], "%.6g", c->values.max),
				sc_table_fmt(v[4], "%.6g", c->last));
		}
	if (any) {
		sc_table_print(&table, f, "COUNTERS (MEAN WEIGHTED BY TIME)");
		fputc('\n', f);
	}
	sc_table_free(&table);
}

static int write_profile(struct sc_output *out, const struct sc_profile *p)
{
	unsigned width = (unsigned)sc_int(out->settings, SC_SET_PROFILE_MAX_WIDTH);
	const struct sc_process *proc = p->proc;
	const struct sc_image *img = proc->images.v[0];
	struct sc_outfile of;
	int rc = sc_out_open(out, &of, "%s-%d.txt", p->metric, (int)proc->pid);

	if (rc)
		return rc;
	fprintf(of.f, "# syscope %s profile of process %d (%s)\n", p->metric, (int)proc->pid,
		img->exe ? img->exe : "?");
	if (p->kind == SC_PROFILE_REGIONS)
		fprintf(of.f,
			"# %llu outermost regions, %.6f s in them; %zu threads with regions\n\n",
			(unsigned long long)p->total.count, p->total.sum, p->threads.n);
	else if (p->kind == SC_PROFILE_GPU_PYTHON)
		fprintf(of.f,
			"# %llu CUDA calls from Python that started GPU work, %.6f s of device time; "
			"%zu threads launched it\n\n",
			(unsigned long long)p->total.count, p->total.sum, p->threads.n);
	else if (p->kind == SC_SAMPLE_OVERFLOW)
		fprintf(of.f, "# %llu samples, %.0f events counted; %zu threads with samples%s\n\n",
			(unsigned long long)p->total.count, p->total.sum, p->threads.n,
			p->truncated ? "; deepest stacks truncated at the depth limit" : "");
	else
		fprintf(of.f, "# %llu samples, %.6f s of %s; %zu threads with samples%s\n\n",
			(unsigned long long)p->total.count, p->total.sum,
			p->kind == SC_SAMPLE_REALTIME ? "wall time" : "thread CPU time",
			p->threads.n,
			p->truncated ? "; deepest stacks truncated at the depth limit" : "");
	for (size_t i = 0; i < p->threads.n; i++) {
		const struct sc_tree *t = &p->threads.v[i];
		const struct sc_thread *th = &proc->threads.v[t->thread_idx];
		char prefix[32], title[256], label[128];

		snprintf(prefix, sizeof(prefix), "|%02u>>> ",
			 th->index == UINT32_MAX ? 99 : th->index);
		snprintf(title, sizeof(title), "%s - %s", kind_title(p->kind),
			 sc_thread_label(proc, th, label, sizeof(label)));
		print_tree(of.f, p, t, prefix, title, width);
	}
	if (p->threads.n > 1) {
		char title[256];

		snprintf(title, sizeof(title), "%s - ALL THREADS", kind_title(p->kind));
		print_tree(of.f, p, &p->merged, "|**>>> ", title, width);
	}
	if (p->kind == SC_PROFILE_REGIONS) {
		print_region_flat(of.f, p, width);
		if (p->pmc_n)
			print_pmc(of.f, p, width);
	} else {
		print_flat(of.f, p, false, width);
		print_flat(of.f, p, true, width);
		if (p->pmc_n)
			print_pmc(of.f, p, width);
	}
	print_counters(of.f, proc, width);
	return sc_out_close(out, &of);
}

static int write_text(struct sc_output *out)
{
	int rc = sc_output_each_profile(out, write_profile);

	return sc_coverage_write(out, false) ? -1 : rc;
}

const struct sc_sink sc_sink_text = {
	.token = "text",
	.description = "call tree and flat profiles as text tables (<metric>-<pid>.txt)",
	.write = write_text,
};
