/* SPDX-License-Identifier: MIT */
/*
 * Loops as regions (syscope instrument -l): from a function's back edges (a direct jump to
 * an earlier address of the same function), each loop is the code [head, end) up to its
 * last back edge. A loop instance is recorded from the moment control enters that code
 * until it leaves it, so probes go where control enters (targets of jumps from outside,
 * and the head when the code before it falls through) and where it leaves (targets of jumps
 * from inside to outside, and the end when the last instruction falls through); a return
 * from inside ends it with the function. Iterations are not probed.
 *
 * A loop is left alone, with its reason, when that picture does not hold or cannot be
 * probed safely: a computed jump inside it (its exits are unknown), a jump from it to
 * another function, a call into it, loops that overlap without nesting, or a probe whose
 * window cannot move (the same rules as a function's entry, and no branch may land inside
 * a window).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

#define MAX_LOOPS 32
#define MAX_PROBES 64

struct work {
	struct analysis *a;
	struct sc_fn *fn;
	struct fn_code *fc;
	uint64_t fn_end;
};

static bool no_fall_at(const struct fn_code *fc, uint64_t end)
{
	for (size_t i = 0; i < fc->no_fall.n; i++)
		if (fc->no_fall.v[i] == end)
			return true;
	return false;
}

/* The probe at `addr`, added if new; NULL when the function has too many. */
static struct sc_probe *probe_at(struct sc_fn *fn, uint64_t addr)
{
	for (size_t i = 0; i < fn->probes.n; i++)
		if (fn->probes.v[i].win.addr == addr)
			return &fn->probes.v[i];
	if (fn->probes.n == MAX_PROBES)
		return NULL;
	struct sc_probe *p = VEC_PUSH(&fn->probes);

	p->win.addr = addr;
	return p;
}

/* Can a probe go at `addr` of the function: a window that moves, no branch landing inside
 * it, clear of the entry window and of the other probes? Plans it into `win`. */
static const char *plan_probe(struct work *w, uint64_t addr, struct sc_plan_func *win)
{
	const struct sc_fn *fn = w->fn;
	uint64_t entry_end = fn->addr + fn->plan.patch_off + fn->plan.patch_len;
	size_t first, n;
	const char *why;

	if (addr < entry_end)
		return "a probe would overlap the function's entry";
	memset(win, 0, sizeof(*win));
	win->addr = addr;
	win->size = fn->size;
	why = sc_plan_window_at(w->a, w->fc->code + (addr - fn->addr), addr, w->fn_end - addr, addr,
				win);
	if (why)
		return why;
	n = sc_branches_into(w->a, addr + 1, addr + win->patch_len, &first);
	if (n)
		return "a jump lands inside a probe's bytes";
	for (size_t i = 0; i < fn->probes.n; i++) {
		const struct sc_plan_func *o = &fn->probes.v[i].win;

		if (o->addr != addr && o->patch_len && addr < o->addr + o->patch_len &&
		    o->addr < addr + win->patch_len)
			return "two probes would overlap";
	}
	return NULL;
}

