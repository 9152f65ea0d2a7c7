/* SPDX-License-Identifier: MIT */
#include "timeline.h"

#include "mpi.h"
#include "omp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/strutil.h"

/* Regions open at once on one thread (the runtime's shadow stack is as deep); deeper ones are
 * left out, and counted. */
#define MAX_OPEN 65536
#define MAX_AHEAD 64

static bool warned_too_deep, warned_unknown_ids;

/* A thread's open regions on one of its stacks: context 0, its own (every kind of region),
 * or a coroutine's (instrumented calls recorded with SC_FUNC_CONTEXT), whose calls pair and
 * nest apart from those of the stack that resumed them. */
struct open_regions {
	int32_t tid;
	uint32_t context;
	uint32_t depth;			/* regions on the stack */
	VEC(struct sc_region_ev) stack; /* grows with the deepest nesting seen */
	/* Closed regions given ahead of what ran inside them (OMP_REGION), innermost last:
	 * what starts within one is nested in it. Deeper ones are not kept. */
	struct ahead {
		uint64_t start, end;
		uint32_t depth;
	} ahead[MAX_AHEAD];
	uint32_t nahead;
};

struct replay {
	struct sc_model *m;
	struct sc_image *img;
	const struct sc_timeline_ops *ops;
	void *ctx;
	struct sc_timeline_stats *stats;
	VEC(struct open_regions *) open; /* one per thread that had regions */
	struct sc_hashmap open_index;	 /* tid + 1 -> index in open + 1 */
	struct open_regions *last_open;
	struct sc_thread *last_thread;
	int32_t last_tid;
	struct sc_hashmap func_names; /* function address + 1 -> name pointer << 1 | hidden */
	const char *category_instrumented;
	const char *category_mpi;
	struct sc_omp_texts omp; /* arguments of OMP_BEGIN regions */
};

const char *sc_region_arg_next(const char *p, const char *end, char *type, const char **name,
			       const char **value)
{
	if (!p || p >= end)
		return NULL;
	*type = *p;
	p += strlen(p) + 1;
	*name = p;
	p += strlen(p) + 1;
	*value = p;
	return p + strlen(p) + 1;
}

static struct sc_thread *thread_of(struct replay *r, int32_t tid)
{
	if (!r->last_thread || r->last_tid != tid) {
		r->last_thread = sc_process_thread(r->img->proc, tid);
		r->last_tid = tid;
	}
	return r->last_thread;
}

static struct open_regions *open_in(struct replay *r, int32_t tid, uint32_t context, bool create)
{
	uint64_t key = ((uint64_t)context << 32 | (uint32_t)tid) + 1;
	struct open_regions *o;
	uint64_t *slot;

	if (r->last_open && r->last_open->tid == tid && r->last_open->context == context)
		return r->last_open;
	slot = sc_hashmap_get(&r->open_index, key);
	if (slot)
		return r->last_open = r->open.v[*slot - 1];
	if (!create)
		return NULL;
	o = sc_xcalloc(1, sizeof(*o));
	o->tid = tid;
	o->context = context;
	*VEC_PUSH(&r->open) = o;
	*sc_hashmap_upsert(&r->open_index, key, 0, NULL) = r->open.n;
	return r->last_open = o;
}

/* The thread's own stack. */
static struct open_regions *open_of(struct replay *r, int32_t tid, bool create)
{
	return open_in(r, tid, 0, create);
}

/* `t`: the name, category and arguments, after the record's fixed part. */
static void region_from(struct sc_region_ev *ev, const struct sc_rec_region *g, const char *t)
{
	memset(ev, 0, sizeof(*ev));
	ev->start = g->ts;
	ev->name = t;
	ev->category = t + g->name_len;
	ev->args = t + g->name_len + g->cat_len;
	ev->args_len = g->args_len;
	ev->nargs = g->nargs;
	ev->corr_id = g->corr_id;
}

