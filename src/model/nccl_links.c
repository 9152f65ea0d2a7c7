/* SPDX-License-Identifier: MIT */
/*
 * Which GPU operations carried each NCCL call (see nccl_links.h). An operation's launch is
 * the host call of its correlation id (a CUDA API region); the NCCL call whose region holds
 * that launch on the same thread carried it (a one-rank communicator copies inside the
 * call). A launch inside the plugin's ncclKernelLaunch region instead belongs to every call
 * of that launch's group (the same parent event). NCCL's own kernels whose launching driver
 * call was not traced are taken in launch order (correlation ids grow with each call) and
 * matched to the ncclKernelLaunch regions in time order, never one before its launch.
 *
 * The host calls with a correlation id and the GPU ops (one each per launch) go through
 * the bounded sorter, the calls on into a spilled table for lookups by id: they do not
 * grow memory with the number of launches.
 */
#include "nccl_links.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vec.h"
#include "model.h"
#include "spill_sort.h"
#include "spill_table.h"
#include "timeline.h"

#define SORT_MEM (8u << 20) /* each sorter's bound */

struct call {
	int32_t tid;
	uint64_t start, end, id, parent;
};

struct launch_point {
	uint64_t corr, ts, seq;
};

struct op {
	uint64_t corr, start, seq;
	uint32_t name_id;
	uint16_t kind;
};

struct link {
	uint32_t call; /* index in calls, sorted */
	uint64_t corr;
	uint32_t id;
};

struct sc_nccl_links {
	VEC(struct call) calls;	   /* the calls (category nccl), by (tid, start) once sorted */
	VEC(struct call) launches; /* ncclKernelLaunch regions, by (tid, start) once sorted */
	struct sc_spill_sort point_sort; /* host calls with a correlation id, by corr */
	struct sc_spill_table points;	 /* the same, sorted, for lookups */
	struct sc_spill_sort ops;	 /* kernels, copies and sets, by corr */
	uint64_t arrivals;
	VEC(struct link) by_call; /* the links, by call: id = index */
	VEC(uint32_t) call_ids;	  /* by_call's ids, for the answers */
	VEC(struct link) by_corr; /* the links again, by corr */
	VEC(uint32_t) corr_ids;
	bool done;
};