/* Entries and exits of loop `l` (index `li`): their probes, or why not. */
static const char *probe_loop(struct work *w, const struct sc_loop *l, uint32_t li)
{
	struct sc_fn *fn = w->fn;
	uint64_t addrs[MAX_PROBES];
	uint32_t enters[MAX_PROBES];
	size_t n = 0, first, count;

	/* Entries: jumps from outside, and the head when the code before falls into it. */
	if (l->head > fn->addr && !no_fall_at(w->fc, l->head)) {
		addrs[n] = l->head;
		enters[n++] = 1u << li;
	}
	count = sc_branches_into(w->a, l->head, l->end, &first);
	for (size_t i = first; i < first + count; i++) {
		const struct branch *b = &w->a->branches.v[i];

		if (b->from >= l->head && b->from < l->end)
			continue;
		if (b->call)
			return "a call lands inside it";
		if (b->fn != (uint32_t)(fn - w->a->mod->fns.v))
			return "another function jumps into it";
		if (n == MAX_PROBES)
			return "too many ways in";
		addrs[n] = b->target;
		enters[n++] = 1u << li;
	}
	if (!n)
		return "no way into it was found";
	/* Exits: jumps from inside to outside, and falling off its end. */
	for (size_t i = 0; i < w->fc->own.n; i++) {
		const struct branch *b = &w->fc->own.v[i];

		if (b->from < l->head || b->from >= l->end || b->call ||
		    (b->target >= l->head && b->target < l->end))
			continue;
		if (b->target < fn->addr || b->target >= w->fn_end)
			return "it jumps out of the function";
		if (n == MAX_PROBES)
			return "too many ways out";
		addrs[n] = b->target;
		enters[n++] = 0;
	}
	if (!no_fall_at(w->fc, l->end)) {
		if (l->end >= w->fn_end)
			return "it runs off the function's end";
		if (n == MAX_PROBES)
			return "too many ways out";
		addrs[n] = l->end;
		enters[n++] = 0;
	}
	/* Plan every probe first; add them only when all can be made. */
	struct sc_plan_func wins[MAX_PROBES];

	memset(wins, 0, sizeof(wins));
	for (size_t i = 0; i < n; i++) {
		const char *why;
		bool known = false;

		for (size_t k = 0; k < fn->probes.n; k++)
			if (fn->probes.v[k].win.addr == addrs[i]) {
				wins[i] = fn->probes.v[k].win;
				known = true;
			}
		if (known)
			continue;
		why = plan_probe(w, addrs[i], &wins[i]);
		if (why)
			return why;
		for (size_t k = 0; k < i; k++)
			if (addrs[k] != addrs[i] && wins[k].patch_len &&
			    addrs[i] < addrs[k] + wins[k].patch_len &&
			    addrs[k] < addrs[i] + wins[i].patch_len)
				return "two probes would overlap";
	}
	if (fn->probes.n + n > MAX_PROBES)
		return "too many probes in the function";
	for (size_t i = 0; i < n; i++) {
		struct sc_probe *p = probe_at(fn, addrs[i]);

		if (!p->win.patch_len)
			p->win = wins[i];
		p->enters |= enters[i];
	}
	return NULL;
}

static int by_head_then_size(const void *x, const void *y)
{
	const struct sc_loop *p = x, *q = y;

	if (p->head != q->head)
		return p->head < q->head ? -1 : 1;
	return p->end > q->end ? -1 : p->end < q->end; /* outer first */
}

void sc_find_loops(struct analysis *a, uint32_t idx)
{
	struct work w = { .a = a, .fn = &a->mod->fns.v[idx], .fc = &a->fns[idx] };
	struct sc_fn *fn = w.fn;

	w.fn_end = fn->addr + fn->size;
	/* One loop per head, up to its last back edge. */
	for (size_t i = 0; i < w.fc->own.n; i++) {
		const struct branch *b = &w.fc->own.v[i];
		bool merged = false;

		if (b->call || b->target > b->from || b->target < fn->addr)
			continue;
		for (size_t k = 0; k < fn->loops.n; k++)
			if (fn->loops.v[k].head == b->target) {
				if (b->from_end > fn->loops.v[k].end)
					fn->loops.v[k].end = b->from_end;
				merged = true;
			}
		if (!merged && fn->loops.n < MAX_LOOPS)
			*VEC_PUSH(&fn->loops) =
				(struct sc_loop){ .head = b->target, .end = b->from_end };
	}
	if (!fn->loops.n)
		return;
	qsort(fn->loops.v, fn->loops.n, sizeof(*fn->loops.v), by_head_then_size);
	for (uint32_t i = 0; i < fn->loops.n; i++) {
		struct sc_loop *l = &fn->loops.v[i];

		for (uint32_t k = 0; k < fn->loops.n && !l->reason; k++) {
			const struct sc_loop *o = &fn->loops.v[k];

			if (k != i && o->head < l->end && l->head < o->end &&
			    !(o->head <= l->head && l->end <= o->end) &&
			    !(l->head <= o->head && o->end <= l->end))
				l->reason = "it overlaps another loop without nesting in it";
		}
		if (!l->reason && w.fc->indirect_jump) {
			/* Only a computed jump inside the loop matters, but its place is not kept:
			 * a function with one is left alone. */
			l->reason = "its function has a computed jump (jump table)";
		}
		if (!l->reason)
			l->reason = probe_loop(&w, l, i);
	}
}
