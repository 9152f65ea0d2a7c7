/* SPDX-License-Identifier: MIT */
/*
 * Why was the GPU idle (gpu_idle.h). Each image is replayed once: its GPU ops, the regions
 * that can hold a launch back (synchronization, MPI, NCCL) or that launched work (those
 * with a correlation id), and its samples. Then, per GPU, the ops sorted by start make the
 * busy union and the gaps; each gap's launching thread is looked at from the end of the
 * previous op to the start of the next op's launching call.
 *
 * Samples are sparse: a gap of 50 us rarely holds one. Their classes are therefore pooled
 * over all the gaps of a GPU, and the time no region explains is shared out by the pooled
 * counts (wall-clock samples), or, with CPU-time samples, the time they account for (count
 * x period) by the counts and the rest as not running. Host compute and launch latency
 * right after a synchronization that drained the queue are the synchronization's cost:
 * without it, the next launches would have been queued behind the work.
 *
 * Memory: the ops, regions, samples and calls of an image go through the bounded sorter and
 * are kept in tables that spill to disk past a bound (spill_table.h), looked up by binary
 * search: they do not grow memory with the number of events. Sorts break ties by arrival.
 */
#include "gpu_idle.h"
#include "idle_classify.h"
#include "spill_sort.h"
#include "spill_table.h"
#include "timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A synchronization that ended this close before the gap began still waited for the op that
 * ended it (GPU and host timestamps are brought onto one clock within microseconds). */
#define SYNC_SLACK_NS 50000

enum region_class {
	RC_NONE,
	RC_SYNC,
	RC_MPI,
	RC_NCCL
};

/* The bound of each sorter while an image is replayed, and of each table in memory. */
#define SORT_MEM (8u << 20)
#define TABLE_MEM (4u << 20)

struct op {
	uint64_t start, end, corr;
	int32_t tid;
	uint32_t agent;
	uint64_t arrival;
};

struct reg {
	uint64_t start, end;
	int32_t tid;
	uint8_t cls;	  /* enum region_class */
	const char *name; /* interned */
	uint64_t comm;	  /* MPI communicator, or 0 */
	int peer;	  /* MPI point-to-point peer, or -1 */
	uint32_t seq;	  /* the n-th call of this name and communicator in the image */
	uint64_t reach;	  /* the latest end of the thread's regions up to this one */
	uint64_t arrival;
};

struct call {
	uint64_t start, end;
	int32_t tid;
};

/* A launching call by its correlation id (the last one of an id counts). */
struct corr_call {
	uint64_t corr, arrival;
	struct call call;
};

struct smp {
	uint64_t ts;
	int32_t tid;
	uint32_t stack;
	uint64_t arrival;
};

struct image_data {
	struct sc_image *img;
	struct sc_spill_table ops;   /* struct op, by agent, start */
	struct sc_spill_table regs;  /* struct reg, by thread, start */
	struct sc_spill_table smps;  /* struct smp, by thread, time */
	struct sc_spill_table calls; /* struct corr_call, by correlation id, one each */
};

struct ctx {
	struct sc_profile_set *set;
	struct image_data *d;
	bool gpu;			/* the image has GPU work: its samples and calls count */
	struct sc_spill_sort ops, regs; /* the image's, while it is replayed */
	struct sc_spill_sort smps, calls;
	uint64_t arrivals;
};

static const struct op *op_at(struct image_data *d, uint64_t i)
{
	return sc_spill_table_get(&d->ops, i);
}

static const struct reg *reg_at(struct image_data *d, uint64_t i)
{
	return sc_spill_table_get(&d->regs, i);
}

static const struct smp *smp_at(struct image_data *d, uint64_t i)
{
	return sc_spill_table_get(&d->smps, i);
}

const char *sc_idle_cause_key(unsigned cause)
{
	static const char *const keys[SC_IDLE_CAUSES] = {
		"gil_wait", "data_loader", "mpi",    "nccl",	  "synchronization", "host_compute",
		"io",	    "not_running", "launch", "unsampled", "unknown_launch",
	};

	return cause < SC_IDLE_CAUSES ? keys[cause] : "?";
}

