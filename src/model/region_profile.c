/* SPDX-License-Identifier: MIT */
/*
 * Wall-clock profiles of regions (kind SC_PROFILE_REGIONS, metric "wall_clock"): user
 * regions, NVTX ranges, CUDA API calls, CUPTI waits and, later, instrumented functions. Each
 * region is one call of a "function" named after the region, in the "module" of its
 * category; inclusive time is its duration, exclusive time its duration less the regions
 * directly inside it. The call tree is the nesting of regions on their thread.
 *
 * CPU counters (--cpu-events read at region boundaries): a region's inclusive counts are
 * what its thread's reads counted between its start and its end (cumulative sums per thread,
 * looked up by time); self counts are those less the regions directly inside. The reads are
 * sorted and summed through the bounded sorter into a table that spills to disk past a bound
 * (spill_table.h), like the regions: memory does not grow with the number of reads.
 *
 * GPU work launched (kernels, copies, sets): each op's device time goes to the call that
 * launched it (the API region with its correlation id) and to every region around that
 * call, so that a function or NVTX range shows how much GPU time it started.
 *
 * Regions of one thread arrive in several streams (the thread's own begin/end records, and
 * whole spans written later by the CUDA tracer's thread), so nesting is taken from time, not
 * from arrival: the regions of a process are sorted by thread, start (and longest first),
 * and each one is placed inside the innermost open region that contains it. Calls that ran
 * on a coroutine's stack (their context) nest among themselves: their callers are on that
 * stack, not the code that resumed it, so each context of a thread is its own part of the
 * thread's tree.
 */
#include "mpi.h"
#include "profile_build.h"
#include "spill_sort.h"
#include "spill_table.h"
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

struct interval {
	uint64_t start, end;
	uint32_t func; /* profile function id */
	int32_t tid;
	uint32_t context; /* the stack it ran on, 0: the thread's own */
	uint32_t depth;	  /* on its thread, as its own records tell: orders identical intervals */
	uint32_t seq;	  /* arrival order: the tie-break that keeps the sort stable */
	bool whole;	  /* a FUNC_CALL: arrived after its callees */
	uint64_t corr;	  /* the GPU work it launched, 0: none */
};

/* A read of a thread's CPU counters: what it counted, then (after the sort) the running
 * total of the thread up to and including it. */
struct pmc_point {
	int32_t tid;
	uint32_t seq;
	uint64_t ts;
	double v[SC_PMC_MAX];
};

/* A throttled function's counted calls (FUNC_COUNT), or Python calls aggregated in the
 * process (FUNC_STATS: `exact`, with their statistics). */
struct func_total {
	uint32_t func;
	uint64_t calls, total_ns;
	const char *name, *category;	/* interned */
	bool exact, throttled, replace; /* replace: `outer` stands for its recorded calls too */
	struct sc_stats outer;		/* seconds: the calls not inside one of the same function */
	double self, hidden; /* seconds: their own time; time hidden in the recorded calls */
};

/* A region's name and category are mostly the same few, region after region: their function
 * id by the pointers given, the text checked (callers may pass buffers) unless they are the
 * interned strings themselves. */
#define RECENT_FUNCS 64
struct recent_func {
	const char *name, *category;   /* as given */
	const char *iname, *icategory; /* interned */
	uint32_t func;
};

/* The device time of the GPU work of one correlation id. */
struct corr_ns {
	uint64_t corr, ns;
};

struct collect {
	struct sc_profile_set *set;
	struct recent_func recent[RECENT_FUNCS];
	VEC(struct func_total) counted;
	struct sc_spill_sort v;	  /* the regions, sorted on disk past a bound */
	struct pmc_point pmc_cur; /* the read being gathered (tid 0: none) */
	bool pmc_open;
	uint32_t pmc_reads;
	struct sc_spill_sort pmc_sort; /* the reads, by thread and time */
	struct sc_spill_table pmc;     /* then their running totals per thread */
	struct sc_spill_sort gpu_sort; /* GPU ops' (correlation id, ns), by id */
	struct sc_spill_table gpu_ns;  /* then summed by correlation id */
};

