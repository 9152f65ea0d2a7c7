/* SPDX-License-Identifier: MIT */
/*
 * Why the GPU was idle (model/gpu_idle.h) as text, for `syscope summary --why-idle` and the
 * end-of-run summary, and as JSON, for `summary --why-idle --format json` and the JSON
 * profile's gpu-idle.json, streamed (json_out.h).
 */
#include <string.h>

#include "json_out.h"
#include "sink.h"
#include "summary_idle.h"

#define STACK_FRAMES 10 /* the leafmost frames of a stack shown */
#define STACKS_SHOWN 3

static double pct(double part, uint64_t whole)
{
	return whole ? 100.0 * part / (double)whole : 0;
}

static void duration(char *buf, size_t n, uint64_t ns)
{
	if (ns >= 10000000000ull)
		snprintf(buf, n, "%.1f s", (double)ns / 1e9);
	else if (ns >= 1000000000ull)
		snprintf(buf, n, "%.3f s", (double)ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, n, "%.3f ms", (double)ns / 1e6);
	else
		snprintf(buf, n, "%.1f us", (double)ns / 1e3);
}

static const char *top_name(const void *vec)
{
	const VEC(struct sc_idle_named) *v = vec;

	return v->n ? v->v[0].name : NULL;
}

/* The words for a cause in the headline: what, and the name that tells most. */
static void cause_label(char *buf, size_t n, unsigned cause, const struct sc_idle_cause_stat *s)
{
	const char *name = top_name(&s->names), *peer = top_name(&s->peers),
		   *holder = top_name(&s->holders);

	switch (cause) {
	case SC_IDLE_GIL:
		snprintf(buf, n, "%s%s%s%s", sc_idle_cause_text(cause), holder ? " (held by " : "",
			 holder ? holder : "", holder ? ")" : "");
		break;
	case SC_IDLE_MPI:
	case SC_IDLE_NCCL:
		snprintf(buf, n, "in %s%s%s",
			 name			? name
			 : cause == SC_IDLE_MPI ? "MPI"
						: "NCCL",
			 peer ? " waiting for " : "", peer ? peer : "");
		break;
	case SC_IDLE_SYNC:
		snprintf(buf, n, "synchronization%s%s", name ? " in " : "", name ? name : "");
		break;
	case SC_IDLE_LOADER:
		snprintf(buf, n, "launching thread in a data loader%s%s", name ? " in " : "",
			 name ? name : "");
		break;
	case SC_IDLE_COMPUTE:
	case SC_IDLE_IO:
		snprintf(buf, n, "%s%s%s", cause == SC_IDLE_IO ? "I/O" : "host compute",
			 name ? " in " : "", name ? name : "");
		break;
	case SC_IDLE_NOT_RUNNING:
		snprintf(buf, n, "launching thread not running%s%s%s", name ? " (in " : "",
			 name ? name : "", name ? ")" : "");
		break;
	case SC_IDLE_LAUNCH:
		snprintf(buf, n, "in the launch call or held on the device");
		break;
	default:
		snprintf(buf, n, "%s", sc_idle_cause_text(cause));
	}
}

static void gpu_title(char *buf, size_t n, const struct sc_idle_gpu *g)
{
	int len = snprintf(buf, n, "GPU %u", g->agent);

	if (g->rank >= 0)
		len += snprintf(buf + len, n - (size_t)len, " of rank %d", g->rank);
	snprintf(buf + len, n - (size_t)len, " (process %d%s%s)", (int)g->img->pid,
		 g->name ? ", " : "", g->name ? g->name : "");
}