const char *sc_idle_cause_text(unsigned cause)
{
	static const char *const texts[SC_IDLE_CAUSES] = {
		"launching thread waited for the GIL",
		"launching thread was in a data loader or queue get",
		"in an MPI call",
		"in an NCCL collective",
		"synchronization (waited in a CUDA synchronize, or launched after one drained the "
		"queue)",
		"host compute",
		"launching thread in I/O",
		"launching thread not running (blocked or off-CPU)",
		"in the launch call, or held on the device after it (launch latency, stream "
		"dependencies)",
		"not explained: no sample of the launching thread in the gaps",
		"not explained: the next operation's launching call or thread is unknown",
	};

	return cause < SC_IDLE_CAUSES ? texts[cause] : "?";
}

static enum region_class region_class(const struct sc_region_ev *r)
{
	if (!strcmp(r->category, "mpi"))
		return RC_MPI;
	if (!strncmp(r->name, "nccl", 4))
		return RC_NCCL;
	if (strstr(r->name, "ynchronize"))
		return RC_SYNC;
	return RC_NONE;
}

static void read_mpi_args(const struct sc_region_ev *r, struct reg *g)
{
	const char *p = r->args, *end = r->args + r->args_len, *name, *value;
	char type;

	g->peer = -1;
	while (p && r->nargs && (p = sc_region_arg_next(p, end, &type, &name, &value))) {
		if (!strcmp(name, "comm"))
			g->comm = strtoull(value, NULL, 10);
		else if (!strcmp(name, "peer"))
			g->peer = atoi(value);
	}
}

static void on_region_end(void *vctx, struct sc_image *img, struct sc_thread *t,
			  const struct sc_region_ev *r)
{
	struct ctx *c = vctx;
	struct image_data *d = c->d;
	enum region_class cls = region_class(r);

	(void)img;
	(void)d;
	if (r->corr_id && !cls && c->gpu) {
		struct corr_call *k = sc_spill_push(&c->calls);

		k->corr = r->corr_id;
		k->arrival = c->arrivals++;
		k->call.start = r->start;
		k->call.end = r->end;
		k->call.tid = t->tid;
	}
	if (cls && r->end >= r->start) {
		struct reg *g = sc_spill_push(&c->regs);

		g->arrival = c->arrivals++;
		g->start = r->start;
		g->end = r->end;
		g->tid = t->tid;
		g->cls = (uint8_t)cls;
		g->name = sc_strtab_intern(&c->set->model->strings, r->name);
		g->peer = -1;
		if (cls == RC_MPI) /* NCCL's communicators are pointers: n-th call and name */
			read_mpi_args(r, g);
	}
}

static void on_sample(void *vctx, struct sc_image *img, struct sc_thread *t, uint64_t ts,
		      uint64_t cpu_ns, uint32_t stack)
{
	struct ctx *c = vctx;
	unsigned kind = c->set->model->stacks.v[stack].kind;

	(void)img;
	(void)cpu_ns;
	if (!c->gpu || (kind != SC_SAMPLE_CPUTIME && kind != SC_SAMPLE_REALTIME))
		return;
	/* A thread sampled both ways is looked at through its wall-clock samples only. */
	if (kind == SC_SAMPLE_CPUTIME && t->samples[SC_SAMPLE_REALTIME])
		return;
	*(struct smp *)sc_spill_push(&c->smps) =
		(struct smp){ .ts = ts, .tid = t->tid, .stack = stack, .arrival = c->arrivals++ };
}

static bool op_is_work(uint16_t kind)
{
	return kind == SC_GPU_KERNEL || kind == SC_GPU_COPY || kind == SC_GPU_SET ||
	       kind == SC_GPU_GRAPH;
}

static void on_gpu_op(void *vctx, struct sc_image *img, struct sc_thread *t,
		      const struct sc_gpu_op_ev *ev)
{
	struct ctx *c = vctx;
	const struct sc_rec_gpu_op *g = ev->rec;
	struct op *o;

	if (!op_is_work(g->kind) || !g->start || g->end < g->start)
		return;
	o = sc_spill_push(&c->ops);
	o->arrival = c->arrivals++;
	o->start = g->start;
	o->end = g->end;
	o->corr = g->corr_id;
	o->agent = ev->agent ? ev->agent->id : 0;
	o->tid = t ? t->tid : g->tid ? g->tid : sc_image_corr_tid(img, g->corr_id);
}

