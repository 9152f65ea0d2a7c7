/* SPDX-License-Identifier: MIT */
/*
 * The outputs of syscope causal (model/causal.h):
 *   profile.coz  Coz's own format (experiment lines, each followed by its progress points),
 *                so Coz's viewer (`coz plot`) opens it
 *   causal.txt   per unit, best first: predicted program speedup at each virtual speedup,
 *                with its 95% interval
 *   causal.json  the same, and the experiments' totals
 *   causal.svg   one self-contained plot with the curves of the top units
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/vec.h"
#include "../model/causal.h"
#include "../store/format.h"

#define SVG_UNITS 6

static void coz_point_lines(FILE *f, const struct sc_causal_data *d, const struct sc_causal_exp *e)
{
	if (e->end_to_end) {
		fprintf(f, "throughput-point\tname=end-to-end\tdelta=1\n");
		return;
	}
	for (size_t p = 0; p < d->points.n; p++) {
		const struct sc_causal_point *pt = &d->points.v[p];
		uint64_t delta = p < e->delta.n ? e->delta.v[p] : 0;

		if (pt->kind == SC_CAUSAL_THROUGHPUT || pt->kind == SC_CAUSAL_SAMPLED)
			fprintf(f, "throughput-point\tname=%s\tdelta=%llu\n", pt->name,
				(unsigned long long)delta);
	}
	/* Latency points: a BEGIN and an END of one name. */
	for (size_t p = 0; p < d->points.n; p++) {
		const struct sc_causal_point *b = &d->points.v[p];

		if (b->kind != SC_CAUSAL_BEGIN)
			continue;
		for (size_t q = 0; q < d->points.n; q++) {
			const struct sc_causal_point *x = &d->points.v[q];

			/* Coz's viewer reads difference as the number in flight, an integer. */
			if (x->kind == SC_CAUSAL_END && !strcmp(x->name, b->name))
				fprintf(f,
					"latency-point\tname=%s\tarrivals=%llu\tdepartures=%llu\t"
					"difference=%lld\n",
					b->name,
					(unsigned long long)(p < e->delta.n ? e->delta.v[p] : 0),
					(unsigned long long)(q < e->delta.n ? e->delta.v[q] : 0),
					(long long)llround(p < e->in_flight.n ? e->in_flight.v[p]
									      : 0));
		}
	}
}

static void write_coz(FILE *f, const struct sc_causal_data *d)
{
	fprintf(f, "startup\ttime=0\n");
	for (size_t i = 0; i < d->exps.n; i++) {
		const struct sc_causal_exp *e = &d->exps.v[i];
		const char *name =
			e->unit < d->units.n && d->units.v[e->unit] ? d->units.v[e->unit] : "?";
		uint64_t effective =
			e->duration_ns > e->delay_ns ? e->duration_ns - e->delay_ns : 0;

		fprintf(f,
			"experiment\tselected=%s\tspeedup=%.2f\tduration=%llu\tselected-samples=%llu\n",
			name, e->speedup / 100.0, (unsigned long long)effective,
			(unsigned long long)e->samples);
		coz_point_lines(f, d, e);
	}
	fprintf(f, "runtime\ttime=%llu\n", (unsigned long long)d->runtime_ns);
}

static void write_units(FILE *f, const struct sc_causal_analysis *a)
{
	for (size_t i = 0; i < a->results.n; i++) {
		const struct sc_causal_result *r = &a->results.v[i];

		fprintf(f, "\n%zu. %s  (%u experiments, %llu samples, mean %+.1f%%)\n", i + 1,
			r->name, r->nexp, (unsigned long long)r->samples, 100 * r->mean_predicted);
		fprintf(f, "   %8s  %10s  %16s  %5s\n", "speedup",
			a->latency ? "latency" : "program", "95% interval", "runs");
		for (size_t k = 0; k < r->est.n; k++) {
			const struct sc_causal_estimate *e = &r->est.v[k];

			if (isnan(e->ci))
				fprintf(f, "   %7u%%  %+9.1f%%  %16s  %5u\n", e->speedup,
					100 * (a->latency ? -e->predicted : e->predicted), "n/a",
					e->nexp);
			else if (a->latency) /* a shorter latency is shown as a negative change */
				fprintf(f, "   %7u%%  %+9.1f%%  [%+6.1f, %+6.1f]  %5u\n",
					e->speedup, -100 * e->predicted,
					-100 * (e->predicted + e->ci),
					-100 * (e->predicted - e->ci), e->nexp);
			else
				fprintf(f, "   %7u%%  %+9.1f%%  [%+6.1f, %+6.1f]  %5u\n",
					e->speedup, 100 * e->predicted,
					100 * (e->predicted - e->ci), 100 * (e->predicted + e->ci),
					e->nexp);
		}
	}
}

