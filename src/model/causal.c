/* SPDX-License-Identifier: MIT */
/*
 * Causal profiles from sessions (see causal.h). The prediction is Coz's: an experiment's
 * effective duration is its length less the delays inserted; the progress period at virtual
 * speedup s is the sum of effective durations over the sum of progress visits of the
 * experiments at s; the program speedup is 1 - period(s) / period(0). Every other
 * experiment is a baseline at 0%, interleaved with the others, and baselines are pooled
 * over units (a baseline inserts no delay whichever unit it names). The 95% interval comes
 * from the ratio estimator's variance, propagated to the quotient.
 */
#include "causal.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/session.h"

struct file_ctx {
	struct sc_causal_data *d;
	VEC(int) map; /* the file's point id -> index in d->points */
	uint64_t first_ts, last_ts;
	bool experiments; /* the second pass: points are known (threads' chunks interleave) */
};

static int point_index(struct sc_causal_data *d, const char *name, int kind)
{
	struct sc_causal_point *p;

	for (size_t i = 0; i < d->points.n; i++)
		if (d->points.v[i].kind == kind && !strcmp(d->points.v[i].name, name))
			return (int)i;
	p = VEC_PUSH(&d->points);
	p->name = sc_xstrdup(name);
	p->kind = kind;
	return (int)d->points.n - 1;
}

static void add_experiment(struct file_ctx *c, const struct sc_record *rec)
{
	const struct sc_rec_causal_experiment *e = (const void *)rec;
	const struct sc_causal_delta *dl = (const void *)(e + 1);
	size_t room = (rec->size - sizeof(*e)) / sizeof(*dl);
	struct sc_causal_exp *x = VEC_PUSH(&c->d->exps);

	x->unit = e->unit;
	x->run = c->d->files;
	x->speedup = e->speedup;
	x->duration_ns = e->end_ns > e->ts ? e->end_ns - e->ts : 0;
	x->delay_ns = e->delay_ns;
	x->samples = e->selected_samples;
	x->end_to_end = rec->flags & SC_CAUSAL_END_TO_END;
	if (e->npoints <= room &&
	    rec->size >= sizeof(*e) + e->npoints * sizeof(*dl) + sizeof(x->offcpu_ns))
		memcpy(&x->offcpu_ns, dl + e->npoints, sizeof(x->offcpu_ns));
	for (size_t i = 0; i < e->npoints && i < room; i++) {
		int idx = dl[i].point < c->map.n ? c->map.v[dl[i].point] : -1;

		if (idx < 0)
			continue;
		while (x->delta.n <= (size_t)idx) {
			*VEC_PUSH(&x->delta) = 0;
			*VEC_PUSH(&x->in_flight) = 0;
		}
		x->delta.v[idx] += dl[i].delta;
		x->in_flight.v[idx] += dl[i].in_flight_milli / 1000.0;
		c->d->points.v[idx].total += dl[i].delta;
	}
}

static int on_record(void *ctx, int32_t tid, const struct sc_record *rec, uint64_t offset)
{
	struct file_ctx *c = ctx;
	uint64_t ts = sc_record_ts(rec);

	(void)tid;
	(void)offset;
	if (ts && (!c->first_ts || ts < c->first_ts))
		c->first_ts = ts;
	if (ts > c->last_ts)
		c->last_ts = ts;
	if (rec->type == SC_REC_CAUSAL_POINT && !c->experiments) {
		const struct sc_rec_causal_point *p = (const void *)rec;
		const char *name = (const char *)(p + 1);

		if (p->name_len < 1 || p->name_len > rec->size - sizeof(*p) ||
		    name[p->name_len - 1])
			return 0;
		while (c->map.n <= p->id)
			*VEC_PUSH(&c->map) = -1;
		c->map.v[p->id] = point_index(c->d, name, p->kind);
	} else if (rec->type == SC_REC_CAUSAL_EXPERIMENT && c->experiments) {
		add_experiment(c, rec);
	}
	return 0;
}

/* Unit names from the scope file the CLI left in the session ("unit ID KIND NAME"). */
static void read_units(struct sc_causal_data *d, const char *session)
{
	char *path = sc_xasprintf("%s/%s", session, SC_CAUSAL_SCOPE_FILE);
	FILE *f = fopen(path, "r");
	char line[4096];

	free(path);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned id;
		char kind;
		int at = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "unit %u %c %n", &id, &kind, &at) < 2 || !at)
			continue;
		while (d->units.n <= id)
			*VEC_PUSH(&d->units) = NULL;
		if (!d->units.v[id])
			d->units.v[id] = sc_xstrdup(line + at);
		snprintf(d->mode, sizeof(d->mode), "%s", kind == 'l' ? "line" : "function");
	}
	fclose(f);
}

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The experiments [from, d->exps.n) of one process's file: those whose threads waited for a
 * CPU for a far larger share of their time than the run's median experiment (more than
 * twice it, plus 2% of the experiment) are disturbed. Under a real-time scheduling policy
 * the kernel's throttle takes the CPU away for 50 ms once a second, so one experiment in
 * five loses a quarter of its progress to something no virtual speedup did; on a machine
 * that is uniformly loaded the median is high and few are left out.
 */