static int by_agent_start(const void *a, const void *b)
{
	const struct op *x = a, *y = b;

	if (x->agent != y->agent)
		return x->agent < y->agent ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
}

static int by_tid_start(const void *a, const void *b)
{
	const struct reg *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
}

static int smp_by_tid_ts(const void *a, const void *b)
{
	const struct smp *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
}

static int call_by_corr(const void *a, const void *b)
{
	const struct corr_call *x = a, *y = b;

	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
}

/* The sorter's items, in order, into `table`. */
static void drain(struct sc_spill_sort *s, struct sc_spill_table *table)
{
	sc_spill_finish(s);
	for (const void *p; (p = sc_spill_next(s));)
		memcpy(sc_spill_table_push(table), p, s->size);
	sc_spill_table_seal(table);
	sc_spill_free(s);
}

/* The regions in (thread, start) order with the n-th call of each (name, communicator) of
 * the image, for matching across ranks, and how far the thread's regions reach. */
static void number_regions(struct sc_spill_sort *s, struct image_data *d)
{
	struct sc_hashmap seen;
	struct reg prev = { 0 };

	sc_hashmap_init(&seen);
	sc_spill_finish(s);
	for (const struct reg *p; (p = sc_spill_next(s));) {
		struct reg *g = sc_spill_table_push(&d->regs);
		uint64_t key;
		bool fresh, same = d->regs.count > 1 && prev.tid == p->tid;
		uint64_t *n;

		*g = *p;
		key = sc_hash_u64((uint64_t)(uintptr_t)g->name ^ sc_hash_u64(g->comm)) | 1;
		n = sc_hashmap_upsert(&seen, key, 0, &fresh);
		g->seq = (uint32_t)(*n)++;
		g->reach = same && prev.reach > g->end ? prev.reach : g->end;
		prev = *g;
	}
	sc_spill_table_seal(&d->regs);
	sc_spill_free(s);
	sc_hashmap_free(&seen);
}

/* The launching calls by correlation id, the last of each id (as a map would keep it). */
static void index_calls(struct sc_spill_sort *s, struct image_data *d)
{
	struct corr_call *last = NULL;

	sc_spill_finish(s);
	for (const struct corr_call *p; (p = sc_spill_next(s));) {
		if (!last || last->corr != p->corr)
			last = sc_spill_table_push(&d->calls);
		*last = *p;
	}
	sc_spill_table_seal(&d->calls);
	sc_spill_free(s);
}

static bool image_has_work(const struct sc_image *img)
{
	return img->gpu_ops[SC_GPU_KERNEL] || img->gpu_ops[SC_GPU_COPY] ||
	       img->gpu_ops[SC_GPU_SET] || img->gpu_ops[SC_GPU_GRAPH];
}

static void read_image(struct sc_profile_set *set, struct sc_image *img, struct image_data *d)
{
	static const struct sc_timeline_ops ops = { .region_end = on_region_end,
						    .sample = on_sample,
						    .gpu_op = on_gpu_op };
	struct ctx c = { .set = set, .d = d, .gpu = image_has_work(img) };
	struct sc_timeline_stats stats = { 0 };

	d->img = img;
	sc_spill_table_init(&d->ops, sizeof(struct op), TABLE_MEM);
	sc_spill_table_init(&d->regs, sizeof(struct reg), TABLE_MEM);
	sc_spill_table_init(&d->smps, sizeof(struct smp), TABLE_MEM);
	sc_spill_table_init(&d->calls, sizeof(struct corr_call), TABLE_MEM);
	sc_spill_init(&c.ops, sizeof(struct op), by_agent_start, SORT_MEM);
	sc_spill_init(&c.regs, sizeof(struct reg), by_tid_start, SORT_MEM);
	sc_spill_init(&c.smps, sizeof(struct smp), smp_by_tid_ts, SORT_MEM);
	sc_spill_init(&c.calls, sizeof(struct corr_call), call_by_corr, SORT_MEM);
	sc_timeline_replay(set->model, img, &ops, &c, &stats);
	drain(&c.ops, &d->ops);
	drain(&c.smps, &d->smps);
	index_calls(&c.calls, d);
	/* Calls are numbered by thread, in start order: a rank's MPI calls come from one
	 * thread in most programs (and in order from any, MPI_THREAD_SERIALIZED or less). */
	number_regions(&c.regs, d);
}

