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
 */
#include "gpu_idle.h"
#include "idle_classify.h"
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

struct op {
	uint64_t start, end, corr;
	int32_t tid;
	uint32_t agent;
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
};

struct call {
	uint64_t start, end;
	int32_t tid;
};

struct smp {
	uint64_t ts;
	int32_t tid;
	uint32_t stack;
};

struct image_data {
	struct sc_image *img;
	VEC(struct op) ops;
	VEC(struct reg) regs; /* sorted by thread, start */
	VEC(struct smp) smps; /* sorted by thread, time */
	VEC(struct call) calls;
	struct sc_hashmap corr_call; /* correlation id -> index in calls + 1 */
};

struct ctx {
	struct sc_profile_set *set;
	struct image_data *d;
};

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
	if (r->corr_id && !cls) {
		struct call *k = VEC_PUSH(&d->calls);
		bool fresh;

		k->start = r->start;
		k->end = r->end;
		k->tid = t->tid;
		*sc_hashmap_upsert(&d->corr_call, r->corr_id, d->calls.n, &fresh) = d->calls.n;
	}
	if (cls && r->end >= r->start) {
		struct reg *g = VEC_PUSH(&d->regs);

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
	if (kind != SC_SAMPLE_CPUTIME && kind != SC_SAMPLE_REALTIME)
		return;
	/* A thread sampled both ways is looked at through its wall-clock samples only. */
	if (kind == SC_SAMPLE_CPUTIME && t->samples[SC_SAMPLE_REALTIME])
		return;
	*VEC_PUSH(&c->d->smps) = (struct smp){ .ts = ts, .tid = t->tid, .stack = stack };
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
	o = VEC_PUSH(&c->d->ops);
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
	return x->start < y->start ? -1 : x->start > y->start;
}