static void mark_disturbed(struct sc_causal_data *d, size_t from)
{
	size_t n = 0;
	double *frac = sc_xcalloc(d->exps.n - from + 1, sizeof(*frac)), median, bar;

	for (size_t i = from; i < d->exps.n; i++) {
		const struct sc_causal_exp *e = &d->exps.v[i];

		if (!e->end_to_end && e->duration_ns)
			frac[n++] = (double)e->offcpu_ns / (double)e->duration_ns;
	}
	if (n < 4) { /* too few to tell what is usual */
		free(frac);
		return;
	}
	qsort(frac, n, sizeof(*frac), by_double);
	median = n % 2 ? frac[n / 2] : (frac[n / 2 - 1] + frac[n / 2]) / 2;
	bar = 2 * median + 0.02;
	for (size_t i = from; i < d->exps.n; i++) {
		struct sc_causal_exp *e = &d->exps.v[i];

		if (!e->end_to_end && e->duration_ns &&
		    (double)e->offcpu_ns / (double)e->duration_ns > bar) {
			e->disturbed = true;
			d->disturbed++;
		}
	}
	free(frac);
}

int sc_causal_load(struct sc_causal_data *d, char *const *sessions, size_t n, char *err,
		   size_t errlen)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->mode, sizeof(d->mode), "function");
	for (size_t i = 0; i < n; i++) {
		struct sc_session s;
		char why[512];

		if (sc_session_open(&s, sessions[i], why, sizeof(why)))
			continue;
		if (!d->units.n)
			read_units(d, sessions[i]);
		for (size_t f = 0; f < s.files.n; f++) {
			struct file_ctx c = { .d = d };
			struct sc_raw_stats st = { 0 };
			size_t from = d->exps.n;

			sc_raw_foreach(&s.files.v[f], on_record, &c, &st, NULL, NULL);
			c.experiments = true;
			sc_raw_foreach(&s.files.v[f], on_record, &c, &st, NULL, NULL);
			mark_disturbed(d, from);
			if (c.last_ts > c.first_ts && f == 0)
				d->runtime_ns += c.last_ts - c.first_ts;
			VEC_FREE(&c.map);
			d->files++;
		}
		d->runs++;
		sc_session_close(&s);
	}
	if (!d->exps.n) {
		snprintf(err, errlen,
			 "no causal experiment was recorded (did the program run long enough: "
			 "an experiment lasts --experiment-duration and needs samples in scope; "
			 "or use --end-to-end)");
		return -1;
	}
	return 0;
}

void sc_causal_data_free(struct sc_causal_data *d)
{
	for (size_t i = 0; i < d->units.n; i++)
		free(d->units.v[i]);
	for (size_t i = 0; i < d->points.n; i++)
		free(d->points.v[i].name);
	for (size_t i = 0; i < d->exps.n; i++) {
		VEC_FREE(&d->exps.v[i].delta);
		VEC_FREE(&d->exps.v[i].in_flight);
	}
	VEC_FREE(&d->units);
	VEC_FREE(&d->points);
	VEC_FREE(&d->exps);
}

/*
 * What one experiment measured, as x / y, the quantity virtual speedups make smaller: the
 * progress period (effective duration over visits) or, for a latency point, the latency
 * (mean number in flight x effective duration over arrivals).
 */
static bool measure(const struct sc_causal_analysis *a, const struct sc_causal_exp *e, double *x,
		    double *y)
{
	int point = a->point_index;

	*x = (double)e->duration_ns - (double)e->delay_ns;
	if (*x <= 0 || e->disturbed)
		return false;
	if (point < 0)
		*y = e->end_to_end ? 1 : 0;
	else if ((size_t)point < e->delta.n)
		*y = (double)e->delta.v[point];
	else
		return false; /* its process had no such point (yet): a parent of the workers */
	if (a->latency)
		*x *= (size_t)point < e->in_flight.n ? e->in_flight.v[point] : 0;
	return true;
}

/* The period (sum x / sum y) of the experiments that `want` accepts, and its variance. */
struct ratio {
	double r, var;
	unsigned n;
};