/* --- Per GPU -------------------------------------------------------------------------- */

/* Time no region explains, shared out at the end by the classes of the samples in it. */
struct pool {
	double spread; /* shared by sample counts */
	double off;    /* not running (CPU-time samples account for less) */
	double counts[SC_IDLE_CAUSES];
	uint64_t n;
};

struct latest {
	uint64_t start;
	int rank;
};

struct analysis {
	struct sc_profile_set *set;
	struct sc_idle_classifier *cls;
	struct image_data *all;
	size_t nimages;
	struct image_data *d;
	struct sc_idle_gpu *g;
	struct pool pools[2];	       /* [after a synchronization] */
	int32_t last_tid;	       /* the last launching thread known on this GPU */
	struct sc_hashmap stack_index; /* (cause << 32 | stack) + 1 -> index + 1 */
	struct sc_hashmap latest;      /* call_key -> index in latest_calls + 1 */
	VEC(struct latest) latest_calls;
};

static void add_named(void *vec, const char *name, double ns)
{
	VEC(struct sc_idle_named) *v = vec;

	for (size_t i = 0; i < v->n; i++)
		if (v->v[i].name == name) {
			v->v[i].ns += (uint64_t)(ns + 0.5);
			return;
		}
	*VEC_PUSH(v) = (struct sc_idle_named){ name, (uint64_t)(ns + 0.5) };
}

static void add_stack(struct analysis *a, unsigned cause, uint32_t stack)
{
	struct sc_idle_cause_stat *c = &a->g->causes[cause];
	uint64_t key = ((uint64_t)cause << 32 | stack) + 1;
	bool fresh;
	uint64_t *slot = sc_hashmap_upsert(&a->stack_index, key, 0, &fresh);

	if (fresh) {
		*VEC_PUSH(&c->stacks) = (struct sc_idle_stack){ stack, 0 };
		*slot = c->stacks.n;
	}
	c->stacks.v[*slot - 1].samples++;
}

static bool reg_before(const void *item, const void *key)
{
	const struct reg *r = item, *k = key;

	return r->tid < k->tid || (r->tid == k->tid && r->start < k->start);
}

static bool smp_before(const void *item, const void *key)
{
	const struct smp *s = item, *k = key;

	return s->tid < k->tid || (s->tid == k->tid && s->ts < k->ts);
}

/* Index of the first region of thread `tid` starting at or after `ts`. */
static uint64_t regs_lower_bound(struct image_data *d, int32_t tid, uint64_t ts)
{
	struct reg key = { .tid = tid, .start = ts };

	return sc_spill_table_lower_bound(&d->regs, &key, reg_before);
}

/* Index of the first sample of thread `tid` at or after `ts`. */
static uint64_t smps_lower_bound(struct image_data *d, int32_t tid, uint64_t ts)
{
	struct smp key = { .tid = tid, .ts = ts };

	return sc_spill_table_lower_bound(&d->smps, &key, smp_before);
}

static const char *rank_text(struct sc_profile_set *set, int rank)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "rank %d", rank);
	return sc_strtab_intern(&set->model->strings, buf);
}

static uint64_t call_key(const struct reg *r)
{
	return sc_hash_u64((uint64_t)(uintptr_t)r->name ^
			   sc_hash_u64(r->comm ^ sc_hash_u64(r->seq))) |
	       1;
}

/* The last rank to enter each MPI collective and NCCL call (by name, communicator and
 * n-th call), over every image that has a rank: the one the others waited for. */
static void index_latest(struct analysis *a)
{
	sc_hashmap_init(&a->latest);
	for (size_t i = 0; i < a->nimages; i++) {
		if (sc_image_rank(a->all[i].img) < 0)
			continue;
		for (uint64_t j = 0; j < a->all[i].regs.count; j++) {
			const struct reg *r = reg_at(&a->all[i], j);
			bool fresh;
			uint64_t *slot;

			if (r->cls == RC_SYNC || r->peer >= 0)
				continue;
			slot = sc_hashmap_upsert(&a->latest, call_key(r), 0, &fresh);
			if (fresh || r->start > a->latest_calls.v[*slot - 1].start) {
				if (fresh) {
					*VEC_PUSH(&a->latest_calls) = (struct latest){ 0, 0 };
					*slot = a->latest_calls.n;
				}
				a->latest_calls.v[*slot - 1] =
					(struct latest){ r->start, sc_image_rank(a->all[i].img) };
			}
		}
	}
}