/* By correlation id, then arrival. */
static int point_by_corr(const void *a, const void *b)
{
	const struct launch_point *x = a, *y = b;

	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int op_by_corr(const void *a, const void *b)
{
	const struct op *x = a, *y = b;

	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static struct sc_nccl_links *links_of(struct sc_image *img)
{
	struct sc_nccl_links *l = img->nccl_links;

	if (!l) {
		l = img->nccl_links = sc_xcalloc(1, sizeof(*img->nccl_links));
		sc_spill_init(&l->point_sort, sizeof(struct launch_point), point_by_corr, SORT_MEM);
		sc_spill_init(&l->ops, sizeof(struct op), op_by_corr, SORT_MEM);
		sc_spill_table_init(&l->points, sizeof(struct launch_point), 0);
	}
	return l;
}

static uint64_t arg_u64(const char *args, uint32_t len, const char *want)
{
	const char *p = args, *end = args + len, *name, *value;
	char type;

	while ((p = sc_region_arg_next(p, end, &type, &name, &value)))
		if (!strcmp(name, want))
			return strtoull(value, NULL, 10);
	return 0;
}

void sc_nccl_links_region(struct sc_image *img, int32_t tid, const struct sc_rec_region *r,
			  uint64_t end, const char *text)
{
	const char *name = text, *category = text + r->name_len;
	const char *args = category + r->cat_len;
	struct call *c;

	if (r->corr_id) {
		struct sc_nccl_links *l = links_of(img);

		*(struct launch_point *)sc_spill_push(&l->point_sort) =
			(struct launch_point){ r->corr_id, r->ts, l->arrivals++ };
	}
	if (!r->cat_len || !end)
		return;
	if (!strcmp(category, "nccl") && strcmp(name, "ncclGroup"))
		c = VEC_PUSH(&links_of(img)->calls);
	else if (!strcmp(category, "nccl_task") && !strcmp(name, "ncclKernelLaunch"))
		c = VEC_PUSH(&links_of(img)->launches);
	else
		return;
	*c = (struct call){ .tid = tid,
			    .start = r->ts,
			    .end = end,
			    .id = arg_u64(args, r->args_len, "id"),
			    .parent = arg_u64(args, r->args_len, "parent") };
}

void sc_nccl_links_op(struct sc_image *img, const struct sc_rec_gpu_op *op)
{
	struct sc_nccl_links *l;

	if (!op->corr_id ||
	    (op->kind != SC_GPU_KERNEL && op->kind != SC_GPU_COPY && op->kind != SC_GPU_SET))
		return;
	l = links_of(img);
	*(struct op *)sc_spill_push(&l->ops) =
		(struct op){ op->corr_id, op->start, l->arrivals++, op->name_id, op->kind };
}

void sc_nccl_links_free(struct sc_nccl_links *l)
{
	if (!l)
		return;
	VEC_FREE(&l->calls);
	VEC_FREE(&l->launches);
	sc_spill_free(&l->point_sort);
	sc_spill_table_free(&l->points);
	sc_spill_free(&l->ops);
	VEC_FREE(&l->by_call);
	VEC_FREE(&l->call_ids);
	VEC_FREE(&l->by_corr);
	VEC_FREE(&l->corr_ids);
	free(l);
}

/* ---- working the links out ---- */

static int by_tid_start(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int link_by_call(const void *a, const void *b)
{
	const struct link *x = a, *y = b;

	if (x->call != y->call)
		return x->call < y->call ? -1 : 1;
	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static int link_by_corr(const void *a, const void *b)
{
	const struct link *x = a, *y = b;

	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return x->call < y->call ? -1 : x->call > y->call;
}

/* The region of `v` (sorted by tid, start) on `tid` that holds `ts`, or -1. */
static long holding(const struct call *v, size_t n, int32_t tid, uint64_t ts)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the first region after (tid, ts) */
		size_t mid = (lo + hi) / 2;

		if (v[mid].tid < tid || (v[mid].tid == tid && v[mid].start <= ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && v[lo - 1].tid == tid && v[lo - 1].end >= ts)
		return (long)lo - 1;
	return -1;
}

static bool point_before(const void *item, const void *key)
{
	return ((const struct launch_point *)item)->corr < *(const uint64_t *)key;
}

/* The (first) host call of correlation id `corr`, into `out`; NULL when there is none. */
static const struct launch_point *point_of(struct sc_nccl_links *l, uint64_t corr,
					   struct launch_point *out)
{
	uint64_t i = sc_spill_table_lower_bound(&l->points, &corr, point_before);

	if (i == l->points.count)
		return NULL;
	*out = *(const struct launch_point *)sc_spill_table_get(&l->points, i);
	return out->corr == corr ? out : NULL;
}

static void add_link(struct sc_nccl_links *l, size_t call, uint64_t corr)
{
	*VEC_PUSH(&l->by_call) = (struct link){ .call = (uint32_t)call, .corr = corr };
}

/* Every call of the group that `launch` launched for. */
static void link_group(struct sc_nccl_links *l, const struct call *launch, uint64_t corr)
{
	for (size_t i = 0; i < l->calls.n; i++)
		if (launch->parent && l->calls.v[i].parent == launch->parent)
			add_link(l, i, corr);
}

static bool nccl_kernel(const struct sc_image *img, const struct op *o)
{
	const char *name = o->kind == SC_GPU_KERNEL ? sc_image_name(img, o->name_id) : NULL;

	return name && (strstr(name, "ncclDevKernel") || strstr(name, "ncclKernel"));
}

static int launch_by_start(const void *a, const void *b)
{
	const struct call *x = *(const struct call *const *)a, *y = *(const struct call *const *)b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* NCCL kernels without a traced launch, in launch order, with the launch regions no traced
 * launch fell in, in time order. */
static void link_untraced(struct sc_nccl_links *l, const struct op *pending, size_t npending,
			  const bool *launch_used)
{
	const struct call **order = sc_xcalloc(l->launches.n ? l->launches.n : 1, sizeof(*order));
	size_t n = 0, k = 0;

	for (size_t i = 0; i < l->launches.n; i++)
		if (!launch_used[i])
			order[n++] = &l->launches.v[i];
	qsort(order, n, sizeof(*order), launch_by_start);
	for (size_t i = 0; i < npending && k < n; i++) {
		if (order[k]->start > pending[i].start)
			continue; /* launched before any launch region: not one of these */
		link_group(l, order[k++], pending[i].corr);
	}
	free(order);
}

static void work_out(struct sc_image *img, struct sc_nccl_links *l)
{
	VEC(struct op) pending = { 0 }; /* NCCL kernels without a traced launch */
	bool *launch_used;

	l->done = true;
	if (!l->calls.n) { /* no NCCL call: the launches are of no use */
		sc_spill_free(&l->point_sort);
		sc_spill_free(&l->ops);
		return;
	}
	VEC_SORT(&l->calls, by_tid_start);
	VEC_SORT(&l->launches, by_tid_start);
	sc_spill_finish(&l->point_sort);
	for (const void *p; (p = sc_spill_next(&l->point_sort));)
		memcpy(sc_spill_table_push(&l->points), p, sizeof(struct launch_point));
	sc_spill_table_seal(&l->points);
	sc_spill_free(&l->point_sort);
	sc_spill_finish(&l->ops);
	launch_used = sc_xcalloc(l->launches.n ? l->launches.n : 1, sizeof(*launch_used));
	for (const struct op *o; (o = sc_spill_next(&l->ops));) {
		struct launch_point found;
		const struct launch_point *p = point_of(l, o->corr, &found);
		int32_t tid = sc_image_corr_tid(img, o->corr);
		long c = p ? holding(l->calls.v, l->calls.n, tid, p->ts) : -1;
		long g = p && c < 0 ? holding(l->launches.v, l->launches.n, tid, p->ts) : -1;

		if (c >= 0) {
			add_link(l, (size_t)c, o->corr);
		} else if (g >= 0) {
			launch_used[g] = true;
			link_group(l, &l->launches.v[g], o->corr);
		} else if (!p && nccl_kernel(img, o)) {
			*VEC_PUSH(&pending) = *o;
		}
	}
	sc_spill_free(&l->ops);
	link_untraced(l, pending.v, pending.n, launch_used);
	VEC_FREE(&pending);
	free(launch_used);
	VEC_SORT(&l->by_call, link_by_call);
	for (size_t i = 0; i < l->by_call.n; i++) {
		l->by_call.v[i].id = (uint32_t)i;
		*VEC_PUSH(&l->call_ids) = (uint32_t)i;
		*VEC_PUSH(&l->by_corr) = l->by_call.v[i];
	}
	VEC_SORT(&l->by_corr, link_by_corr);
	for (size_t i = 0; i < l->by_corr.n; i++)
		*VEC_PUSH(&l->corr_ids) = l->by_corr.v[i].id;
}

static struct sc_nccl_links *ready(struct sc_image *img)
{
	struct sc_nccl_links *l = img->nccl_links;

	if (l && !l->done)
		work_out(img, l);
	return l && l->by_call.n ? l : NULL;
}

size_t sc_nccl_call_links(struct sc_image *img, int32_t tid, uint64_t start, const uint32_t **ids)
{
	struct sc_nccl_links *l = ready(img);
	long c = l ? holding(l->calls.v, l->calls.n, tid, start) : -1;
	size_t lo = 0, hi, first;

	if (c < 0 || l->calls.v[c].start != start)
		return 0;
	hi = l->by_call.n;
	while (lo < hi) { /* the first link of call c */
		size_t mid = (lo + hi) / 2;

		if (l->by_call.v[mid].call < (uint32_t)c)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	while (lo < l->by_call.n && l->by_call.v[lo].call == (uint32_t)c)
		lo++;
	*ids = l->call_ids.v + first;
	return lo - first;
}

size_t sc_nccl_op_links(struct sc_image *img, uint64_t corr, const uint32_t **ids)
{
	struct sc_nccl_links *l = ready(img);
	size_t lo = 0, hi, first;

	if (!l || !corr)
		return 0;
	hi = l->by_corr.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (l->by_corr.v[mid].corr < corr)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	while (lo < l->by_corr.n && l->by_corr.v[lo].corr == corr)
		lo++;
	*ids = l->corr_ids.v + first;
	return lo - first;
}