static struct ratio period_of(const struct sc_causal_data *d, const struct sc_causal_analysis *a,
			      int64_t unit, unsigned speedup)
{
	double sx = 0, sy = 0, ss = 0;
	struct ratio q = { 0 };

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < d->exps.n; i++) {
			const struct sc_causal_exp *e = &d->exps.v[i];
			double x, y;

			if (e->speedup != speedup || (unit >= 0 && e->unit != unit) ||
			    !measure(a, e, &x, &y))
				continue;
			if (!pass) {
				sx += x;
				sy += y;
				q.n++;
			} else {
				ss += (x - q.r * y) * (x - q.r * y);
			}
		}
		if (!pass) {
			if (!sy)
				return (struct ratio){ 0 };
			q.r = sx / sy;
		}
	}
	q.var = q.n > 1 ? ss / (q.n - 1) * q.n / (sy * sy) : NAN;
	return q;
}

/*
 * Paired estimate: each experiment at `speedup` against the baselines the controller ran
 * right before it (whatever unit that baseline named: it inserted no delay) and right after
 * it (same unit), in the same run, so that the machine's drift (load, frequency) cancels,
 * to first order when the baselines bracket it. The prediction is the ratio of the pooled
 * periods (sums of effective durations over sums of visits), not the mean of each pair's
 * ratio: an experiment sees a few tens of visits, and the mean of such small ratios is
 * biased (and noisier). Its 95% interval comes from the spread of the pairs' predictions.
 */
static bool paired_estimate(const struct sc_causal_data *d, const struct sc_causal_analysis *a,
			    uint32_t unit, unsigned speedup, struct sc_causal_estimate *est)
{
	double sum = 0, sum2 = 0, sx = 0, sy = 0, sbx = 0, sby = 0;
	unsigned n = 0;

	for (size_t i = 0; i < d->exps.n; i++) {
		const struct sc_causal_exp *e = &d->exps.v[i];
		const struct sc_causal_exp *b = i + 1 < d->exps.n ? &d->exps.v[i + 1] : NULL;
		const struct sc_causal_exp *before = i ? &d->exps.v[i - 1] : NULL;
		double x, y, bx, by, px, py, p;

		bool has_after, has_before;

		if (e->unit != unit || e->speedup != speedup || e->end_to_end ||
		    !measure(a, e, &x, &y) || !x || !y)
			continue;
		has_after = b && !b->speedup && b->unit == unit && !b->end_to_end &&
			    b->run == e->run && measure(a, b, &bx, &by) && bx && by;
		/* The baseline before, when there is one of this run: weighed as the one after. */
		has_before = before && !before->speedup && !before->end_to_end &&
			     before->run == e->run && measure(a, before, &px, &py) && px && py;
		if (has_after && has_before) {
			bx = (bx + px * by / py) / 2; /* its period, at the after one's visits */
		} else if (has_before) {	      /* the one after was left out (disturbed) */
			bx = px;
			by = py;
		} else if (!has_after) {
			continue;
		}
		p = 1 - (x / y) / (bx / by);
		sum += p;
		sum2 += p * p;
		sx += x;
		sy += y;
		sbx += bx;
		sby += by;
		n++;
	}
	if (!n)
		return false;
	est->speedup = speedup;
	est->nexp = n;
	est->predicted = 1 - (sx / sy) / (sbx / sby);
	est->ci = n > 1 ? 1.96 * sqrt(fmax(0, (sum2 - sum * sum / n) / (n - 1)) / n) : NAN;
	return true;
}

/* Best first by the mean predicted speedup (the text table's and the summary's order),
 * a unit whose mean is not a number last, ties by unit id: the same order every time,
 * whatever order the experiments came in (end-to-end runs, several sessions). */
static int by_mean(const void *a, const void *b)
{
	const struct sc_causal_result *x = a, *y = b;
	bool xn = isnan(x->mean_predicted), yn = isnan(y->mean_predicted);

	if (xn != yn)
		return xn ? 1 : -1;
	if (!xn && x->mean_predicted != y->mean_predicted)
		return x->mean_predicted < y->mean_predicted ? 1 : -1;
	return x->unit < y->unit ? -1 : x->unit > y->unit;
}

/* The progress point to use: whole runs, else the throughput point visited most (a latency
 * point's departures only where there is none: latency points have analyses of their own). */
static int choose_point(const struct sc_causal_data *d)
{
	int best = -1;

	for (size_t i = 0; i < d->exps.n; i++)
		if (d->exps.v[i].end_to_end)
			return -1;
	for (int pass = 0; pass < 2 && best < 0; pass++)
		for (size_t i = 0; i < d->points.n; i++) {
			int kind = d->points.v[i].kind;
			bool fits =
				pass ? kind == SC_CAUSAL_END
				     : kind == SC_CAUSAL_THROUGHPUT || kind == SC_CAUSAL_SAMPLED;

			if (fits && (best < 0 || d->points.v[i].total > d->points.v[best].total))
				best = (int)i;
		}
	return best;
}