static void write_text(FILE *f, const struct sc_causal_data *d, const struct sc_causal_analysis *a)
{
	fprintf(f,
		"# syscope causal: predicted program speedup if the %s were faster\n"
		"# progress: %s; %zu experiments in %u run(s), %u baselines\n",
		d->mode, a->point, d->exps.n, d->runs, a->baselines);
	if (a->unsampled)
		fprintf(f, "# %u units tried never ran during their experiments: left out\n",
			a->unsampled);
	if (d->disturbed)
		fprintf(f,
			"# %u experiments left out: the program's threads waited for a CPU far "
			"longer in them than in the run's others (profile.coz has them)\n",
			d->disturbed);
	write_units(f, a);
	for (size_t i = 0; i < a->latencies.n; i++) {
		const struct sc_causal_analysis *l = &a->latencies.v[i];

		fprintf(f,
			"\n# latency point %s (COZ_BEGIN to COZ_END): %.3f ms on average in the %u "
			"baselines; the change of its mean latency if the %s were faster "
			"(mean: the reduction)\n",
			l->point, l->latency_ns / 1e6, l->baselines, d->mode);
		write_units(f, l);
	}
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void json_number(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fprintf(f, "null");
	else
		fprintf(f, "%.6f", v);
}

/* Units best first; for a latency analysis `predicted` is the fraction of latency saved. */
static void json_units(FILE *f, const struct sc_causal_analysis *a, const char *indent)
{
	fprintf(f, "[");
	for (size_t i = 0; i < a->results.n; i++) {
		const struct sc_causal_result *r = &a->results.v[i];

		fprintf(f, "%s\n%s  {\"name\": ", i ? "," : "", indent);
		json_string(f, r->name);
		fprintf(f, ", \"rank\": %zu, \"experiments\": %u, \"samples\": %llu, \"mean\": ",
			i + 1, r->nexp, (unsigned long long)r->samples);
		json_number(f, r->mean_predicted);
		fprintf(f, ",\n%s   \"speedups\": [", indent);
		for (size_t k = 0; k < r->est.n; k++) {
			const struct sc_causal_estimate *e = &r->est.v[k];

			fprintf(f, "%s{\"speedup\": %.2f, \"predicted\": ", k ? ", " : "",
				e->speedup / 100.0);
			json_number(f, e->predicted);
			fprintf(f, ", \"ci95\": ");
			json_number(f, e->ci);
			fprintf(f, ", \"experiments\": %u}", e->nexp);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "\n%s]", indent);
}

static void write_json(FILE *f, const struct sc_causal_data *d, const struct sc_causal_analysis *a)
{
	fprintf(f, "{\n  \"mode\": \"%s\",\n  \"progress_point\": ", d->mode);
	json_string(f, a->point);
	fprintf(f,
		",\n  \"runs\": %u,\n  \"experiments\": %zu,\n  \"baselines\": %u,\n"
		"  \"units_never_run\": %u,\n  \"experiments_disturbed\": %u,\n",
		d->runs, d->exps.n, a->baselines, a->unsampled, d->disturbed);
	fprintf(f, "  \"progress_points\": [");
	for (size_t p = 0; p < d->points.n; p++) {
		fprintf(f, "%s\n    {\"name\": ", p ? "," : "");
		json_string(f, d->points.v[p].name);
		fprintf(f, ", \"kind\": %d, \"visits\": %llu}", d->points.v[p].kind,
			(unsigned long long)d->points.v[p].total);
	}
	fprintf(f, "\n  ],\n  \"units\": ");
	json_units(f, a, "  ");
	fprintf(f, ",\n  \"latency_points\": [");
	for (size_t i = 0; i < a->latencies.n; i++) {
		const struct sc_causal_analysis *l = &a->latencies.v[i];

		fprintf(f, "%s\n   {\"name\": ", i ? "," : "");
		json_string(f, l->point);
		fprintf(f, ", \"baselines\": %u, \"baseline_latency_ns\": ", l->baselines);
		json_number(f, l->latency_ns);
		fprintf(f, ",\n    \"units\": ");
		json_units(f, l, "    ");
		fprintf(f, "}");
	}
	fprintf(f, "\n  ]\n}\n");
}

static void svg_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
	}
}

