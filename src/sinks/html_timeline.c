/* SPDX-License-Identifier: MIT */
/*
 * What the report shows over time, from one replay of every image: samples per time bucket
 * per thread, counter tracks cut to SC_HTML_POINTS points (the mean of the values in each
 * bucket, the last value carried over empty ones), GPU busy time per device and bucket, and
 * totals per GPU operation name and per region (category, name). Sizes are bounded by the
 * constants of html.h, and what is beyond a bound is counted, not dropped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../model/timeline.h"
#include "html.h"

struct thread_row {
	int32_t pid, tid;
	const char *name;
	uint64_t samples, buckets[SC_HTML_BUCKETS];
};

struct track {
	int32_t pid;
	const char *name, *unit;
	double sum[SC_HTML_POINTS], min, max;
	uint32_t n[SC_HTML_POINTS];
	uint64_t values;
};

/* A GPU operation name or a region: count and time. */
struct total {
	const char *name, *category;
	uint16_t kind;
	uint64_t count, bytes;
	double sum, min, max; /* seconds */
};

typedef VEC(struct total) total_vec;

struct agent_row {
	int32_t pid;
	uint32_t agent;
	const char *name;
	double busy[SC_HTML_BUCKETS]; /* ns of work per bucket, overlaps summed */
	uint64_t ops;
};

struct gather {
	struct sc_model *m;
	struct sc_image *img;
	uint64_t t0, span;
	VEC(struct thread_row) threads;
	VEC(struct track) tracks;
	total_vec gpu, regions;
	VEC(struct agent_row) agents;
	struct sc_hashmap thread_index, track_index, gpu_index, region_index, agent_index;
	uint64_t tracks_left_out;
};

static size_t bucket(const struct gather *g, uint64_t ts, size_t n)
{
	double x = ts <= g->t0 ? 0 : (double)(ts - g->t0) / (double)g->span * (double)n;

	return x >= (double)n ? n - 1 : (size_t)x;
}

/* The slot of `key` (index + 1 of its row, 0 when new): key 0 is the map's empty slot. */
static uint64_t *row_slot(struct sc_hashmap *map, uint64_t key, bool *inserted)
{
	return sc_hashmap_upsert(map, key ? key : 1, 0, inserted);
}

static struct thread_row *thread_of(struct gather *g, const struct sc_thread *t)
{
	uint64_t key = (uint64_t)(uint32_t)g->img->pid << 32 | (uint32_t)t->tid, *slot;
	bool inserted;

	if (g->threads.n >= SC_HTML_THREADS && !sc_hashmap_get(&g->thread_index, key ? key : 1))
		key = UINT64_MAX; /* the row of every further thread */
	slot = row_slot(&g->thread_index, key, &inserted);
	if (inserted) {
		struct thread_row *r = VEC_PUSH(&g->threads);

		memset(r, 0, sizeof(*r));
		r->pid = key == UINT64_MAX ? 0 : g->img->pid;
		r->tid = key == UINT64_MAX ? 0 : t->tid;
		r->name = key == UINT64_MAX ? "[other threads]"
					    : sc_strtab_intern(&g->m->strings, t->name);
		*slot = g->threads.n;
	}
	return &g->threads.v[*slot - 1];
}

static void on_sample(void *ctx, struct sc_image *img, struct sc_thread *t, uint64_t ts,
		      uint64_t cpu_ns, uint32_t stack)
{
	struct gather *g = ctx;
	struct thread_row *r;

	(void)img;
	(void)cpu_ns;
	if (stack < g->m->stacks.n && g->m->stacks.v[stack].kind == SC_SAMPLE_CRASH)
		return;
	r = thread_of(g, t);
	r->samples++;
	r->buckets[bucket(g, ts, SC_HTML_BUCKETS)]++;
}

static void on_counter(void *ctx, struct sc_image *img, struct sc_thread *t,
		       const struct sc_counter_track *track, uint64_t ts, double value)
{
	struct gather *g = ctx;
	uint64_t key = (uint64_t)(uint32_t)img->pid << 32 | track->id, *slot;
	struct track *tr;
	size_t b;
	bool inserted;

	(void)t;
	if (track->id & 0x80000000u || !isfinite(value))
		return; /* CPU counters of one thread between its samples: not a level */
	if (g->tracks.n >= SC_HTML_TRACKS && !sc_hashmap_get(&g->track_index, key)) {
		g->tracks_left_out++;
		return;
	}
	slot = row_slot(&g->track_index, key, &inserted);
	if (inserted) {
		tr = VEC_PUSH(&g->tracks);
		memset(tr, 0, sizeof(*tr));
		tr->pid = img->pid;
		tr->name = track->name;
		tr->unit = track->unit;
		tr->min = tr->max = value;
		*slot = g->tracks.n;
	}
	tr = &g->tracks.v[*slot - 1];
	b = bucket(g, ts, SC_HTML_POINTS);
	tr->sum[b] += value;
	tr->n[b]++;
	tr->values++;
	tr->min = fmin(tr->min, value);
	tr->max = fmax(tr->max, value);
}