/* Who an MPI or NCCL call waited for: its peer, or the last rank into the collective
 * (none when this rank was the last). */
static const char *slowest_peer(struct analysis *a, const struct reg *r)
{
	uint64_t *slot;
	const struct latest *l;

	if (r->peer >= 0)
		return rank_text(a->set, r->peer);
	slot = sc_hashmap_get(&a->latest, call_key(r));
	if (!slot)
		return NULL;
	l = &a->latest_calls.v[*slot - 1];
	return l->start > r->start && l->rank != sc_image_rank(a->d->img)
		       ? rank_text(a->set, l->rank)
		       : NULL;
}

static void region_cause(unsigned cls, unsigned *cause)
{
	*cause = cls == RC_MPI ? SC_IDLE_MPI : cls == RC_NCCL ? SC_IDLE_NCCL : SC_IDLE_SYNC;
}

/* Threads other than the launching one that held the GIL in [from, to]: `weight` of GIL
 * wait shared by their samples there. */
static void gil_holders(struct analysis *a, int32_t self, uint64_t from, uint64_t to, double weight)
{
	struct image_data *d = a->d;
	VEC(struct smp) held = { 0 };

	for (size_t t = 0; t < d->img->proc->threads.n; t++) {
		int32_t tid = d->img->proc->threads.v[t].tid;

		if (tid == self)
			continue;
		for (uint64_t i = smps_lower_bound(d, tid, from + 1); i < d->smps.count; i++) {
			const struct smp *s = smp_at(d, i);

			if (s->tid != tid || s->ts > to)
				break;
			if (sc_stack_gil(a->set, s->stack) == SC_GIL_HELD)
				*VEC_PUSH(&held) = *s;
		}
	}
	for (size_t i = 0; i < held.n; i++) {
		struct sc_thread *th = sc_process_thread(d->img->proc, held.v[i].tid);
		uint32_t *funcs;
		size_t n = sc_stack_path(a->set, &a->set->model->stacks.v[held.v[i].stack], &funcs,
					 NULL);
		char buf[160];

		snprintf(buf, sizeof(buf), "thread '%s' (%d) in %s", th ? th->name : "?",
			 (int)held.v[i].tid, n ? sc_func_of(a->set, funcs[n - 1])->name : "?");
		add_named(&a->g->causes[SC_IDLE_GIL].holders,
			  sc_strtab_intern(&a->set->model->strings, buf), weight / (double)held.n);
	}
	VEC_FREE(&held);
}

struct gap_view {
	uint64_t a, b, w1;  /* the gap, and the end of the window before the launch call */
	uint64_t busy_from; /* the start of the busy stretch that ended at a */
	int32_t tid;
	double local[SC_IDLE_CAUSES];
};

/* The launching thread's classified regions in the window: their time, and whether the
 * gap began in a synchronization. Returns the time they cover. */
static uint64_t gap_regions(struct analysis *a, struct gap_view *v, const char **drained_by)
{
	struct image_data *d = a->d;
	uint64_t i = regs_lower_bound(d, v->tid, v->w1);
	uint64_t covered = 0, until = v->w1; /* walking back: covered from `until` on */

	while (i-- > 0 && reg_at(d, i)->tid == v->tid) {
		const struct reg *r = reg_at(d, i);
		uint64_t s = r->start > v->a ? r->start : v->a, e = r->end < until ? r->end : until;
		unsigned cause;

		if (r->reach + SYNC_SLACK_NS < v->a)
			break; /* none of the thread's earlier regions reaches the gap */
		/* It waited for the GPU if it ended while the last busy stretch ran or after. */
		if (r->cls == RC_SYNC && r->start <= v->a && r->end + SYNC_SLACK_NS >= v->a &&
		    r->end > v->busy_from)
			*drained_by = r->name;
		if (e <= s)
			continue;
		region_cause(r->cls, &cause);
		covered += e - s;
		v->local[cause] += (double)(e - s);
		a->g->causes[cause].ns += (double)(e - s);
		add_named(&a->g->causes[cause].names, r->name, (double)(e - s));
		if (r->cls != RC_SYNC) {
			const char *peer = slowest_peer(a, r);

			if (peer)
				add_named(&a->g->causes[cause].peers, peer, (double)(e - s));
		}
		until = s;
	}
	return covered;
}