static void print_headline(FILE *f, const char *prefix, const struct sc_idle_gpu *g,
			   uint64_t threshold)
{
	uint64_t span = g->last - g->first;
	unsigned order[SC_IDLE_CAUSES], n = sc_idle_ranked(g, order);
	char title[160], dur[32], label[512];

	gpu_title(title, sizeof(title), g);
	duration(dur, sizeof(dur), span);
	fprintf(f, "%s%s idle %.1f%% of %s (busy %.1f%%, %llu ops, %llu idle intervals", prefix,
		title, pct((double)g->idle_ns, span), dur, pct((double)g->busy_ns, span),
		(unsigned long long)g->ops, (unsigned long long)g->intervals);
	if (g->short_intervals)
		fprintf(f, "; %llu shorter than %.0f us, %.2f%% of the time, not attributed",
			(unsigned long long)g->short_intervals, (double)threshold / 1e3,
			pct((double)g->short_ns, span));
	fputc(')', f);
	for (unsigned i = 0; i < n; i++) {
		cause_label(label, sizeof(label), order[i], &g->causes[order[i]]);
		fprintf(f, "%s %.1f%% %s", i ? "," : ":", pct(g->causes[order[i]].ns, span), label);
	}
	fputc('\n', f);
}

static void print_stack(FILE *f, struct sc_profile_set *set, const struct sc_idle_stack *s)
{
	uint32_t *funcs;
	size_t n = sc_stack_path(set, &set->model->stacks.v[s->stack], &funcs, NULL);

	fprintf(f, "      %llu sample%s: %s", (unsigned long long)s->samples,
		s->samples == 1 ? "" : "s", n > STACK_FRAMES ? "... > " : "");
	for (size_t i = n > STACK_FRAMES ? n - STACK_FRAMES : 0; i < n; i++)
		fprintf(f, "%s%s", sc_func_of(set, funcs[i])->name, i + 1 < n ? " > " : "");
	fputc('\n', f);
}

static void print_named(FILE *f, const char *what, const void *vec, double total)
{
	const VEC(struct sc_idle_named) *v = vec;

	for (size_t i = 0; i < v->n && i < 5; i++)
		fprintf(f, "      %s %s: %.1f%% of this cause\n", what, v->v[i].name,
			total > 0 ? 100.0 * (double)v->v[i].ns / total : 0);
}

static void print_causes(FILE *f, struct sc_profile_set *set, const struct sc_idle_gpu *g)
{
	unsigned order[SC_IDLE_CAUSES], n = sc_idle_ranked(g, order);
	uint64_t span = g->last - g->first;

	for (unsigned i = 0; i < n; i++) {
		const struct sc_idle_cause_stat *s = &g->causes[order[i]];
		double named = 0;

		for (size_t k = 0; k < s->names.n; k++)
			named += (double)s->names.v[k].ns;
		fprintf(f,
			"  %5.1f%% of the time, %5.1f%% of the idle time, main cause of %llu "
			"interval%s: %s [%s]\n",
			pct(s->ns, span), pct(s->ns, g->idle_ns - g->short_ns),
			(unsigned long long)s->intervals, s->intervals == 1 ? "" : "s",
			sc_idle_cause_text(order[i]), sc_idle_cause_key(order[i]));
		print_named(f, "in", &s->names, named);
		print_named(f, "waiting for", &s->peers, named);
		print_named(f, "GIL held by", &s->holders, s->ns);
		for (size_t k = 0; k < s->stacks.n && k < STACKS_SHOWN; k++)
			print_stack(f, set, &s->stacks.v[k]);
	}
}

void sc_idle_print(FILE *f, struct sc_profile_set *set, const struct sc_idle_report *r, bool brief)
{
	if (!brief && !r->gpus.n)
		fprintf(f,
			"no GPU work (kernels, copies, sets) was recorded: nothing to explain\n");
	for (size_t i = 0; i < r->gpus.n; i++) {
		print_headline(f, brief ? "syscope: " : "", &r->gpus.v[i], r->threshold_ns);
		if (!brief)
			print_causes(f, set, &r->gpus.v[i]);
	}
	if (!brief && r->gpus.n)
		fprintf(f,
			"(idle: from the first op's start to the last op's end on each GPU, union of "
			"all streams; intervals shorter than %.0f us are counted, not attributed)\n",
			(double)r->threshold_ns / 1e3);
}