static struct total *total_of(total_vec *v, struct sc_hashmap *map, uint64_t key, const char *name,
			      const char *category, uint16_t kind)
{
	uint64_t *slot;
	bool inserted;

	if (v->n >= SC_HTML_ROWS - 1 && !sc_hashmap_get(map, key ? key : 1)) {
		key = UINT64_MAX;
		name = "[other]";
	}
	slot = row_slot(map, key, &inserted);
	if (inserted) {
		struct total *r = VEC_PUSH(v);

		*r = (struct total){
			.name = name, .category = category, .kind = kind, .min = INFINITY
		};
		*slot = v->n;
	}
	return &v->v[*slot - 1];
}

static void add_time(struct total *r, uint64_t start, uint64_t end, uint64_t bytes)
{
	double s = end > start ? (double)(end - start) * 1e-9 : 0;

	r->count++;
	r->bytes += bytes;
	r->sum += s;
	r->min = fmin(r->min, s);
	r->max = fmax(r->max, s);
}

static void on_region_end(void *ctx, struct sc_image *img, struct sc_thread *t,
			  const struct sc_region_ev *ev)
{
	struct gather *g = ctx;
	const char *name = sc_strtab_intern(&g->m->strings, ev->name ? ev->name : "");
	const char *cat = sc_strtab_intern(&g->m->strings, ev->category ? ev->category : "");
	uint64_t key = sc_hash_u64((uintptr_t)name) ^ (uintptr_t)cat;

	(void)img;
	(void)t;
	add_time(total_of(&g->regions, &g->region_index, key, name, cat, 0), ev->start, ev->end, 0);
}

static void agent_busy(struct gather *g, const struct sc_gpu_op_ev *op)
{
	uint64_t key = (uint64_t)(uint32_t)g->img->pid << 32 | op->rec->agent, *slot;
	uint64_t bw = g->span / SC_HTML_BUCKETS + 1, s = op->rec->start, e = op->rec->end;
	struct agent_row *a;
	bool inserted;

	if (g->agents.n >= SC_HTML_THREADS && !sc_hashmap_get(&g->agent_index, key ? key : 1))
		return;
	slot = row_slot(&g->agent_index, key, &inserted);
	if (inserted) {
		a = VEC_PUSH(&g->agents);
		memset(a, 0, sizeof(*a));
		a->pid = g->img->pid;
		a->agent = op->rec->agent;
		a->name = op->agent && op->agent->name ? op->agent->name : "GPU";
		*slot = g->agents.n;
	}
	a = &g->agents.v[*slot - 1];
	a->ops++;
	/* Spread the op's time over the buckets it covers. */
	for (uint64_t ts = s < g->t0 ? g->t0 : s; ts < e;) {
		size_t b = bucket(g, ts, SC_HTML_BUCKETS);
		uint64_t bend = g->t0 + (b + 1) * bw, upto = e < bend ? e : bend;

		if (upto <= ts)
			break;
		a->busy[b] += (double)(upto - ts);
		ts = upto;
	}
}

static void on_gpu_op(void *ctx, struct sc_image *img, struct sc_thread *t,
		      const struct sc_gpu_op_ev *op)
{
	struct gather *g = ctx;
	uint16_t kind = op->rec->kind;
	const char *name = op->name ? op->name : sc_gpu_op_default_name(kind, op->rec->copy_kind);
	uint64_t key = sc_hash_u64((uintptr_t)name) ^ kind;

	(void)img;
	(void)t;
	if (kind == SC_GPU_ALLOC || kind == SC_GPU_FREE)
		return;
	add_time(total_of(&g->gpu, &g->gpu_index, key, name, "", kind), op->rec->start,
		 op->rec->end, op->rec->bytes);
	agent_busy(g, op);
}

static json_t *threads_json(struct gather *g)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < g->threads.n; i++) {
		struct thread_row *r = &g->threads.v[i];
		json_t *b = json_array();

		for (size_t k = 0; k < SC_HTML_BUCKETS; k++)
			json_array_append_new(b, json_integer((json_int_t)r->buckets[k]));
		json_array_append_new(arr,
				      json_pack("{s:i, s:i, s:o, s:I, s:o}", "pid", r->pid, "tid",
						r->tid, "name", sc_html_str(r->name), "samples",
						(json_int_t)r->samples, "buckets", b));
	}
	return arr;
}