/* Whether sample time `ts` lies in one of the thread's classified regions. */
static bool in_region(struct image_data *d, int32_t tid, uint64_t ts)
{
	uint64_t i = regs_lower_bound(d, tid, ts);

	while (i-- > 0) {
		const struct reg *r = reg_at(d, i);

		if (r->tid != tid || r->reach < ts)
			break;
		if (r->end >= ts)
			return true;
	}
	return false;
}

/* The launching thread's samples in the window, for the time no region covers. After a
 * synchronization (`drained_by`), host compute and unsampled time are its cost. */
static void gap_samples(struct analysis *a, struct gap_view *v, uint64_t uncovered,
			const char *drained_by)
{
	bool after_sync = drained_by != NULL;
	struct image_data *d = a->d;
	struct sc_thread *th = sc_process_thread(d->img->proc, v->tid);
	bool wall = th && th->samples[SC_SAMPLE_REALTIME];
	uint64_t period = th ? th->period_ns[wall ? SC_SAMPLE_REALTIME : SC_SAMPLE_CPUTIME] : 0;
	struct pool *p = &a->pools[after_sync];
	uint64_t first = smps_lower_bound(d, v->tid, v->a + 1), n = 0;
	double on, weight;

	for (uint64_t i = first; i < d->smps.count; i++) {
		struct smp s = *smp_at(d, i);

		if (s.tid != v->tid || s.ts > v->w1)
			break;
		n += !in_region(d, v->tid, s.ts);
	}
	if (!period)
		period = 1000000;
	on = wall || !n ? (double)uncovered
			: (double)(n * period < uncovered ? n * period : uncovered);
	if (!wall && !n && uncovered >= period)
		on = 0; /* no CPU-time sample in a whole period: it was not running */
	p->spread += on;
	p->off += (double)uncovered - on;
	v->local[SC_IDLE_NOT_RUNNING] += (double)uncovered - on;
	weight = n ? on / (double)n : 0;
	for (uint64_t i = first; i < d->smps.count; i++) {
		struct smp s = *smp_at(d, i);
		struct sc_idle_class c;

		if (s.tid != v->tid || s.ts > v->w1)
			break;
		if (in_region(d, v->tid, s.ts))
			continue;
		c = sc_idle_classify(a->cls, s.stack);
		if (after_sync && c.cause == SC_IDLE_COMPUTE) {
			c.cause = SC_IDLE_SYNC;
			c.name = drained_by;
		}
		p->counts[c.cause]++;
		p->n++;
		v->local[c.cause] += weight;
		add_named(&a->g->causes[c.cause].names, c.name, weight);
		add_stack(a, c.cause, s.stack);
	}
	if (v->local[SC_IDLE_GIL] > 0)
		gil_holders(a, v->tid, v->a, v->w1, v->local[SC_IDLE_GIL]);
	if (!n && on > 0)
		v->local[after_sync ? SC_IDLE_SYNC : SC_IDLE_UNSAMPLED] += on;
	if (!n && on > 0 && after_sync)
		add_named(&a->g->causes[SC_IDLE_SYNC].names, drained_by, on);
}

/* The thread that launched `next`: its call's, the op's, else the last one known on this
 * GPU (the CUDA tracer may not see a launch made through the driver API). */
static int32_t launching_thread(struct analysis *a, const struct call *call, const struct op *next)
{
	int32_t tid = call ? call->tid : next->tid;

	if (tid)
		a->last_tid = tid;
	return tid ? tid : a->last_tid;
}

static bool call_before(const void *item, const void *key)
{
	return ((const struct corr_call *)item)->corr < *(const uint64_t *)key;
}