/*
 * The JSON, written as it goes (json_out.h) in the layout of jansson's JSON_INDENT(1) dump,
 * which built it as a tree before: a member or element on a line of its own, indented one
 * space a level, `"key": value`, an empty array as []. The same bytes.
 */
#define JW_DEPTH 12 /* the document is 8 deep */

struct jw {
	FILE *f;
	unsigned depth;
	bool first[JW_DEPTH]; /* nothing written yet in the array or object at each level */
};

static void jw_newline(struct jw *w)
{
	fputc('\n', w->f);
	for (unsigned i = 0; i < w->depth; i++)
		fputc(' ', w->f);
}

/* Before a member or an element: the comma after the last, its line. */
static void jw_next(struct jw *w)
{
	if (!w->first[w->depth - 1])
		fputc(',', w->f);
	w->first[w->depth - 1] = false;
	jw_newline(w);
}

static void jw_open(struct jw *w, char c)
{
	fputc(c, w->f);
	w->first[w->depth++] = true;
}

static void jw_close(struct jw *w, char c)
{
	if (!w->first[--w->depth])
		jw_newline(w);
	fputc(c, w->f);
}

static void jw_key(struct jw *w, const char *key)
{
	jw_next(w);
	sc_json_put_str(w->f, key);
	fputs(": ", w->f);
}

static void jw_int(struct jw *w, const char *key, long long v)
{
	jw_key(w, key);
	sc_json_put_int(w->f, v);
}

static void jw_real(struct jw *w, const char *key, double v)
{
	jw_key(w, key);
	sc_json_put_real(w->f, v);
}

/* A string, or null for NULL. */
static void jw_str(struct jw *w, const char *key, const char *v)
{
	jw_key(w, key);
	if (v)
		sc_json_put_str(w->f, v);
	else
		fputs("null", w->f);
}

static void named_json(struct jw *w, const char *key, const void *vec)
{
	const VEC(struct sc_idle_named) *v = vec;

	jw_key(w, key);
	jw_open(w, '[');
	for (size_t i = 0; i < v->n; i++) {
		jw_next(w);
		jw_open(w, '{');
		jw_str(w, "name", v->v[i].name);
		jw_int(w, "idle_ns", (long long)v->v[i].ns);
		jw_close(w, '}');
	}
	jw_close(w, ']');
}

static void stacks_json(struct jw *w, struct sc_profile_set *set,
			const struct sc_idle_cause_stat *s, unsigned top)
{
	jw_key(w, "stacks");
	jw_open(w, '[');
	for (size_t k = 0; k < s->stacks.n && k < top; k++) {
		uint32_t *funcs;
		size_t n = sc_stack_path(set, &set->model->stacks.v[s->stacks.v[k].stack], &funcs,
					 NULL);

		jw_next(w);
		jw_open(w, '{');
		jw_int(w, "samples", (long long)s->stacks.v[k].samples);
		jw_key(w, "frames");
		jw_open(w, '[');
		for (size_t i = 0; i < n; i++) {
			const char *name = sc_func_of(set, funcs[i])->name;

			jw_next(w);
			if (name)
				sc_json_put_str(w->f, name);
			else
				fputs("null", w->f);
		}
		jw_close(w, ']');
		jw_close(w, '}');
	}
	jw_close(w, ']');
}