const char *sc_gpu_op_default_name(uint16_t kind, uint16_t copy_kind)
{
	static const char *const copies[SC_COPY_KINDS] = {
		[SC_COPY_UNKNOWN] = "MEMORY_COPY",
		[SC_COPY_HTOD] = "MEMORY_COPY_HOST_TO_DEVICE",
		[SC_COPY_DTOH] = "MEMORY_COPY_DEVICE_TO_HOST",
		[SC_COPY_DTOD] = "MEMORY_COPY_DEVICE_TO_DEVICE",
		[SC_COPY_HTOH] = "MEMORY_COPY_HOST_TO_HOST",
		[SC_COPY_PTOP] = "MEMORY_COPY_PEER_TO_PEER",
	};

	switch (kind) {
	case SC_GPU_KERNEL:
		return "[unnamed kernel]";
	case SC_GPU_GRAPH:
		return "[CUDA graph]";
	case SC_GPU_COPY:
		return copies[copy_kind < SC_COPY_KINDS ? copy_kind : 0];
	case SC_GPU_SET:
		return "MEMORY_SET";
	case SC_GPU_ALLOC:
		return "MEMORY_ALLOCATION_ALLOCATE";
	default:
		return "MEMORY_ALLOCATION_FREE";
	}
}

const char *sc_copy_kind_short(uint16_t copy_kind)
{
	static const char *const names[SC_COPY_KINDS] = { "copy", "HtoD", "DtoH",
							  "DtoD", "HtoH", "PtoP" };

	return names[copy_kind < SC_COPY_KINDS ? copy_kind : 0];
}

const char *sc_gpu_op_category(uint16_t kind)
{
	switch (kind) {
	case SC_GPU_KERNEL:
		return "KERNEL_DISPATCH";
	case SC_GPU_GRAPH:
		return "GRAPH_LAUNCH";
	case SC_GPU_COPY:
	case SC_GPU_SET:
		return "MEMORY_COPY";
	default:
		return "MEMORY_ALLOCATION";
	}
}

const char *sc_gpu_alloc_type(uint16_t kind)
{
	return kind == SC_GPU_ALLOC ? "ALLOC" : "FREE";
}

const char *sc_gpu_mem_level(uint16_t level)
{
	return level == SC_MEM_VIRTUAL ? "VIRTUAL" : level == SC_MEM_SCRATCH ? "SCRATCH" : "REAL";
}

static void replay_gpu_op(struct replay *r, const struct sc_rec_gpu_op *o)
{
	struct sc_gpu_op_ev ev = { .rec = o };
	const char *name = sc_image_name(r->img, o->name_id);
	int32_t tid;

	r->stats->gpu_ops++;
	if (!r->ops->gpu_op || o->kind >= SC_GPU_OP_KINDS)
		return;
	ev.mangled = name ? name
			  : sc_strtab_intern(&r->m->strings,
					     sc_gpu_op_default_name(o->kind, o->copy_kind));
	ev.name = o->kind == SC_GPU_KERNEL ? sc_model_demangle(r->m, ev.mangled) : ev.mangled;
	ev.agent = sc_image_agent(r->img, o->agent);
	if (o->kind != SC_GPU_ALLOC && o->kind != SC_GPU_FREE)
		ev.stream = sc_image_stream(r->img, o->agent, o->stream);
	if (o->kind == SC_GPU_KERNEL)
		ev.metrics = sc_image_gpu_metrics(r->img, o->corr_id);
	tid = o->tid ? o->tid : sc_image_corr_tid(r->img, o->corr_id);
	r->ops->gpu_op(r->ctx, r->img, tid ? thread_of(r, tid) : NULL, &ev);
}

/* `name` with where the function is, as FUNCTION_LABEL asks: "solve [solver.c:120]". */
static const char *labeled(struct sc_model *m, const char *name, const struct sc_symframe *f)
{
	bool with_file = m->view && m->view->label_file && f->file && *f->file;
	bool with_line = m->view && m->view->label_line && f->line;
	char *text;
	const char *r;

	const char *file = with_file ? sc_base_name(f->file) : NULL;

	if (!with_file && !with_line)
		return name;
	if (with_file && with_line)
		text = sc_xasprintf("%s [%s:%u]", name, file, f->line);
	else if (with_file)
		text = sc_xasprintf("%s [%s]", name, file);
	else
		text = sc_xasprintf("%s [line %u]", name, f->line);
	r = sc_strtab_intern(&m->strings, text);
	free(text);
	return r;
}

/* A traced Python call (SC_FUNC_PYTHON): its qualname, labeled as FUNCTION_LABEL asks with
 * its file and first line. */