static int by_tid_start(const void *a, const void *b)
{
	const struct reg *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int smp_by_tid_ts(const void *a, const void *b)
{
	const struct smp *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* The n-th call of each (name, communicator) of the image, for matching across ranks. */
static void number_calls(struct image_data *d)
{
	struct sc_hashmap seen;

	sc_hashmap_init(&seen);
	for (size_t i = 0; i < d->regs.n; i++) {
		struct reg *g = &d->regs.v[i];
		uint64_t key = sc_hash_u64((uint64_t)(uintptr_t)g->name ^ sc_hash_u64(g->comm)) | 1;
		bool fresh;
		uint64_t *n = sc_hashmap_upsert(&seen, key, 0, &fresh);

		g->seq = (uint32_t)(*n)++;
	}
	sc_hashmap_free(&seen);
}

static void read_image(struct sc_profile_set *set, struct sc_image *img, struct image_data *d)
{
	static const struct sc_timeline_ops ops = { .region_end = on_region_end,
						    .sample = on_sample,
						    .gpu_op = on_gpu_op };
	struct ctx c = { .set = set, .d = d };
	struct sc_timeline_stats stats = { 0 };

	d->img = img;
	sc_hashmap_init(&d->corr_call);
	sc_timeline_replay(set->model, img, &ops, &c, &stats);
	VEC_SORT(&d->ops, by_agent_start);
	VEC_SORT(&d->smps, smp_by_tid_ts);
	/* Calls are numbered by thread, in start order: a rank's MPI calls come from one
	 * thread in most programs (and in order from any, MPI_THREAD_SERIALIZED or less). */
	VEC_SORT(&d->regs, by_tid_start);
	number_calls(d);
	for (size_t i = 0; i < d->regs.n; i++) {
		struct reg *g = &d->regs.v[i];
		bool same = i && d->regs.v[i - 1].tid == g->tid;

		g->reach =
			same && d->regs.v[i - 1].reach > g->end ? d->regs.v[i - 1].reach : g->end;
	}
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

/* Index of the first element of thread `tid` at or after `ts` in a (tid, time) array. */
#define LOWER_BOUND(vec, field, tid_, ts_)                                                  \
	({                                                                                  \
		size_t lo_ = 0, hi_ = (vec)->n;                                             \
		while (lo_ < hi_) {                                                         \
			size_t mid_ = (lo_ + hi_) / 2;                                      \
			if ((vec)->v[mid_].tid < (tid_) ||                                  \
			    ((vec)->v[mid_].tid == (tid_) && (vec)->v[mid_].field < (ts_))) \
				lo_ = mid_ + 1;                                             \
			else                                                                \
				hi_ = mid_;                                                 \
		}                                                                           \
		lo_;                                                                        \
	})

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
		for (size_t j = 0; j < a->all[i].regs.n; j++) {
			const struct reg *r = &a->all[i].regs.v[j];
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
		for (size_t i = LOWER_BOUND(&d->smps, ts, tid, from + 1);
		     i < d->smps.n && d->smps.v[i].tid == tid && d->smps.v[i].ts <= to; i++)
			if (sc_stack_gil(a->set, d->smps.v[i].stack) == SC_GIL_HELD)
				*VEC_PUSH(&held) = d->smps.v[i];
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
	size_t i = LOWER_BOUND(&d->regs, start, v->tid, v->w1);
	uint64_t covered = 0, until = v->w1; /* walking back: covered from `until` on */

	while (i-- > 0 && d->regs.v[i].tid == v->tid) {
		const struct reg *r = &d->regs.v[i];
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
static bool in_region(const struct image_data *d, int32_t tid, uint64_t ts)
{
	size_t i = LOWER_BOUND(&d->regs, start, tid, ts);

	while (i-- > 0 && d->regs.v[i].tid == tid) {
		if (d->regs.v[i].reach < ts)
			break;
		if (d->regs.v[i].end >= ts)
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
	size_t first = LOWER_BOUND(&d->smps, ts, v->tid, v->a + 1), n = 0;
	double on, weight;

	for (size_t i = first; i < d->smps.n && d->smps.v[i].tid == v->tid; i++) {
		if (d->smps.v[i].ts > v->w1)
			break;
		n += !in_region(d, v->tid, d->smps.v[i].ts);
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
	for (size_t i = first; i < d->smps.n && d->smps.v[i].tid == v->tid; i++) {
		const struct smp *s = &d->smps.v[i];
		struct sc_idle_class c;

		if (s->ts > v->w1)
			break;
		if (in_region(d, v->tid, s->ts))
			continue;
		c = sc_idle_classify(a->cls, s->stack);
		if (after_sync && c.cause == SC_IDLE_COMPUTE) {
			c.cause = SC_IDLE_SYNC;
			c.name = drained_by;
		}
		p->counts[c.cause]++;
		p->n++;
		v->local[c.cause] += weight;
		add_named(&a->g->causes[c.cause].names, c.name, weight);
		add_stack(a, c.cause, s->stack);
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

static void explain_gap(struct analysis *a, uint64_t busy_from, uint64_t gap_a,
			const struct op *next)
{
	struct image_data *d = a->d;
	uint64_t *slot = next->corr ? sc_hashmap_get(&d->corr_call, next->corr) : NULL;
	const struct call *call = slot ? &d->calls.v[*slot - 1] : NULL;
	struct gap_view v = { .busy_from = busy_from,
			      .a = gap_a,
			      .b = next->start,
			      .tid = launching_thread(a, call, next) };
	struct sc_idle_gap *gap = VEC_PUSH(&a->g->gaps);
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

/* One GPU's ops, ops[from, to): the busy union, then each gap. */
static void analyze_gpu(struct analysis *a, struct sc_idle_report *r, size_t from, size_t to)
{
	struct image_data *d = a->d;
	const struct op *ops = d->ops.v;
	const struct sc_gpu_agent *agent = sc_image_agent(d->img, ops[from].agent);
	struct sc_idle_gpu *g = VEC_PUSH(&r->gpus);
	uint64_t seg = ops[from].start, end = ops[from].end;

	g->img = d->img;
	g->agent = ops[from].agent;
	g->name = agent ? agent->name : NULL;
	g->rank = sc_image_rank(d->img);
	g->first = seg;
	g->ops = to - from;
	a->g = g;
	memset(a->pools, 0, sizeof(a->pools));
	a->last_tid = 0;
	sc_hashmap_init(&a->stack_index);
	for (size_t i = from + 1; i < to; i++) {
		if (ops[i].start <= end) {
			end = ops[i].end > end ? ops[i].end : end;
			continue;
		}
		g->busy_ns += end - seg;
		g->intervals++;
		if (ops[i].start - end < r->threshold_ns) {
			g->short_intervals++;
			g->short_ns += ops[i].start - end;
		} else {
			explain_gap(a, seg, end, &ops[i]);
		}
		seg = ops[i].start;
		end = ops[i].end;
	}
	g->busy_ns += end - seg;
	g->last = end;
	g->idle_ns = g->last - g->first - g->busy_ns;
	settle_pools(a);
	sort_details(g);
	sc_hashmap_free(&a->stack_index);
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
		for (size_t from = 0, to; from < d->ops.n; from = to) {
			for (to = from + 1;
			     to < d->ops.n && d->ops.v[to].agent == d->ops.v[from].agent;)
				to++;
			analyze_gpu(&a, r, from, to);
		}
	}
	for (size_t i = 0; i < m->images.n; i++) {
		VEC_FREE(&all[i].ops);
		VEC_FREE(&all[i].regs);
		VEC_FREE(&all[i].smps);
		VEC_FREE(&all[i].calls);
		sc_hashmap_free(&all[i].corr_call);
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
		VEC_FREE(&g->gaps);
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
	for (size_t i = 0; i < m->images.n; i++) {
		const struct sc_image *img = m->images.v[i];

		if (img->gpu_ops[SC_GPU_KERNEL] || img->gpu_ops[SC_GPU_COPY] ||
		    img->gpu_ops[SC_GPU_SET] || img->gpu_ops[SC_GPU_GRAPH])
			return true;
	}
	return false;
}