static void causes_json(struct jw *w, struct sc_profile_set *set, const struct sc_idle_gpu *g,
			unsigned top)
{
	unsigned order[SC_IDLE_CAUSES], n = sc_idle_ranked(g, order);
	uint64_t span = g->last - g->first, attributed = g->idle_ns - g->short_ns;
	char label[512];

	jw_key(w, "causes");
	jw_open(w, '[');
	for (unsigned i = 0; i < n; i++) {
		const struct sc_idle_cause_stat *s = &g->causes[order[i]];

		cause_label(label, sizeof(label), order[i], s);
		jw_next(w);
		jw_open(w, '{');
		jw_str(w, "cause", sc_idle_cause_key(order[i]));
		jw_str(w, "label", label);
		jw_int(w, "idle_ns", (long long)(s->ns + 0.5));
		jw_real(w, "share_of_span", span ? s->ns / (double)span : 0.0);
		jw_real(w, "share_of_idle", attributed ? s->ns / (double)attributed : 0.0);
		jw_int(w, "intervals", (long long)s->intervals);
		named_json(w, "names", &s->names);
		named_json(w, "peers", &s->peers);
		named_json(w, "gil_holders", &s->holders);
		stacks_json(w, set, s, top);
		jw_close(w, '}');
	}
	jw_close(w, ']');
}

static void gpu_json(struct jw *w, struct sc_profile_set *set, const struct sc_idle_gpu *g,
		     unsigned top)
{
	uint64_t span = g->last - g->first;

	jw_open(w, '{');
	jw_int(w, "pid", (long long)g->img->pid);
	jw_int(w, "gpu", (long long)g->agent);
	jw_int(w, "rank", g->rank);
	jw_str(w, "name", g->name);
	jw_int(w, "first_ns", (long long)g->first);
	jw_int(w, "span_ns", (long long)span);
	jw_int(w, "busy_ns", (long long)g->busy_ns);
	jw_int(w, "idle_ns", (long long)g->idle_ns);
	jw_real(w, "busy_fraction", span ? (double)g->busy_ns / (double)span : 0.0);
	jw_real(w, "idle_fraction", span ? (double)g->idle_ns / (double)span : 0.0);
	jw_int(w, "ops", (long long)g->ops);
	jw_int(w, "intervals", (long long)g->intervals);
	jw_int(w, "short_intervals", (long long)g->short_intervals);
	jw_int(w, "short_ns", (long long)g->short_ns);
	causes_json(w, set, g, top);
	jw_close(w, '}');
}

void sc_idle_write(FILE *f, struct sc_profile_set *set, const struct sc_idle_report *r,
		   unsigned top)
{
	struct jw w = { .f = f };

	jw_open(&w, '{');
	jw_int(&w, "threshold_ns", (long long)r->threshold_ns);
	jw_key(&w, "gpus");
	jw_open(&w, '[');
	for (size_t i = 0; i < r->gpus.n; i++) {
		jw_next(&w);
		gpu_json(&w, set, &r->gpus.v[i], top);
	}
	jw_close(&w, ']');
	jw_close(&w, '}');
	fputc('\n', f);
}

const struct sc_idle_report *sc_output_idle(struct sc_output *out)
{
	if (!out->idle && sc_idle_has_work(out->model)) {
		out->idle = sc_xcalloc(1, sizeof(*out->idle));
		sc_idle_analyze(out->idle, out->profiles, SC_IDLE_THRESHOLD_NS);
	}
	return out->idle;
}

void sc_summary_idle(FILE *f, struct sc_output *out)
{
	const struct sc_idle_report *r = sc_output_idle(out);

	if (!r)
		return;
	sc_idle_print(f, out->profiles, r, true);
	fprintf(f, "syscope: (why each GPU was idle, with stacks: syscope summary --why-idle %s)\n",
		out->dir);
}

int sc_idle_write_json(struct sc_output *out, unsigned top)
{
	const struct sc_idle_report *r = sc_output_idle(out);
	struct sc_outfile of;
	int rc;

	if (!r)
		return 0;
	rc = sc_out_open(out, &of, "gpu-idle.json");
	if (!rc) {
		sc_idle_write(of.f, out->profiles, r, top);
		rc = sc_out_close(out, &of);
	}
	return rc;
}