static const char *python_func_name(struct replay *r, uint64_t addr)
{
	const struct sc_py_code *code;
	const char *name = sc_py_func_name(r->m, r->img, addr, &code);
	struct sc_symframe where = { 0 };

	if (!code)
		return name;
	where.file = code->filename;
	where.line = code->first_line > 0 ? (uint32_t)code->first_line : 0;
	return labeled(r->m, name, &where);
}

/* The region name of an instrumented function at `addr`, or of a loop starting there
 * (`loop`: "[loop] solve:42", its function and the line of its first instruction), or of a
 * traced Python call (`python`); NULL when the function filters leave it out. */
static const char *func_name(struct replay *r, uint64_t addr, uint64_t ts, bool loop, bool python)
{
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(
		&r->func_names, (addr + 1) ^ (uint64_t)loop << 63 ^ python, 0, &inserted);

	if (inserted && python) {
		const char *name = python_func_name(r, addr);

		*slot = (uint64_t)(uintptr_t)name << 1 | !sc_func_view_shown(r->m->view, name);
	} else if (inserted) {
		struct sc_module *mod = sc_image_module_at(r->img, addr, ts);
		const struct sc_symframe *frame;
		const char *name = sc_model_function_at(r->m, r->img, mod, addr, &frame);
		bool shown = sc_func_view_shown(r->m->view, name);

		if (loop) {
			char *text =
				frame && frame->line
					? sc_xasprintf("[loop] %s:%u", name, frame->line)
					: sc_xasprintf("[loop] %s@%#llx", name,
						       (unsigned long long)(addr -
									    (mod ? mod->base : 0)));

			name = sc_strtab_intern(&r->m->strings, text);
			free(text);
		} else if (frame) {
			name = labeled(r->m, name, frame);
		}
		*slot = (uint64_t)(uintptr_t)name << 1 | !shown;
	}
	return *slot & 1 ? NULL : (const char *)(uintptr_t)(*slot >> 1);
}

/* An OpenMP parallel region is named after the code it runs, "omp parallel @ main [app.c:42]"
 * (the `code` argument the OpenMP tracer records), so that profiles sum each construct
 * apart. Names are made once per address (a key space of its own in func_names). */
static void name_openmp_parallel(struct replay *r, struct sc_region_ev *ev)
{
	const char *p = ev->args, *end = ev->args + ev->args_len, *name, *value;
	char type;

	if (strcmp(ev->name, "omp parallel") || strcmp(ev->category, "openmp"))
		return;
	while ((p = sc_region_arg_next(p, end, &type, &name, &value))) {
		uint64_t addr = strtoull(value, NULL, 16), *slot;
		bool inserted;

		if (type != SC_ARG_POINTER || strcmp(name, "code") || !addr)
			continue;
		slot = sc_hashmap_upsert(&r->func_names, (addr + 1) | 1ULL << 62, 0, &inserted);
		if (inserted) {
			struct sc_module *mod = sc_image_module_at(r->img, addr, ev->start);
			const struct sc_symframe *f = NULL;
			const char *fn = sc_model_function_at(r->m, r->img, mod, addr, &f);
			char *text = f && f->file && *f->file && f->line
					     ? sc_xasprintf("omp parallel @ %s [%s:%u]", fn,
							    sc_base_name(f->file), f->line)
					     : sc_xasprintf("omp parallel @ %s", fn);

			*slot = (uint64_t)(uintptr_t)sc_strtab_intern(&r->m->strings, text);
			free(text);
		}
		ev->name = (const char *)(uintptr_t)*slot;
		return;
	}
}

/* Whether closed region `a` holds what starts at `ts`: it began no later and had not ended
 * (or began at the same time: a region may share its encloser's timestamp). */
static bool ahead_holds(const struct ahead *a, uint64_t ts)
{
	return a->start <= ts && (ts < a->end || ts == a->start);
}

/* The depth of a region that starts at `ts` on `o`: one more than the innermost region
 * around it, open on the stack or closed ahead of it. In the thread's own order (`own`), the
 * closed ones it is past are forgotten; a span another thread recorded only looks. */