static json_t *tracks_json(struct gather *g)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < g->tracks.n; i++) {
		struct track *tr = &g->tracks.v[i];
		json_t *pts = json_array();
		double last = NAN;

		for (size_t k = 0; k < SC_HTML_POINTS; k++) {
			if (tr->n[k])
				last = tr->sum[k] / tr->n[k];
			json_array_append_new(pts, isnan(last) ? json_null() : json_real(last));
		}
		json_array_append_new(arr, json_pack("{s:i, s:o, s:o, s:I, s:f, s:f, s:o}", "pid",
						     tr->pid, "name", sc_html_str(tr->name), "unit",
						     sc_html_str(tr->unit), "values",
						     (json_int_t)tr->values, "min", tr->min, "max",
						     tr->max, "points", pts));
	}
	return arr;
}

static int by_sum(const void *a, const void *b)
{
	const struct total *x = a, *y = b;

	return x->sum > y->sum ? -1 : x->sum < y->sum ? 1 : strcmp(x->name, y->name);
}

static json_t *totals_json(struct total *v, size_t n, bool gpu)
{
	json_t *arr = json_array();

	if (n) /* v is NULL when empty */
		qsort(v, n, sizeof(*v), by_sum);
	for (size_t i = 0; i < n; i++) {
		json_t *o =
			json_pack("{s:o, s:I, s:f, s:f, s:f, s:f}", "name", sc_html_str(v[i].name),
				  "count", (json_int_t)v[i].count, "total", v[i].sum, "mean",
				  v[i].count ? v[i].sum / (double)v[i].count : 0.0, "min",
				  isfinite(v[i].min) ? v[i].min : 0.0, "max", v[i].max);

		if (gpu) {
			json_object_set_new(o, "kind", json_string(sc_gpu_op_category(v[i].kind)));
			json_object_set_new(o, "bytes", json_integer((json_int_t)v[i].bytes));
		} else {
			json_object_set_new(o, "category", sc_html_str(v[i].category));
		}
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *agents_json(struct gather *g)
{
	json_t *arr = json_array();
	double bw = (double)(g->span / SC_HTML_BUCKETS + 1);

	for (size_t i = 0; i < g->agents.n; i++) {
		struct agent_row *a = &g->agents.v[i];
		json_t *b = json_array();
		double busy = 0;

		for (size_t k = 0; k < SC_HTML_BUCKETS; k++) {
			double share = fmin(a->busy[k] / bw, 1.0);

			busy += share;
			json_array_append_new(b, json_real(round(share * 1000) / 1000));
		}
		json_array_append_new(arr, json_pack("{s:i, s:i, s:o, s:I, s:f, s:o}", "pid",
						     a->pid, "agent", (int)a->agent, "name",
						     sc_html_str(a->name), "ops",
						     (json_int_t)a->ops, "busy_percent",
						     100.0 * busy / SC_HTML_BUCKETS, "buckets", b));
	}
	return arr;
}

json_t *sc_html_timeline_json(struct sc_output *out)
{
	static const struct sc_timeline_ops ops = { .region_end = on_region_end,
						    .counter = on_counter,
						    .sample = on_sample,
						    .gpu_op = on_gpu_op };
	struct gather g = { .m = out->model };
	json_t *doc;

	g.t0 = g.m->first_ts;
	g.span = g.m->last_ts > g.m->first_ts ? g.m->last_ts - g.m->first_ts : 1;
	sc_hashmap_init(&g.thread_index);
	sc_hashmap_init(&g.track_index);
	sc_hashmap_init(&g.gpu_index);
	sc_hashmap_init(&g.region_index);
	sc_hashmap_init(&g.agent_index);
	for (size_t i = 0; i < g.m->images.n; i++) {
		struct sc_timeline_stats st = { 0 };

		g.img = g.m->images.v[i];
		sc_timeline_replay(g.m, g.img, &ops, &g, &st);
	}
	doc = json_pack("{s:I, s:I, s:i, s:o, s:o, s:I, s:o, s:o, s:o}", "start_ns",
			(json_int_t)g.t0, "span_ns", (json_int_t)g.span, "buckets", SC_HTML_BUCKETS,
			"threads", threads_json(&g), "counters", tracks_json(&g),
			"counters_left_out", (json_int_t)g.tracks_left_out, "gpu_agents",
			agents_json(&g), "gpu_ops", totals_json(g.gpu.v, g.gpu.n, true), "regions",
			totals_json(g.regions.v, g.regions.n, false));
	VEC_FREE(&g.threads);
	VEC_FREE(&g.tracks);
	VEC_FREE(&g.gpu);
	VEC_FREE(&g.regions);
	VEC_FREE(&g.agents);
	sc_hashmap_free(&g.thread_index);
	sc_hashmap_free(&g.track_index);
	sc_hashmap_free(&g.gpu_index);
	sc_hashmap_free(&g.region_index);
	sc_hashmap_free(&g.agent_index);
	return doc;
}