static void analyze_unit(const struct sc_causal_data *d, struct sc_causal_analysis *a,
			 uint32_t unit, struct ratio base)
{
	struct sc_causal_result r = { .unit = unit };
	unsigned speedups[101] = { 0 };
	double sum = 0;

	r.name = unit < d->units.n && d->units.v[unit] ? d->units.v[unit] : "?";
	for (size_t i = 0; i < d->exps.n; i++) {
		const struct sc_causal_exp *e = &d->exps.v[i];

		if (e->unit != unit)
			continue;
		r.nexp++;
		r.samples += e->samples;
		if (e->speedup && e->speedup <= 100)
			speedups[e->speedup]++;
	}
	if (!r.nexp)
		return;
	if (!r.samples) { /* never ran: nothing was slowed for it (end-to-end runs pick blindly) */
		a->unsampled++;
		return;
	}
	for (unsigned s = 0; s <= 100; s++) {
		struct sc_causal_estimate *est, one;
		struct ratio q;

		if (s && !speedups[s])
			continue;
		/* Latency: a few arrivals an experiment make each pair's ratio noisy and biased;
		 * the ratio of the sums over all experiments at s is not. */
		if (s && !a->latency && paired_estimate(d, a, unit, s, &one)) {
			*VEC_PUSH(&r.est) = one;
			sum += one.predicted;
			continue;
		}
		q = s ? period_of(d, a, unit, s) : base;
		if (!q.r)
			continue;
		est = VEC_PUSH(&r.est);
		est->speedup = s;
		est->nexp = s ? q.n : base.n;
		est->predicted = 1 - q.r / base.r;
		est->ci = 1.96 * (q.r / base.r) *
			  sqrt(q.var / (q.r * q.r) + base.var / (base.r * base.r));
		if (s)
			sum += est->predicted;
	}
	r.mean_predicted = r.est.n > 1 ? sum / (double)(r.est.n - 1) : 0;
	*VEC_PUSH(&a->results) = r;
}

/* Every unit's predictions for the point the analysis names. */
static void analyze_point(const struct sc_causal_data *d, struct sc_causal_analysis *a)
{
	struct ratio base = period_of(d, a, -1, 0);
	uint32_t nunits = 0;

	a->baselines = base.n;
	if (a->latency)
		a->latency_ns = base.r;
	for (size_t i = 0; i < d->exps.n; i++)
		if (d->exps.v[i].unit + 1 > nunits)
			nunits = d->exps.v[i].unit + 1;
	if (base.r)
		for (uint32_t u = 0; u < nunits; u++)
			analyze_unit(d, a, u, base);
	VEC_SORT(&a->results, by_mean); /* none when no unit tried ran */
}

/* A latency analysis for each COZ_BEGIN point that has a COZ_END of its name. */
static void analyze_latencies(const struct sc_causal_data *d, struct sc_causal_analysis *a)
{
	for (size_t b = 0; b < d->points.n; b++) {
		const struct sc_causal_point *begin = &d->points.v[b];
		bool paired = false;

		if (begin->kind != SC_CAUSAL_BEGIN)
			continue;
		for (size_t e = 0; e < d->points.n && !paired; e++)
			paired = d->points.v[e].kind == SC_CAUSAL_END &&
				 !strcmp(d->points.v[e].name, begin->name);
		if (paired) {
			struct sc_causal_analysis *l = VEC_PUSH(&a->latencies);

			memset(l, 0, sizeof(*l));
			l->point = begin->name;
			l->point_index = (int)b;
			l->latency = true;
			analyze_point(d, l);
		}
	}
}

void sc_causal_analyze(const struct sc_causal_data *d, struct sc_causal_analysis *a)
{
	memset(a, 0, sizeof(*a));
	a->point_index = choose_point(d);
	a->point = a->point_index < 0 ? "end-to-end" : d->points.v[a->point_index].name;
	analyze_point(d, a);
	if (a->point_index >= 0)
		analyze_latencies(d, a);
}

void sc_causal_analysis_free(struct sc_causal_analysis *a)
{
	for (size_t i = 0; i < a->latencies.n; i++)
		sc_causal_analysis_free(&a->latencies.v[i]);
	VEC_FREE(&a->latencies);
	for (size_t i = 0; i < a->results.n; i++)
		VEC_FREE(&a->results.v[i].est);
	VEC_FREE(&a->results);
}
