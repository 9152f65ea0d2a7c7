/* SPDX-License-Identifier: MIT */
/*
 * The NCCL line of the end-of-run summary: the calls and bytes per collective kind, from the
 * regions libsyscope-nccl.so wrote (src/gpu/nccl/nccl_events.h). The calls are the regions of
 * category nccl; where there are none (NCCL's interface before v5) the launched tasks. Read
 * by a replay of the images that hold regions, only when NCCL was traced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/timeline.h"
#include "summary.h"

#define MAX_KINDS 16

struct kind_total {
	char kind[32];
	uint64_t calls, bytes;
};

struct totals {
	struct kind_total calls[MAX_KINDS], tasks[MAX_KINDS];
	unsigned ncalls, ntasks;
};

static void add(struct kind_total *t, unsigned *n, const char *kind, uint64_t bytes)
{
	unsigned i;

	for (i = 0; i < *n && strcmp(t[i].kind, kind); i++)
		;
	if (i == *n) {
		if (*n == MAX_KINDS)
			return;
		snprintf(t[i].kind, sizeof(t[i].kind), "%s", kind);
		(*n)++;
	}
	t[i].calls++;
	t[i].bytes += bytes;
}

static void region_end(void *ctx, struct sc_image *img, struct sc_thread *th,
		       const struct sc_region_ev *r)
{
	struct totals *t = ctx;
	const char *p = r->args, *end = r->args + r->args_len, *name, *value, *kind = NULL;
	bool call = !strcmp(r->category, "nccl"), task = !strcmp(r->category, "nccl_task");
	uint64_t bytes = 0;
	char type;

	(void)img, (void)th;
	if (!call && !task)
		return;
	while (p && (p = sc_region_arg_next(p, end, &type, &name, &value)))
		if (!strcmp(name, "kind"))
			kind = value;
		else if (!strcmp(name, "bytes"))
			bytes = strtoull(value, NULL, 10);
	if (!kind)
		return;
	if (call)
		add(t->calls, &t->ncalls, kind, bytes);
	else
		add(t->tasks, &t->ntasks, kind, bytes);
}

static const char *human_bytes(uint64_t b, char *buf, size_t n)
{
	if (b < 1024)
		snprintf(buf, n, "%llu B", (unsigned long long)b);
	else if (b < (1u << 20))
		snprintf(buf, n, "%.1f KiB", (double)b / 1024);
	else if (b < (1u << 30))
		snprintf(buf, n, "%.1f MiB", (double)b / (1 << 20));
	else
		snprintf(buf, n, "%.2f GiB", (double)b / (1u << 30));
	return buf;
}

static const struct sc_timeline_ops ops = { .region_end = region_end };

void sc_summary_nccl(FILE *f, struct sc_output *out)
{
	struct totals *t;
	const struct kind_total *k;
	unsigned n;
	uint64_t calls = 0;

	if (!out->settings || !sc_bool(out->settings, SC_SET_USE_NCCL))
		return;
	t = calloc(1, sizeof(*t));
	if (!t)
		return;
	for (size_t i = 0; i < out->model->images.n; i++) {
		struct sc_timeline_stats stats = { 0 };

		if (out->model->images.v[i]->regions)
			sc_timeline_replay(out->model, out->model->images.v[i], &ops, t, &stats);
	}
	k = t->ncalls ? t->calls : t->tasks;
	n = t->ncalls ? t->ncalls : t->ntasks;
	for (unsigned i = 0; i < n; i++)
		calls += k[i].calls;
	if (!n)
		fprintf(f, "syscope: NCCL: no calls recorded (did the program make a "
			   "communicator?)\n");
	else
		fprintf(f, "syscope: NCCL: %llu calls%s:", (unsigned long long)calls,
			t->ncalls ? "" : " (as launched: the interface has no call events)");
	for (unsigned i = 0; i < n; i++) {
		char size[32];

		fprintf(f, "%s %s %llu (%s)", i ? "," : "", k[i].kind,
			(unsigned long long)k[i].calls,
			human_bytes(k[i].bytes, size, sizeof(size)));
	}
	if (n)
		fputc('\n', f);
	free(t);
}