static uint32_t region_depth(struct open_regions *o, uint64_t ts, bool own)
{
	uint32_t depth, i;

	if (!o)
		return 0;
	depth = o->depth ? o->stack.v[o->depth - 1].depth + 1 : 0;
	while (own && o->nahead && !ahead_holds(&o->ahead[o->nahead - 1], ts))
		o->nahead--;
	for (i = o->nahead; i > 0 && !ahead_holds(&o->ahead[i - 1], ts); i--)
		;
	if (i && o->ahead[i - 1].depth + 1 > depth)
		depth = o->ahead[i - 1].depth + 1;
	return depth;
}

/* Open region `ev` on thread `tid` (copied onto its stack at the current depth). */
static void open_region(struct replay *r, int32_t tid, const struct sc_region_ev *ev)
{
	struct open_regions *o = open_in(r, tid, ev->context, true);

	r->stats->regions++;
	if (o->depth >= MAX_OPEN) {
		r->stats->too_deep++;
		return;
	}
	VEC_RESERVE(&o->stack, o->depth + 1);
	o->stack.n = o->depth + 1;
	o->stack.v[o->depth] = *ev;
	o->stack.v[o->depth].depth = region_depth(o, ev->start, true);
	if (r->ops->region_begin)
		r->ops->region_begin(r->ctx, r->img, thread_of(r, tid), &o->stack.v[o->depth]);
	o->depth++;
}

/* Close thread `o`'s open regions at time `ts` down to the one at depth `keep`, included;
 * with `ends` that one ends normally, every other one is unterminated. */
static void close_to(struct replay *r, struct open_regions *o, uint32_t keep, uint64_t ts,
		     bool ends)
{
	struct sc_thread *t = thread_of(r, o->tid);

	while (o->depth > keep) {
		struct sc_region_ev *ev = &o->stack.v[--o->depth];

		ev->end = ts > ev->start ? ts : ev->start;
		ev->unterminated = !ends || o->depth > keep;
		if (ev->unterminated)
			r->stats->unterminated++;
		if (r->ops->region_end)
			r->ops->region_end(r->ctx, r->img, t, ev);
	}
}

/* Close every region still open on thread `o` at time `ts`. */
static void close_all(struct replay *r, struct open_regions *o, uint64_t ts)
{
	close_to(r, o, 0, ts, false);
}

/* A throttled Python function's aggregated calls (FUNC_STATS): to the profiles only. */
static void replay_func_stats(struct replay *r, int32_t tid, const struct sc_record *rec)
{
	const struct sc_rec_func_stats *f = (const void *)rec;
	uint64_t addr = sc_image_func_addr(r->img, f->id, rec->flags);
	const char *name =
		addr ? func_name(r, addr, r->img->last_ts, false, rec->flags & SC_FUNC_PYTHON)
		     : NULL;

	if (name && r->ops->func_stats)
		r->ops->func_stats(r->ctx, r->img, thread_of(r, tid), name, f);
}

/* A whole call (FUNC_CALL): its region begins and ends at once, after its callees'. */
static void replay_func_call(struct replay *r, int32_t tid, const struct sc_record *rec)
{
	const struct sc_rec_func_call *f = (const void *)rec;
	uint64_t addr = sc_image_func_addr(r->img, f->id, rec->flags);
	struct sc_thread *t = thread_of(r, tid);
	struct open_regions *o;
	struct sc_region_ev ev;
	const char *name;

	if (!addr) {
		r->stats->unknown_ids++; /* its FUNC_ID was lost */
		return;
	}
	name = func_name(r, addr, f->start, rec->flags & SC_FUNC_LOOP, rec->flags & SC_FUNC_PYTHON);
	if (!name)
		return; /* left out by --function-include/--function-exclude */
	memset(&ev, 0, sizeof(ev));
	ev.start = f->start;
	ev.end = f->start + f->dur_ns;
	ev.name = name;
	ev.category = r->category_instrumented;
	ev.func_addr = addr;
	ev.context = SC_FUNC_CONTEXT(rec->flags);
	ev.whole = true;
	ev.unterminated = rec->flags & SC_FUNC_OPEN;
	o = open_in(r, tid, ev.context, false);
	if (o && o->depth) { /* regions pushed inside it and still open end with it, as an
			      * NVTX push made in NVTX's own instrumented code */
		uint32_t at = o->depth;

		while (at > 0 && o->stack.v[at - 1].start >= ev.start)
			at--;
		if (at < o->depth)
			close_to(r, o, at, ev.end, false);
	}
	/* The regions around it; its callers come later. */
	ev.depth = region_depth(o, ev.start, true);
	r->stats->regions++;
	if (ev.unterminated)
		r->stats->unterminated++;
	if (r->ops->region_begin)
		r->ops->region_begin(r->ctx, r->img, t, &ev);
	if (r->ops->region_end)
		r->ops->region_end(r->ctx, r->img, t, &ev);
}