static void on_gpu_op(void *ctx, struct sc_image *img, struct sc_thread *t,
		      const struct sc_gpu_op_ev *op)
{
	struct collect *c = ctx;
	const struct sc_rec_gpu_op *g = op->rec;
	struct corr_ns *e;

	(void)img;
	(void)t;
	if (!g->corr_id || g->end <= g->start ||
	    (g->kind != SC_GPU_KERNEL && g->kind != SC_GPU_COPY && g->kind != SC_GPU_SET &&
	     g->kind != SC_GPU_GRAPH))
		return;
	e = sc_spill_push(&c->gpu_sort);
	e->corr = g->corr_id;
	e->ns = g->end - g->start;
}

static int by_corr(const void *a, const void *b)
{
	const struct corr_ns *x = a, *y = b;

	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

/* The ops' device time summed by correlation id, into a table sorted by id. */
static void sum_gpu_ns(struct collect *c)
{
	struct corr_ns *last = NULL, sum = { 0 };

	sc_spill_finish(&c->gpu_sort);
	for (const struct corr_ns *e; (e = sc_spill_next(&c->gpu_sort));) {
		if (last && e->corr == sum.corr) {
			sum.ns += e->ns;
			continue;
		}
		if (last)
			*last = sum;
		last = sc_spill_table_push(&c->gpu_ns);
		sum = *e;
	}
	if (last)
		*last = sum;
	sc_spill_table_seal(&c->gpu_ns);
	sc_spill_reset(&c->gpu_sort);
}

static bool corr_before(const void *item, const void *key)
{
	return ((const struct corr_ns *)item)->corr < *(const uint64_t *)key;
}

/* Seconds of GPU work launched by interval `iv` itself. */
static double gpu_of(struct collect *c, const struct interval *iv)
{
	uint64_t i;
	const struct corr_ns *e;

	if (!iv->corr || !c->gpu_ns.count)
		return 0;
	i = sc_spill_table_lower_bound(&c->gpu_ns, &iv->corr, corr_before);
	if (i == c->gpu_ns.count)
		return 0;
	e = sc_spill_table_get(&c->gpu_ns, i);
	return e->corr == iv->corr ? (double)e->ns * 1e-9 : 0;
}

static void on_counter(void *ctx, struct sc_image *img, struct sc_thread *t,
		       const struct sc_counter_track *track, uint64_t ts, double value)
{
	struct collect *c = ctx;
	int32_t tid = (int32_t)((track->id >> 3) & 0xfffffffu);
	struct pmc_point *pt = &c->pmc_cur;

	(void)img;
	(void)t;
	if (!(track->id & 0x80000000u))
		return; /* not a CPU counter track */
	if (!c->pmc_open || pt->tid != tid ||
	    pt->ts != ts) { /* the events of one read come together */
		if (c->pmc_open)
			*(struct pmc_point *)sc_spill_push(&c->pmc_sort) = *pt;
		memset(pt, 0, sizeof(*pt));
		pt->tid = tid;
		pt->ts = ts;
		pt->seq = ++c->pmc_reads;
		c->pmc_open = true;
	}
	pt->v[track->id & 7] += value;
}

static int pmc_by_thread_time(const void *a, const void *b)
{
	const struct pmc_point *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The reads in order, each with the running total of its thread up to it, into c->pmc. */
static void sum_pmc(struct collect *c)
{
	struct pmc_point prev = { 0 };

	if (c->pmc_open)
		*(struct pmc_point *)sc_spill_push(&c->pmc_sort) = c->pmc_cur;
	c->pmc_open = false;
	sc_spill_finish(&c->pmc_sort);
	for (const struct pmc_point *p; (p = sc_spill_next(&c->pmc_sort));) {
		struct pmc_point *out = sc_spill_table_push(&c->pmc);

		*out = *p;
		if (c->pmc.count > 1 && prev.tid == p->tid)
			for (unsigned k = 0; k < SC_PMC_MAX; k++)
				out->v[k] += prev.v[k];
		prev = *out;
	}
	sc_spill_table_seal(&c->pmc);
	sc_spill_reset(&c->pmc_sort);
}

/* Searches of the reads by (thread, time): a key's time UINT64_MAX is past all of its
 * thread's, 0 with tid - 1... is before them (times of reads are never 0). */
static bool pmc_at_or_before(const void *item, const void *key)
{
	const struct pmc_point *p = item, *k = key;

	return p->tid < k->tid || (p->tid == k->tid && p->ts <= k->ts);
}

/* The first read of thread `tid` (or, with `after`, of the threads after it). */
static uint64_t pmc_thread_bound(struct collect *c, int32_t tid, bool after)
{
	struct pmc_point key = { .tid = after ? tid : tid - 1, .ts = UINT64_MAX };

	if (!after && tid == INT32_MIN)
		return 0;
	return sc_spill_table_lower_bound(&c->pmc, &key, pmc_at_or_before);
}

/* The running totals of thread points [first, hi) at time `ts` (reads at or before it),
 * into `out`. */
static void pmc_total_at(struct collect *c, uint64_t first, uint64_t hi, uint64_t ts,
			 double out[SC_PMC_MAX])
{
	struct pmc_point key = { .ts = ts };
	uint64_t lo;

	key.tid = first < hi ? ((const struct pmc_point *)sc_spill_table_get(&c->pmc, first))->tid
			     : 0;
	lo = first < hi ? sc_spill_table_lower_bound(&c->pmc, &key, pmc_at_or_before) : first;
	if (lo > first)
		memcpy(out, ((const struct pmc_point *)sc_spill_table_get(&c->pmc, lo - 1))->v,
		       SC_PMC_MAX * sizeof(double));
	else
		memset(out, 0, SC_PMC_MAX * sizeof(double));
}

static bool same_text(const char *given, const char *interned)
{
	return given == interned || !strcmp(given, interned);
}

static uint32_t region_func(struct collect *c, const char *name, const char *category)
{
	struct sc_model *m = c->set->model;
	struct recent_func *e =
		&c->recent[((uintptr_t)name >> 3 ^ (uintptr_t)category >> 5) % RECENT_FUNCS];

	if (e->name == name && e->category == category && e->iname && same_text(name, e->iname) &&
	    same_text(category, e->icategory))
		return e->func;
	e->name = name;
	e->category = category;
	e->iname = sc_strtab_intern(&m->strings, name);
	e->icategory = sc_strtab_intern(&m->strings, category);
	e->func = sc_profile_func_id(c->set, e->iname, e->icategory);
	return e->func;
}

static void on_region_end(void *ctx, struct sc_image *img, struct sc_thread *t,
			  const struct sc_region_ev *r)
{
	struct collect *c = ctx;
	struct interval *iv;

	(void)img;
	if (!t)
		return;
	iv = sc_spill_push(&c->v);
	iv->start = r->start;
	iv->end = r->end >= r->start ? r->end : r->start;
	iv->tid = t->tid;
	iv->context = r->context;
	iv->depth = r->depth;
	iv->seq = (uint32_t)c->v.count;
	iv->whole = r->whole;
	iv->corr = r->corr_id;
	iv->func = region_func(c, r->name, r->category);
}

/* A throttled function's calls counted only: its flat entry gets them (exact count and total
 * inclusive time; each at the mean). They have no place in the call tree: their time stays
 * in their callers' self time. The process's note names them (throttle_note). */
static void on_func_count(void *ctx, struct sc_image *img, struct sc_thread *t, const char *name,
			  const char *category, uint64_t calls, uint64_t total_ns)
{
	struct collect *c = ctx;
	struct sc_model *m = c->set->model;
	struct func_total *f;

	(void)img;
	if (!t || !calls)
		return;
	f = VEC_PUSH(&c->counted);
	f->name = sc_strtab_intern(&m->strings, name);
	f->category = sc_strtab_intern(&m->strings, category);
	f->func = sc_profile_func_id(c->set, f->name, f->category);
	f->calls = calls;
	f->total_ns = total_ns;
}

/* Python calls aggregated in the process: like FUNC_COUNT's, with exact statistics. */
static void on_func_stats(void *ctx, struct sc_image *img, struct sc_thread *t, const char *name,
			  const struct sc_rec_func_stats *r)
{
	struct collect *c = ctx;
	struct sc_model *m = c->set->model;
	struct func_total *f;

	(void)img;
	if (!t)
		return;
	f = VEC_PUSH(&c->counted);
	*f = (struct func_total){ .name = sc_strtab_intern(&m->strings, name),
				  .calls = r->calls,
				  .total_ns = r->total_ns,
				  .exact = true,
				  .throttled = r->throttled != 0 };
	f->func =
		sc_profile_func_id(c->set, f->name, sc_strtab_intern(&m->strings, "instrumented"));
	f->outer = (struct sc_stats){ .count = r->outer_calls,
				      .sum = (double)r->outer_ns * 1e-9,
				      .sumsq = r->outer_sumsq * 1e-18,
				      .min = (double)r->min_ns * 1e-9,
				      .max = (double)r->max_ns * 1e-9 };
	f->self = (double)r->self_ns * 1e-9;
	f->hidden = (double)r->hidden_ns * 1e-9;
}

/* A throttled Python function's inclusive statistics are the process's own (FUNC_STATS of
 * each of its code objects), recorded calls included: the reader cannot tell which of those
 * were inside an aggregated call of the same function. */
static void replace_throttled_incl(struct sc_profile *p, struct collect *c)
{
	struct func_total *v = c->counted.v;

	for (size_t i = 0; i < c->counted.n; i++) {
		if (!v[i].exact || !v[i].throttled || v[i].replace)
			continue;
		for (size_t j = 0; j < c->counted.n; j++)
			v[j].replace = v[j].replace || (v[j].exact && v[j].func == v[i].func);
		sc_profile_func_flat(p, v[i].func)->incl = (struct sc_stats){ 0 };
	}
}

static int by_calls_desc(const void *a, const void *b)
{
	const struct func_total *x = a, *y = b;

	return x->calls < y->calls ? 1 : x->calls > y->calls ? -1 : strcmp(x->name, y->name);
}

/* One note for a process's throttled functions, the most called first: a library can have
 * dozens, and a line each would bury the summary. */
static void throttle_note(struct sc_model *m, struct sc_process *proc, struct collect *c)
{
	const struct sc_image *img = proc->images.v[proc->images.n - 1];
	struct func_total *v;
	size_t n = 0, shown;
	uint64_t calls = 0;
	char *text, *list;
	const char *mpi = sc_strtab_intern(&m->strings, SC_MPI_CATEGORY);

	if (!c->counted.n)
		return;
	v = sc_xcalloc(c->counted.n, sizeof(*v));
	for (size_t i = 0; i < c->counted.n; i++) { /* one entry per function: threads summed */
		size_t k;

		if (!c->counted.v[i].calls)
			continue; /* FUNC_STATS of a caller: time hidden in it, no calls of its own */
		if (c->counted.v[i].category == mpi)
			continue; /* MPI queries: the MPI tracer's own note names them */

		for (k = 0; k < n && strcmp(v[k].name, c->counted.v[i].name); k++)
			;
		if (k == n)
			v[n++] = (struct func_total){ .name = c->counted.v[i].name };
		v[k].calls += c->counted.v[i].calls;
		v[k].total_ns += c->counted.v[i].total_ns;
		calls += c->counted.v[i].calls;
	}
	if (!n) {
		free(v);
		return;
	}
	list = sc_xstrdup("");
	qsort(v, n, sizeof(*v), by_calls_desc);
	shown = n < 5 ? n : 5;
	for (size_t k = 0; k < shown; k++) {
		char *next = sc_xasprintf("%s%s%s (%llu)", list, k ? ", " : "", v[k].name,
					  (unsigned long long)v[k].calls);

		free(list);
		list = next;
	}
	text = sc_xasprintf(
		"throttled: %zu function%s, %llu calls counted, not recorded one by "
		"one (%s%s); the profile has their exact counts, spread over each "
		"function's call paths as its recorded calls (a native function's calls "
		"counted after throttling are not timed where an instrumented caller's self "
		"time holds theirs, a Python one's without --python-throttle-timed); the "
		"timeline has only the recorded calls",
		n, n == 1 ? "" : "s", (unsigned long long)calls, list, n > shown ? ", ..." : "");
	*VEC_PUSH(&m->notes) = (struct sc_note){ .pid = img->pid,
						 .ts = img->last_ts,
						 .level = SC_NOTE_INFO,
						 .text = sc_strtab_intern(&m->strings, text) };
	free(text);
	free(list);
	free(v);
}

/* `n` calls taking `ns` in all, each at the mean, into `s`. */
static void stats_add_many(struct sc_stats *s, uint64_t n, double seconds)
{
	double mean = n ? seconds / (double)n : 0;
	struct sc_stats add = { .count = n,
				.sum = seconds,
				.sumsq = mean * mean * (double)n,
				.min = mean,
				.max = mean };

	if (n && seconds <= 0) /* counted, not timed: no mean to give them */
		s->count += n;
	else if (n)
		sc_stats_merge(s, &add);
}

/* The recorded calls of `func` in `tree`. */
static uint64_t recorded_in(const struct sc_tree *tree, uint32_t func)
{
	uint64_t n = 0;

	for (size_t k = 1; k < tree->nodes.n; k++)
		if (tree->nodes.v[k].func == func)
			n += tree->nodes.v[k].incl.count;
	return n;
}

/* Give `tree`'s nodes of f->func their share of the counted calls, by their recorded calls
 * (`of` of `recorded` in all): counts that add up exactly, time at the mean, taken from the
 * self time of each node's caller, which held it, or, for outermost calls, added to the
 * tree's roots and to `roots` (the profile's total, once over the threads' trees). With
 * `flat`, the flat table too. */
static void spread_counted(struct sc_profile *p, struct sc_tree *tree, const struct func_total *f,
			   uint64_t recorded, uint64_t *given, uint64_t *of, bool flat,
			   struct sc_stats *roots)
{
	double total = (double)f->total_ns * 1e-9;

	for (size_t k = 1; k < tree->nodes.n; k++) {
		struct sc_node *nd = &tree->nodes.v[k];
		uint64_t share, before = *given;
		double secs;

		if (nd->func != f->func || !nd->incl.count)
			continue;
		*of += nd->incl.count;
		share = (uint64_t)((unsigned __int128)f->calls * *of / recorded) - before;
		*given += share;
		secs = total * (double)share / (double)f->calls;
		stats_add_many(&nd->incl, share, secs);
		stats_add_many(&nd->excl, share, secs);
		if (!nd->parent) { /* an outermost call: time in no caller, added to the roots' */
			stats_add_many(&tree->nodes.v[0].incl, share, secs);
			if (roots)
				stats_add_many(roots, share, secs);
		} else {
			struct sc_node *up = &tree->nodes.v[nd->parent];

			up->excl.sum = up->excl.sum > secs ? up->excl.sum - secs : 0;
			if (flat) {
				struct sc_flat *pf = sc_profile_func_flat(p, up->func);

				pf->excl.sum = pf->excl.sum > secs ? pf->excl.sum - secs : 0;
			}
		}
	}
}

/* A throttled function's counted calls: into its flat entry (exact count, total time) and,
 * by the share of its recorded calls, into each of its call-tree nodes and out of their
 * callers' self time. */
static void add_counted(struct sc_profile *p, const struct func_total *f)
{
	struct sc_flat *fl = sc_profile_func_flat(p, f->func);
	uint64_t recorded = 0, given = 0, of = 0;

	if (f->exact) { /* FUNC_STATS: the flat entry exactly, its callers' by their own */
		if (f->replace)
			sc_stats_merge(&fl->incl, &f->outer);
		stats_add_many(&fl->excl, f->calls, f->self);
		fl->excl.sum = fl->excl.sum > f->hidden ? fl->excl.sum - f->hidden : 0;
	} else {
		stats_add_many(&fl->incl, f->calls, (double)f->total_ns * 1e-9);
		stats_add_many(&fl->excl, f->calls, (double)f->total_ns * 1e-9);
	}
	if (!f->calls)
		return;
	for (size_t t = 0; t < p->threads.n; t++)
		recorded += recorded_in(&p->threads.v[t], f->func);
	for (size_t t = 0; recorded && t < p->threads.n; t++)
		spread_counted(p, &p->threads.v[t], f, recorded, &given, &of, !f->exact, &p->total);
	recorded = recorded_in(&p->merged, f->func);
	given = of = 0;
	if (recorded)
		spread_counted(p, &p->merged, f, recorded, &given, &of, false, NULL);
}

static int by_thread_start(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->context != y->context)
		return x->context < y->context ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end) /* the enclosing one first */
		return x->end > y->end ? -1 : 1;
	if (x->depth != y->depth) /* same times (a clock tick apart at most): outer first */
		return x->depth < y->depth ? -1 : 1;
	if (x->whole && y->whole) /* whole calls arrive callees first: the caller is later */
		return x->seq > y->seq ? -1 : x->seq < y->seq;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct open_region {
	struct interval iv; /* a copy: the sorter hands out one item at a time */
	uint32_t node, merged_node;
	bool recursive;	 /* its function is open further out */
	double gpu;	 /* GPU seconds launched inside, itself included */
	double children; /* seconds in regions directly inside */
	double pmc[SC_PMC_MAX], pmc_children[SC_PMC_MAX]; /* counts inside; inside children */
};

typedef VEC(struct open_region) open_stack;

/* Close the innermost open region: its exclusive time, and its time to its parent. */
static void close_top(struct sc_profile *p, struct sc_tree *tree, open_stack *open)
{
	struct open_region *o = &open->v[--open->n];
	double dur = (double)(o->iv.end - o->iv.start) * 1e-9;
	double self = dur > o->children ? dur - o->children : 0;

	sc_stats_add(&tree->nodes.v[o->node].excl, self);
	sc_stats_add(&p->merged.nodes.v[o->merged_node].excl, self);
	sc_stats_add(&sc_profile_func_flat(p, o->iv.func)->excl, self);
	if (!o->recursive)
		sc_profile_func_flat(p, o->iv.func)->gpu_launched += o->gpu;
	if (open->n)
		open->v[open->n - 1].gpu += o->gpu;
	if (p->pmc_n) {
		double *f = sc_profile_func_pmc_at(p, o->iv.func);

		for (unsigned k = 0; k < p->pmc_n; k++) {
			double own = o->pmc[k] - o->pmc_children[k];

			f[SC_PMC_MAX + k] += own > 0 ? own : 0;
			if (open->n)
				open->v[open->n - 1].pmc_children[k] += o->pmc[k];
			else
				p->pmc_total[k] += o->pmc[k];
		}
	}
	if (open->n)
		open->v[open->n - 1].children += dur;
}

static void build_process(struct sc_profile_set *set, struct sc_process *proc, struct collect *c)
{
	open_stack open = { 0 };
	struct sc_profile *p = NULL;
	struct sc_tree *tree = NULL;

	uint64_t pmc_lo = 0, pmc_hi = 0; /* the current thread's points */
	uint32_t prev_context = 0;

	sc_spill_reset(&c->v);
	c->counted.n = 0;
	c->pmc_open = false;
	c->pmc_reads = 0;
	sc_spill_table_free(&c->pmc);
	sc_spill_table_init(&c->pmc, sizeof(struct pmc_point), 0);
	sc_spill_table_free(&c->gpu_ns);
	sc_spill_table_init(&c->gpu_ns, sizeof(struct corr_ns), 0);
	for (size_t i = 0; i < proc->images.n; i++) {
		static const struct sc_timeline_ops ops = { .region_end = on_region_end,
							    .counter = on_counter,
							    .gpu_op = on_gpu_op,
							    .func_count = on_func_count,
							    .func_stats = on_func_stats };
		struct sc_timeline_stats stats = { 0 };

		sc_timeline_replay(set->model, proc->images.v[i], &ops, c, &stats);
	}
	sum_pmc(c);
	sum_gpu_ns(c);
	if (!c->v.count && !c->counted.n)
		return;
	throttle_note(set->model, proc, c);
	sc_spill_finish(&c->v);
	p = sc_profile_for(set, proc, SC_PROFILE_REGIONS);
	for (size_t i = 0; i < proc->images.n && !p->pmc_n && c->pmc.count; i++)
		if (proc->images.v[i]->pmc_n) {
			p->pmc_n = proc->images.v[i]->pmc_n;
			memcpy(p->pmc_names, proc->images.v[i]->pmc_names, sizeof(p->pmc_names));
		}
	for (const struct interval *iv; (iv = sc_spill_next(&c->v));) {
		bool other_stack = iv->context != prev_context;
		double dur = (double)(iv->end - iv->start) * 1e-9;
		struct open_region *top;
		bool recursive = false;

		prev_context = iv->context;

		if (!tree || tree->tid != iv->tid) {
			while (open.n)
				close_top(p, tree, &open);
			tree = sc_profile_thread_tree(p, iv->tid);
			pmc_lo = c->pmc.count ? pmc_thread_bound(c, iv->tid, false) : 0;
			pmc_hi = c->pmc.count ? pmc_thread_bound(c, iv->tid, true) : 0;
			if (!tree)
				continue; /* a thread the process does not list */
		} else if (other_stack) {
			while (open.n) /* another stack of the thread: its calls start at the root */
				close_top(p, tree, &open);
		}
		/* Regions that ended before this one starts, or that it overlaps without being
		 * inside, are done. */
		while (open.n && !(iv->start >= open.v[open.n - 1].iv.start &&
				   iv->end <= open.v[open.n - 1].iv.end))
			close_top(p, tree, &open);
		top = open.n ? &open.v[open.n - 1] : NULL;
		for (size_t k = 0; k < open.n; k++)
			recursive = recursive || open.v[k].iv.func == iv->func;
		/* The parent's nodes before the push (which may move the stack). */
		uint32_t parent = top ? top->node : 0, merged_parent = top ? top->merged_node : 0;
		bool outermost = !top;
		struct open_region *o = VEC_PUSH(&open);

		o->iv = *iv;
		o->recursive = recursive;
		o->gpu = gpu_of(c, iv);
		o->children = 0;
		memset(o->pmc_children, 0, sizeof(o->pmc_children));
		if (p->pmc_n) {
			double a[SC_PMC_MAX], b[SC_PMC_MAX];

			pmc_total_at(c, pmc_lo, pmc_hi, iv->start, a);
			pmc_total_at(c, pmc_lo, pmc_hi, iv->end, b);

			for (unsigned k = 0; k < SC_PMC_MAX; k++)
				o->pmc[k] = b[k] - a[k];
			if (!recursive) {
				double *f = sc_profile_func_pmc_at(p, iv->func);

				for (unsigned k = 0; k < p->pmc_n; k++)
					f[k] += o->pmc[k];
			}
		}
		o->node = sc_tree_child(tree, parent, iv->func);
		o->merged_node = sc_tree_child(&p->merged, merged_parent, iv->func);
		sc_stats_add(&tree->nodes.v[o->node].incl, dur);
		sc_stats_add(&p->merged.nodes.v[o->merged_node].incl, dur);
		if (!recursive) /* a function inside itself counts its time once */
			sc_stats_add(&sc_profile_func_flat(p, iv->func)->incl, dur);
		if (outermost) { /* the roots: the thread's time in regions */
			sc_stats_add(&tree->nodes.v[0].incl, dur);
			sc_stats_add(&p->merged.nodes.v[0].incl, dur);
			sc_stats_add(&p->total, dur);
		}
	}
	while (open.n && tree)
		close_top(p, tree, &open);
	replace_throttled_incl(p, c);
	for (size_t i = 0; i < c->counted.n; i++)
		add_counted(p, &c->counted.v[i]);
	VEC_FREE(&open);
}

void sc_region_profiles_build(struct sc_profile_set *set, struct sc_model *m)
{
	struct collect c = { .set = set };

	sc_spill_init(&c.v, sizeof(struct interval), by_thread_start, 0);
	sc_spill_init(&c.pmc_sort, sizeof(struct pmc_point), pmc_by_thread_time, 16u << 20);
	sc_spill_init(&c.gpu_sort, sizeof(struct corr_ns), by_corr, 16u << 20);
	sc_spill_table_init(&c.pmc, sizeof(struct pmc_point), 0);
	sc_spill_table_init(&c.gpu_ns, sizeof(struct corr_ns), 0);

	for (size_t i = 0; i < m->processes.n; i++) /* correlation ids are per process */
		build_process(set, m->processes.v[i], &c);
	sc_spill_free(&c.v);
	sc_spill_free(&c.pmc_sort);
	sc_spill_free(&c.gpu_sort);
	sc_spill_table_free(&c.pmc);
	sc_spill_table_free(&c.gpu_ns);
	VEC_FREE(&c.counted);
}