/* The launching call of correlation id `corr`, into `out`; NULL when there is none. */
static const struct call *call_of(struct image_data *d, uint64_t corr, struct call *out)
{
	uint64_t i = corr ? sc_spill_table_lower_bound(&d->calls, &corr, call_before) : 0;
	const struct corr_call *k;

	if (!corr || i == d->calls.count)
		return NULL;
	k = sc_spill_table_get(&d->calls, i);
	if (k->corr != corr)
		return NULL;
	*out = k->call;
	return out;
}

static void explain_gap(struct analysis *a, uint64_t busy_from, uint64_t gap_a,
			const struct op *next)
{
	struct image_data *d = a->d;
	struct call found;
	const struct call *call = call_of(d, next->corr, &found);
	struct gap_view v = { .busy_from = busy_from,
			      .a = gap_a,
			      .b = next->start,
			      .tid = launching_thread(a, call, next) };
	struct sc_idle_gap *gap = sc_spill_table_push(a->g->gaps);
	const char *drained_by = NULL;
	unsigned best = SC_IDLE_NO_LAUNCH, launch;
	uint64_t covered;

	gap->start = v.a;
	gap->end = v.b;
	gap->corr = next->corr;
	gap->tid = v.tid;
	gap->call_start = call ? call->start : 0;
	if (!v.tid) {
		a->g->causes[SC_IDLE_NO_LAUNCH].ns += (double)(v.b - v.a);
		a->g->causes[SC_IDLE_NO_LAUNCH].intervals++;
		gap->cause = SC_IDLE_NO_LAUNCH;
		return;
	}
	v.w1 = call && call->start < v.b ? (call->start > v.a ? call->start : v.a) : v.b;
	covered = gap_regions(a, &v, &drained_by);
	if (v.w1 > v.a)
		gap_samples(a, &v, v.w1 - v.a - covered, drained_by);
	/* The launch latency too is exposed by a synchronization that drained the queue. */
	launch = drained_by ? SC_IDLE_SYNC : SC_IDLE_LAUNCH;
	if (v.b > v.w1) {
		v.local[launch] += (double)(v.b - v.w1);
		a->g->causes[launch].ns += (double)(v.b - v.w1);
		if (drained_by)
			add_named(&a->g->causes[launch].names, drained_by, (double)(v.b - v.w1));
	}
	for (unsigned c = 0; c < SC_IDLE_CAUSES; c++)
		if (best == SC_IDLE_NO_LAUNCH || v.local[c] > v.local[best])
			best = c;
	gap->cause = (uint8_t)best;
	a->g->causes[best].intervals++;
}

/* Share each pool's time out by its samples' classes (see the comment at the top). */
static void settle_pools(struct analysis *a)
{
	for (int after_sync = 0; after_sync < 2; after_sync++) {
		struct pool *p = &a->pools[after_sync];

		a->g->causes[SC_IDLE_NOT_RUNNING].ns += p->off;
		if (!p->n) {
			a->g->causes[after_sync ? SC_IDLE_SYNC : SC_IDLE_UNSAMPLED].ns += p->spread;
			continue;
		}
		for (unsigned c = 0; c < SC_IDLE_CAUSES; c++)
			a->g->causes[c].ns += p->spread * p->counts[c] / (double)p->n;
	}
}

static int named_desc(const void *x, const void *y)
{
	const struct sc_idle_named *a = x, *b = y;

	return a->ns < b->ns ? 1 : a->ns > b->ns ? -1 : 0;
}

static int stack_desc(const void *x, const void *y)
{
	const struct sc_idle_stack *a = x, *b = y;

	return a->samples < b->samples ? 1 : a->samples > b->samples ? -1 : 0;
}

static void sort_details(struct sc_idle_gpu *g)
{
	for (unsigned c = 0; c < SC_IDLE_CAUSES; c++) {
		struct sc_idle_cause_stat *s = &g->causes[c];

		VEC_SORT(&s->names, named_desc);
		VEC_SORT(&s->peers, named_desc);
		VEC_SORT(&s->holders, named_desc);
		VEC_SORT(&s->stacks, stack_desc);
	}
}

/* One GPU's ops, those of the image from `from` on with its agent: the busy union, then
 * each gap. Returns the index after its last op. */