/* A region that came with its end before what ran inside it (OMP_REGION): given whole at
 * once, as the thread's stack around it stands; what it contains follows, and consumers nest
 * by time. It stays off the stack, so no REGION_END can close it. */
static void replay_whole_ahead(struct replay *r, int32_t tid, struct sc_region_ev *ev)
{
	struct open_regions *o = open_of(r, tid, true);
	struct sc_thread *t = thread_of(r, tid);

	ev->depth = region_depth(o, ev->start, true);
	if (o->nahead < MAX_AHEAD)
		o->ahead[o->nahead++] = (struct ahead){ ev->start, ev->end, ev->depth };
	r->stats->regions++;
	if (r->ops->region_begin)
		r->ops->region_begin(r->ctx, r->img, t, ev);
	if (r->ops->region_end)
		r->ops->region_end(r->ctx, r->img, t, ev);
}

static int replay_record(void *ctx, int32_t tid, const struct sc_record *rec, uint64_t off)
{
	struct replay *r = ctx;
	struct open_regions *o;
	struct sc_region_ev ev;

	(void)off;
	switch (rec->type) {
	case SC_REC_REGION_BEGIN:
		region_from(&ev, (const void *)rec,
			    (const char *)rec + sizeof(struct sc_rec_region));
		name_openmp_parallel(r, &ev);
		open_region(r, tid, &ev);
		break;
	case SC_REC_OMP_BEGIN:
		if (!sc_omp_region(&ev, (const void *)rec, rec->size, &r->omp))
			break;
		name_openmp_parallel(r, &ev);
		open_region(r, tid, &ev);
		break;
	case SC_REC_OMP_REGION: {
		struct sc_region_ev task;
		bool held;

		if (!sc_omp_whole_region(&ev, (const void *)rec, rec->size, &r->omp))
			break;
		held = sc_omp_held_task(&task, &ev, (const void *)rec, rec->size, &r->omp);
		name_openmp_parallel(r, &ev);
		if (ev.end)
			replay_whole_ahead(r, tid, &ev);
		else
			open_region(r, tid, &ev); /* ended by a REGION_END, as an OMP_BEGIN */
		if (held && task.end) /* the task its record holds, inside it (format.h) */
			replay_whole_ahead(r, tid, &task);
		else if (held)
			open_region(r, tid, &task);
		break;
	}
	case SC_REC_REGION_END: {
		uint32_t at;

		/* The thread's innermost pushed region (user, NVTX), not an instrumented function
		 * that happens to be open above or below it: push/pop ranges and calls need not
		 * nest (an NVTX push made inside NVTX's own instrumented code is closed by that
		 * code's return). Functions called since the push and still open end with it. */
		o = open_of(r, tid, false);
		for (at = o ? o->depth : 0; at > 0 && o->stack.v[at - 1].func_addr; at--)
			;
		if (!at) {
			r->stats->unmatched_ends++;
			break;
		}
		close_to(r, o, at - 1, ((const struct sc_rec_region_end *)rec)->ts, true);
		break;
	}
	case SC_REC_REGION_SPAN: {
		const struct sc_rec_region_span *sp = (const void *)rec;
		struct sc_thread *t = thread_of(r, sp->tid);

		r->stats->regions++;
		region_from(&ev, &sp->r, (const char *)(sp + 1));
		ev.end = sp->end;
		o = open_of(r, sp->tid, false);
		/* As far as the thread's own records tell. */
		ev.depth = region_depth(o, ev.start, false);
		if (r->ops->region_begin)
			r->ops->region_begin(r->ctx, r->img, t, &ev);
		if (r->ops->region_end)
			r->ops->region_end(r->ctx, r->img, t, &ev);
		break;
	}
	case SC_REC_MPI_SHORT:
	case SC_REC_CLOCK_SYNC:
	case SC_REC_MPI_CALL: {
		struct sc_rec_mpi_call whole;
		char text[1024];

		r->stats->regions++;
		if (rec->type == SC_REC_CLOCK_SYNC)
			sc_mpi_clock_region(&ev, (const void *)rec, text, sizeof(text));
		else if (rec->type == SC_REC_MPI_SHORT)
			sc_mpi_region(&ev,
				      sc_mpi_unshort((const void *)rec, sc_image_mpi_size(r->img),
						     &whole),
				      text, sizeof(text));
		else
			sc_mpi_region(&ev, (const void *)rec, text, sizeof(text));
		o = open_of(r, tid, false);
		ev.depth = region_depth(o, ev.start, true);
		if (r->ops->region_begin)
			r->ops->region_begin(r->ctx, r->img, thread_of(r, tid), &ev);
		if (r->ops->region_end)
			r->ops->region_end(r->ctx, r->img, thread_of(r, tid), &ev);
		break;
	}
	case SC_REC_FUNC_ENTER: {
		const struct sc_rec_func *f = (const void *)rec;
		const char *name = func_name(r, f->addr, f->ts, rec->flags & SC_FUNC_LOOP,
					     rec->flags & SC_FUNC_PYTHON);

		if (!name)
			break; /* left out by --function-include/--function-exclude */
		memset(&ev, 0, sizeof(ev));
		ev.start = f->ts;
		ev.name = name;
		ev.category = r->category_instrumented;
		ev.func_addr = f->addr;
		ev.context = SC_FUNC_CONTEXT(rec->flags);
		open_region(r, tid, &ev);
		break;
	}
	case SC_REC_FUNC_EXIT: {
		const struct sc_rec_func *f = (const void *)rec;
		uint32_t at;

		if (!func_name(r, f->addr, f->ts, rec->flags & SC_FUNC_LOOP,
			       rec->flags & SC_FUNC_PYTHON))
			break; /* its entry was left out too */
		o = open_in(r, tid, SC_FUNC_CONTEXT(rec->flags), false);
		/* The innermost open entry of this function on its stack; entries above it
		 * that never returned (longjmp past them) end here too. */
		for (at = o ? o->depth : 0; at > 0 && o->stack.v[at - 1].func_addr != f->addr; at--)
			;
		if (!at) {
			r->stats->unmatched_ends++; /* entered before recording started */
			break;
		}
		close_to(r, o, at - 1, f->ts, true);
		break;
	}
	case SC_REC_FUNC_CALL:
		replay_func_call(r, tid, rec);
		break;
	case SC_REC_FUNC_COUNT: {
		const struct sc_rec_func_count *f = (const void *)rec;
		uint64_t addr = sc_image_func_addr(r->img, f->id, rec->flags);
		const char *name = addr ? func_name(r, addr, r->img->last_ts, false,
						    rec->flags & SC_FUNC_PYTHON)
					: NULL;

		if (name && (rec->flags & SC_FUNC_PYTHON) && (rec->flags & SC_FUNC_UNTIMED)) {
			/* A Python function's calls counted, not timed: an aggregate of calls
			 * with no time, which keeps its timed calls' statistics as they are. */
			struct sc_rec_func_stats st = { .id = f->id, .calls = f->calls };

			if (r->ops->func_stats)
				r->ops->func_stats(r->ctx, r->img, thread_of(r, tid), name, &st);
		} else if (name && r->ops->func_count) {
			r->ops->func_count(r->ctx, r->img, thread_of(r, tid), name,
					   r->category_instrumented, f->calls, f->total_ns);
		}
		break;
	}
	case SC_REC_MPI_COUNT: {
		const struct sc_rec_mpi_count *c = (const void *)rec;
		const char *name = sc_mpi_fn_name(SC_MPI_SHORT_FN(rec->flags));

		if (name && r->ops->func_count)
			r->ops->func_count(r->ctx, r->img, thread_of(r, tid), name, r->category_mpi,
					   c->calls, c->total_ns);
		break;
	}
	case SC_REC_FUNC_STATS:
		replay_func_stats(r, tid, rec);
		break;
	case SC_REC_MARK:
		r->stats->marks++;
		region_from(&ev, (const void *)rec,
			    (const char *)rec + sizeof(struct sc_rec_region));
		ev.end = ev.start;
		o = open_of(r, tid, false);
		ev.depth = region_depth(o, ev.start, true);
		if (r->ops->mark)
			r->ops->mark(r->ctx, r->img, thread_of(r, tid), &ev);
		break;
	case SC_REC_COUNTER: {
		const struct sc_rec_counter *c = (const void *)rec;
		const struct sc_counter_track *track = sc_image_counter_track(r->img, c->track);

		r->stats->counters++;
		if (track && r->ops->counter)
			r->ops->counter(r->ctx, r->img, thread_of(r, tid), track, c->ts, c->value);
		break;
	}
	case SC_REC_PMC_READ: {
		const struct sc_rec_pmc_read *p = (const void *)rec;

		for (unsigned i = 0; i < SC_PMC_MAX && r->ops->counter; i++) {
			const struct sc_counter_track *track =
				p->valid >> i & 1
					? sc_image_counter_track(r->img, SC_PMC_TRACK_ID(tid, i))
					: NULL;

			if (track) {
				r->stats->counters++;
				r->ops->counter(r->ctx, r->img, thread_of(r, tid), track, p->ts,
						(double)p->values[i]);
			}
		}
		break;
	}
	case SC_REC_SAMPLE: {
		const struct sc_rec_sample *s = (const void *)rec;

		if (!sc_sample_kind_profiled(s->kind))
			break;
		r->stats->samples++;
		if (r->ops->sample && s->nframes)
			r->ops->sample(r->ctx, r->img, thread_of(r, tid), s->ts, s->cpu_ns,
				       sc_model_stack_of(r->m, r->img, tid, rec));
		break;
	}
	case SC_REC_GPU_OP:
		replay_gpu_op(r, (const void *)rec);
		break;
	case SC_REC_THREAD_END:
		/* Every stack of the thread: coroutines' first (rarely any), then its own. */
		for (size_t i = 0; i < r->open.n; i++)
			if (r->open.v[i]->tid == tid && r->open.v[i]->context)
				close_all(r, r->open.v[i], ((const struct sc_rec_thread *)rec)->ts);
		o = open_of(r, tid, false);
		if (o)
			close_all(r, o, ((const struct sc_rec_thread *)rec)->ts);
		break;
	default:
		break;
	}
	return 0;
}

