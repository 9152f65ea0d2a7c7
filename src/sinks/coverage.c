/* SPDX-License-Identifier: MIT */
/*
 * Coverage (syscope instrument --mode coverage): which patched functions ran and how many
 * times, per process (over its images), as coverage-<pid>.txt (with the text format) and
 * coverage-<pid>.json (with json): totals, per module, then every function.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/strutil.h"
#include "sink.h"
#include "table.h"

struct cov_fn {
	const char *name, *module;
	uint64_t addr, calls;
};

static int by_module_calls(const void *a, const void *b)
{
	const struct cov_fn *x = a, *y = b;
	int c = strcmp(x->module, y->module);

	if (c)
		return c;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The process's functions, named, sorted by module then calls. */
static struct cov_fn *process_coverage(struct sc_model *m, struct sc_process *p, size_t *n)
{
	VEC(struct cov_fn) v = { 0 };

	for (size_t i = 0; i < p->images.n; i++) {
		struct sc_image *img = p->images.v[i];

		for (size_t k = 0; k < img->coverage.n; k++) {
			const struct sc_coverage *c = &img->coverage.v[k];
			struct sc_module *mod = sc_image_module_at(img, c->addr, img->last_ts);
			const struct sc_symframe *frame;
			struct cov_fn *f = VEC_PUSH(&v);

			f->addr = c->addr;
			f->calls = c->calls;
			f->module = mod ? sc_base_name(mod->path) : "?";
			f->name = sc_model_function_at(m, img, mod, c->addr, &frame);
		}
	}
	if (v.n)
		qsort(v.v, v.n, sizeof(*v.v), by_module_calls);
	*n = v.n;
	return v.v;
}

static size_t count_run(const struct cov_fn *f, size_t n)
{
	size_t run = 0;

	for (size_t i = 0; i < n; i++)
		run += f[i].calls > 0;
	return run;
}

static double pct(size_t part, size_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

static int write_text(struct sc_output *out, struct sc_process *p, const struct cov_fn *f, size_t n)
{
	struct sc_outfile of;
	struct sc_table t;
	size_t run = count_run(f, n);
	char title[128];

	if (sc_out_open(out, &of, "coverage-%d.txt", (int)p->pid))
		return -1;
	fprintf(of.f, "Coverage: %zu of %zu instrumented functions ran (%.1f%%)\n\n", run, n,
		pct(run, n));
	sc_table_init(&t, 0, "MODULE", "-FUNCTIONS", "-RAN", "-%", NULL);
	for (size_t i = 0; i < n;) {
		size_t j = i, r;
		char c[3][32];

		while (j < n && !strcmp(f[j].module, f[i].module))
			j++;
		r = count_run(f + i, j - i);
		sc_table_row(&t, f[i].module, sc_table_fmt(c[0], "%zu", j - i),
			     sc_table_fmt(c[1], "%zu", r),
			     sc_table_fmt(c[2], "%.1f", pct(r, j - i)));
		i = j;
	}
	sc_table_print(&t, of.f, "COVERAGE BY MODULE");
	sc_table_free(&t);
	fputc('\n', of.f);
	sc_table_init(&t, 0, "FUNCTION", "MODULE", "-CALLS", "ADDRESS", NULL);
	for (size_t i = 0; i < n; i++) {
		char c[2][32];

		sc_table_row(&t, f[i].name, f[i].module,
			     sc_table_fmt(c[0], "%llu", (unsigned long long)f[i].calls),
			     sc_table_fmt(c[1], "%#llx", (unsigned long long)f[i].addr));
	}
	snprintf(title, sizeof(title), "FUNCTIONS (%zu NEVER CALLED)", n - run);
	sc_table_print(&t, of.f, title);
	sc_table_free(&t);
	return sc_out_close(out, &of);
}

static int write_json(struct sc_output *out, struct sc_process *p, const struct cov_fn *f, size_t n)
{
	struct sc_outfile of;
	json_t *fns = json_array(), *doc;
	size_t run = count_run(f, n);
	int rc;

	for (size_t i = 0; i < n; i++)
		json_array_append_new(fns,
				      json_pack("{s:s, s:s, s:I, s:I}", "name", f[i].name, "module",
						f[i].module, "address", (json_int_t)f[i].addr,
						"calls", (json_int_t)f[i].calls));
	doc = json_pack("{s:{s:i, s:I, s:I, s:f, s:o}}", "syscope", "pid", (int)p->pid,
			"functions_instrumented", (json_int_t)n, "functions_run", (json_int_t)run,
			"percent", pct(run, n), "functions", fns);
	if (sc_out_open(out, &of, "coverage-%d.json", (int)p->pid)) {
		json_decref(doc);
		return -1;
	}
	rc = json_dumpf(doc, of.f, JSON_INDENT(1));
	json_decref(doc);
	fputc('\n', of.f);
	rc |= sc_out_close(out, &of);
	return rc ? -1 : 0;
}

int sc_coverage_write(struct sc_output *out, bool json)
{
	int rc = 0;

	for (size_t i = 0; i < out->model->processes.n; i++) {
		struct sc_process *p = out->model->processes.v[i];
		size_t n;
		struct cov_fn *f = process_coverage(out->model, p, &n);

		if (n && (json ? write_json(out, p, f, n) : write_text(out, p, f, n)))
			rc = -1;
		free(f);
	}
	return rc;
}

bool sc_coverage_totals(struct sc_model *m, size_t *instrumented, size_t *run)
{
	*instrumented = *run = 0;
	for (size_t i = 0; i < m->processes.n; i++)
		for (size_t k = 0; k < m->processes.v[i]->images.n; k++) {
			const struct sc_image *img = m->processes.v[i]->images.v[k];

			for (size_t j = 0; j < img->coverage.n; j++) {
				(*instrumented)++;
				*run += img->coverage.v[j].calls > 0;
			}
		}
	return *instrumented > 0;
}
