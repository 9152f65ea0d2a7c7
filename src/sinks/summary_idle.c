/* SPDX-License-Identifier: MIT */
/*
 * Why the GPU was idle (model/gpu_idle.h) as text, for `syscope summary --why-idle` and the
 * end-of-run summary, and as JSON, for `summary --why-idle --format json` and the JSON
 * profile's gpu-idle.json.
 */
#include <string.h>

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

static json_t *named_json(const void *vec)
{
	const VEC(struct sc_idle_named) *v = vec;
	json_t *a = json_array();

	for (size_t i = 0; i < v->n; i++)
		json_array_append_new(a, json_pack("{s:s, s:I}", "name", v->v[i].name, "idle_ns",
						   (json_int_t)v->v[i].ns));
	return a;
}

static json_t *stacks_json(struct sc_profile_set *set, const struct sc_idle_cause_stat *s,
			   unsigned top)
{
	json_t *a = json_array();

	for (size_t k = 0; k < s->stacks.n && k < top; k++) {
		uint32_t *funcs;
		size_t n = sc_stack_path(set, &set->model->stacks.v[s->stacks.v[k].stack], &funcs,
					 NULL);
		json_t *frames = json_array();

		for (size_t i = 0; i < n; i++)
			json_array_append_new(frames, json_string(sc_func_of(set, funcs[i])->name));
		json_array_append_new(a, json_pack("{s:I, s:o}", "samples",
						   (json_int_t)s->stacks.v[k].samples, "frames",
						   frames));
	}
	return a;
}

static json_t *gpu_json(struct sc_profile_set *set, const struct sc_idle_gpu *g, unsigned top)
{
	unsigned order[SC_IDLE_CAUSES], n = sc_idle_ranked(g, order);
	uint64_t span = g->last - g->first, attributed = g->idle_ns - g->short_ns;
	json_t *causes = json_array();
	char label[512];

	for (unsigned i = 0; i < n; i++) {
		const struct sc_idle_cause_stat *s = &g->causes[order[i]];

		cause_label(label, sizeof(label), order[i], s);
		json_array_append_new(
			causes,
			json_pack("{s:s, s:s, s:I, s:f, s:f, s:I, s:o, s:o, s:o, s:o}", "cause",
				  sc_idle_cause_key(order[i]), "label", label, "idle_ns",
				  (json_int_t)(s->ns + 0.5), "share_of_span",
				  span ? s->ns / (double)span : 0.0, "share_of_idle",
				  attributed ? s->ns / (double)attributed : 0.0, "intervals",
				  (json_int_t)s->intervals, "names", named_json(&s->names), "peers",
				  named_json(&s->peers), "gil_holders", named_json(&s->holders),
				  "stacks", stacks_json(set, s, top)));
	}
	return json_pack("{s:I, s:I, s:i, s:s?, s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:I, s:I, s:I, "
			 "s:o}",
			 "pid", (json_int_t)g->img->pid, "gpu", (json_int_t)g->agent, "rank",
			 g->rank, "name", g->name, "first_ns", (json_int_t)g->first, "span_ns",
			 (json_int_t)span, "busy_ns", (json_int_t)g->busy_ns, "idle_ns",
			 (json_int_t)g->idle_ns, "busy_fraction",
			 span ? (double)g->busy_ns / (double)span : 0.0, "idle_fraction",
			 span ? (double)g->idle_ns / (double)span : 0.0, "ops", (json_int_t)g->ops,
			 "intervals", (json_int_t)g->intervals, "short_intervals",
			 (json_int_t)g->short_intervals, "short_ns", (json_int_t)g->short_ns,
			 "causes", causes);
}

json_t *sc_idle_json(struct sc_profile_set *set, const struct sc_idle_report *r, unsigned top)
{
	json_t *gpus = json_array();

	for (size_t i = 0; i < r->gpus.n; i++)
		json_array_append_new(gpus, gpu_json(set, &r->gpus.v[i], top));
	return json_pack("{s:I, s:o}", "threshold_ns", (json_int_t)r->threshold_ns, "gpus", gpus);
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
	json_t *doc;
	int rc;

	if (!r)
		return 0;
	doc = sc_idle_json(out->profiles, r, top);
	rc = sc_out_open(out, &of, "gpu-idle.json");
	if (!rc) {
		json_dumpf(doc, of.f, JSON_INDENT(1) | JSON_REAL_PRECISION(9));
		fputc('\n', of.f);
		rc = sc_out_close(out, &of);
	}
	json_decref(doc);
	return rc;
}