static uint64_t analyze_gpu(struct analysis *a, struct sc_idle_report *r, uint64_t from)
{
	struct image_data *d = a->d;
	struct op first = *op_at(d, from);
	const struct sc_gpu_agent *agent = sc_image_agent(d->img, first.agent);
	struct sc_idle_gpu *g = VEC_PUSH(&r->gpus);
	uint64_t seg = first.start, end = first.end, i;

	g->img = d->img;
	g->agent = first.agent;
	g->name = agent ? agent->name : NULL;
	g->rank = sc_image_rank(d->img);
	g->first = seg;
	g->gaps = sc_xcalloc(1, sizeof(*g->gaps));
	sc_spill_table_init(g->gaps, sizeof(struct sc_idle_gap), TABLE_MEM);
	a->g = g;
	memset(a->pools, 0, sizeof(a->pools));
	a->last_tid = 0;
	sc_hashmap_init(&a->stack_index);
	for (i = from + 1; i < d->ops.count; i++) {
		struct op op = *op_at(d, i);

		if (op.agent != first.agent)
			break;
		if (op.start <= end) {
			end = op.end > end ? op.end : end;
			continue;
		}
		g->busy_ns += end - seg;
		g->intervals++;
		if (op.start - end < r->threshold_ns) {
			g->short_intervals++;
			g->short_ns += op.start - end;
		} else {
			explain_gap(a, seg, end, &op);
		}
		seg = op.start;
		end = op.end;
	}
	g->ops = i - from;
	sc_spill_table_seal(g->gaps);
	g->busy_ns += end - seg;
	g->last = end;
	g->idle_ns = g->last - g->first - g->busy_ns;
	settle_pools(a);
	sort_details(g);
	sc_hashmap_free(&a->stack_index);
	return i;
}

void sc_idle_analyze(struct sc_idle_report *r, struct sc_profile_set *set, uint64_t threshold_ns)
{
	struct sc_model *m = set->model;
	struct image_data *all = sc_xcalloc(m->images.n + 1, sizeof(*all));
	struct sc_idle_classifier cls = { .set = set };
	struct analysis a = { .set = set, .cls = &cls, .all = all, .nimages = m->images.n };

	memset(r, 0, sizeof(*r));
	r->threshold_ns = threshold_ns;
	for (size_t i = 0; i < m->images.n; i++)
		read_image(set, m->images.v[i], &all[i]);
	index_latest(&a);
	for (size_t i = 0; i < m->images.n; i++) {
		struct image_data *d = &all[i];

		a.d = d;
		for (uint64_t from = 0; from < d->ops.count;)
			from = analyze_gpu(&a, r, from);
	}
	for (size_t i = 0; i < m->images.n; i++) {
		sc_spill_table_free(&all[i].ops);
		sc_spill_table_free(&all[i].regs);
		sc_spill_table_free(&all[i].smps);
		sc_spill_table_free(&all[i].calls);
	}
	sc_idle_classifier_free(&cls);
	sc_hashmap_free(&a.latest);
	VEC_FREE(&a.latest_calls);
	free(all);
}

void sc_idle_free(struct sc_idle_report *r)
{
	for (size_t i = 0; i < r->gpus.n; i++) {
		struct sc_idle_gpu *g = &r->gpus.v[i];

		for (unsigned c = 0; c < SC_IDLE_CAUSES; c++) {
			VEC_FREE(&g->causes[c].names);
			VEC_FREE(&g->causes[c].peers);
			VEC_FREE(&g->causes[c].holders);
			VEC_FREE(&g->causes[c].stacks);
		}
		if (g->gaps)
			sc_spill_table_free(g->gaps);
		free(g->gaps);
	}
	VEC_FREE(&r->gpus);
}

unsigned sc_idle_ranked(const struct sc_idle_gpu *g, unsigned order[SC_IDLE_CAUSES])
{
	unsigned n = 0;

	for (unsigned c = 0; c < SC_IDLE_CAUSES; c++)
		if (g->causes[c].ns >= 0.5)
			order[n++] = c;
	for (unsigned i = 1; i < n; i++) /* insertion sort: a dozen entries */
		for (unsigned j = i; j > 0 && g->causes[order[j]].ns > g->causes[order[j - 1]].ns;
		     j--) {
			unsigned t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	return n;
}

bool sc_idle_has_work(const struct sc_model *m)
{
	for (size_t i = 0; i < m->images.n; i++)
		if (image_has_work(m->images.v[i]))
			return true;
	return false;
}