/* x: virtual speedup 0..100%; y: program speedup -50..+100%. */
static void write_svg(FILE *f, const struct sc_causal_analysis *a)
{
	static const char *const colors[SVG_UNITS] = { "#1f77b4", "#d62728", "#2ca02c",
						       "#ff7f0e", "#9467bd", "#8c564b" };
	const double x0 = 60, y0 = 30, w = 440, h = 300, ymin = -50, ymax = 100;
	size_t n = a->results.n < SVG_UNITS ? a->results.n : SVG_UNITS;

	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"380\" "
		   "font-family=\"sans-serif\" font-size=\"12\">\n"
		   "<rect width=\"760\" height=\"380\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"%g\" y=\"18\">Predicted program speedup (progress: ", x0);
	svg_text(f, a->point);
	fprintf(f, ")</text>\n");
	for (int t = 0; t <= 100; t += 20) {
		double x = x0 + w * t / 100.0;

		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" stroke=\"#ddd\"/>"
			"<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%d%%</text>\n",
			x, y0, x, y0 + h, x, y0 + h + 16, t);
	}
	for (int t = (int)ymin; t <= (int)ymax; t += 25) {
		double y = y0 + h * (ymax - t) / (ymax - ymin);

		fprintf(f,
			"<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\" stroke=\"%s\"/>"
			"<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%+d%%</text>\n",
			x0, y, x0 + w, y, t ? "#ddd" : "#888", x0 - 6, y + 4, t);
	}
	fprintf(f,
		"<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">virtual speedup of the "
		"line or function</text>\n",
		x0 + w / 2, y0 + h + 34);
	for (size_t i = 0; i < n; i++) {
		const struct sc_causal_result *r = &a->results.v[i];

		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
			colors[i]);
		for (size_t k = 0; k < r->est.n; k++) {
			double p = 100 * r->est.v[k].predicted;

			p = p < ymin ? ymin : p > ymax ? ymax : p;
			fprintf(f, "%.1f,%.1f ", x0 + w * r->est.v[k].speedup / 100.0,
				y0 + h * (ymax - p) / (ymax - ymin));
		}
		fprintf(f, "\"/>\n<text x=\"%g\" y=\"%.1f\" fill=\"%s\">", x0 + w + 16,
			y0 + 20 + 20.0 * (double)i, colors[i]);
		svg_text(f, r->name);
		fprintf(f, "</text>\n");
	}
	fprintf(f, "</svg>\n");
}

typedef void (*writer_fn)(FILE *f, const struct sc_causal_data *d,
			  const struct sc_causal_analysis *a);

static void coz_writer(FILE *f, const struct sc_causal_data *d, const struct sc_causal_analysis *a)
{
	(void)a;
	write_coz(f, d);
}

static void svg_writer(FILE *f, const struct sc_causal_data *d, const struct sc_causal_analysis *a)
{
	(void)d;
	write_svg(f, a);
}

int sc_causal_write_outputs(const struct sc_causal_data *d, const struct sc_causal_analysis *a,
			    const char *dir, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		writer_fn fn;
	} files[] = {
		{ "profile.coz", coz_writer },
		{ "causal.txt", write_text },
		{ "causal.json", write_json },
		{ "causal.svg", svg_writer },
	};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[4096], tmp[4200];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		f = fopen(tmp, "w");
		if (!f) {
			snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
			return -1;
		}
		files[i].fn(f, d, a);
		if (fclose(f) || rename(tmp, path)) {
			snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}