int sc_timeline_replay(struct sc_model *m, struct sc_image *img, const struct sc_timeline_ops *ops,
		       void *ctx, struct sc_timeline_stats *stats)
{
	struct replay r = { .m = m, .img = img, .ops = ops, .ctx = ctx, .stats = stats };
	uint64_t end = img->end_ns ? img->end_ns : img->last_ts;

	sc_hashmap_init(&r.open_index);
	sc_hashmap_init(&r.func_names);
	sc_omp_texts_init(&r.omp);
	r.category_instrumented = sc_strtab_intern(&m->strings, "instrumented");
	r.category_mpi = sc_strtab_intern(&m->strings, SC_MPI_CATEGORY);
	sc_image_foreach(img, replay_record, &r, NULL, NULL, NULL);
	for (size_t i = 0; i < r.open.n; i++) {
		close_all(&r, r.open.v[i], end); /* threads that never recorded their end */
		VEC_FREE(&r.open.v[i]->stack);
		free(r.open.v[i]);
	}
	VEC_FREE(&r.open);
	sc_hashmap_free(&r.open_index);
	sc_hashmap_free(&r.func_names);
	sc_omp_texts_free(&r.omp);
	if (stats->unknown_ids && !warned_unknown_ids) {
		warned_unknown_ids = true;
		pr_warn("%llu instrumented calls of process %d name a function id no FUNC_ID "
			"record gave (lost with its thread's last records); left out",
			(unsigned long long)stats->unknown_ids, (int)img->pid);
	}
	if (stats->too_deep && !warned_too_deep) {
		warned_too_deep = true; /* once, not once per output format */
		pr_warn("%llu regions of process %d nested deeper than %d were left out",
			(unsigned long long)stats->too_deep, (int)img->pid, MAX_OPEN);
	}
	return 0;
}
