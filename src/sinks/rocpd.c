/* SPDX-License-Identifier: MIT */
/*
 * `rocpd`: rocpd-<pid>.db, one SQLite database per process in the rocpd schema version 3,
 * the format rocprof-sys and rocprofv3 write (docs/output-formats.md, rocpd). What goes where:
 *
 *   node, process (id = OS pid), threads (id = OS tid), a CPU agent, default queue and stream
 *   user regions      rocpd_region + rocpd_event (category) + rocpd_arg per argument
 *   marks             rocpd_sample on a track named by the category, text in event extdata
 *   counters          rocpd_track + rocpd_info_pmc per counter; per value an event, a
 *                     rocpd_pmc_event and a rocpd_sample (rocprof-sys's telemetry layout,
 *                     except that the track belongs to the main thread: rocprof-sys leaves
 *                     its tid NULL, which hides every value from the `samples` view)
 *   call-stack        rocpd_sample per sample on the thread's "(S)" track, its event carrying
 *   samples           call_stack and line_info JSON; and, as rocprof-sys does, each frame as a
 *                     region while consecutive samples share it, under one "samples
 *                     [syscope]" region per thread
 *   CUDA calls from   their regions' events carry the Python stack that made the call as
 *   Python            call_stack and line_info (PY_CALLSITE), outermost first as a sample's
 *
 * Rows go in through prepared statements in one transaction, with the journal off: the file
 * is built under a temporary name and renamed into place when complete.
 */
#include <errno.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../model/gpu_python.h"
#include "../model/timeline.h"
#include "../store/session.h"
#include "../store/sqlite_cause.h"
#include "rocpd_writer.h"

static const char *const insert_sql[INS_COUNT] = {
	[INS_STRING] = "INSERT INTO \"rocpd_string{{uuid}}\" (id, guid, string) VALUES (?, ?, ?)",
	[INS_EVENT] = "INSERT INTO \"rocpd_event{{uuid}}\" (id, guid, category_id, stack_id, "
		      "parent_stack_id, correlation_id, call_stack, line_info, extdata) VALUES (?, "
		      "'{{guid}}', ?, ?, ?, 0, ?, ?, ?)",
	[INS_ARG] = "INSERT INTO \"rocpd_arg{{uuid}}\" (guid, event_id, position, type, name, "
		    "value) VALUES ('{{guid}}', ?, ?, ?, ?, ?)",
	/* The id left to AUTOINCREMENT (1, 2, ... in the order written, as given before): SQLite
	 * appends to the table's b-tree then, instead of seeking the place of each given id. */
	[INS_REGION] = "INSERT INTO \"rocpd_region{{uuid}}\" (guid, nid, pid, tid, start, end, "
		       "name_id, event_id) VALUES ('{{guid}}', {{nid}}, {{pid}}, ?, ?, ?, ?, ?)",
	[INS_TRACK] = "INSERT INTO \"rocpd_track{{uuid}}\" (id, guid, nid, pid, tid, name_id) "
		      "VALUES (?, ?, ?, ?, ?, ?)",
	[INS_SAMPLE] = "INSERT INTO \"rocpd_sample{{uuid}}\" (guid, track_id, timestamp, "
		       "event_id, extdata) VALUES ('{{guid}}', ?, ?, ?, ?)",
	[INS_PMC_EVENT] = "INSERT INTO \"rocpd_pmc_event{{uuid}}\" (guid, event_id, pmc_id, value) "
			  "VALUES (?, ?, ?, ?)",
	[INS_DISPATCH] =
		"INSERT INTO \"rocpd_kernel_dispatch{{uuid}}\" (guid, nid, pid, tid, "
		"agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, end, "
		"private_segment_size, group_segment_size, workgroup_size_x, "
		"workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, "
		"region_name_id, event_id, extdata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
		"?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[INS_COPY] = "INSERT INTO \"rocpd_memory_copy{{uuid}}\" (guid, nid, pid, tid, start, end, "
		     "name_id, dst_agent_id, dst_address, src_agent_id, src_address, size, "
		     "queue_id, stream_id, region_name_id, event_id) VALUES (?, ?, ?, ?, ?, ?, ?, "
		     "?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[INS_ALLOC] = "INSERT INTO \"rocpd_memory_allocate{{uuid}}\" (guid, nid, pid, tid, "
		      "agent_id, type, level, start, end, address, size, queue_id, stream_id, "
		      "event_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

static void fail(struct rp *rp, const char *what)
{
	if (!rp->error) {
		rp->error = 1;
		char cause[256];

		snprintf(rp->errmsg, sizeof(rp->errmsg), "%s: %s", what,
			 sc_sqlite_cause(rp->db, cause, sizeof(cause)));
	}
}

void rp_exec_now(struct rp *rp, const char *sql)
{
	char *err = NULL;

	if (rp->error)
		return;
	if (sqlite3_exec(rp->db, sql, NULL, NULL, &err) != SQLITE_OK) {
		char cause[256];

		rp->error = 1;
		snprintf(rp->errmsg, sizeof(rp->errmsg), "%s (in: %.120s)",
			 sc_sqlite_cause(rp->db, cause, sizeof(cause)), sql);
	}
	sqlite3_free(err);
}

void rp_exec(struct rp *rp, const char *sql)
{
	if (rp->queue)
		rp_queue_sql(rp, sql);
	else
		rp_exec_now(rp, sql);
}

static void bind_row(struct rp *rp, sqlite3_stmt *st, const struct rp_value *v, const char *text,
		     size_t ncols, int col)
{
	for (size_t i = 0; i < ncols; i++, v++, col++) {
		switch (v->type) {
		case 'i':
			sqlite3_bind_int64(st, col, v->i);
			break;
		case 'd':
			sqlite3_bind_double(st, col, v->d);
			break;
		case 't':
			sqlite3_bind_text(st, col, text + v->text, -1, SQLITE_STATIC);
			break;
		case 'g':
			sqlite3_bind_text(st, col, rp->guid, -1, SQLITE_STATIC);
			break;
		default:
			sqlite3_bind_null(st, col);
			break;
		}
	}
}

static void step(struct rp *rp, int which, sqlite3_stmt *st)
{
	if (sqlite3_step(st) != SQLITE_DONE)
		fail(rp, insert_sql[which]);
	sqlite3_reset(st);
}

void rp_insert_rows(struct rp *rp, int which, const struct rp_value *values, size_t nvalues,
		    const char *text, unsigned rows)
{
	struct rp_batch *b = &rp->ins[which];
	size_t ncols = nvalues / rows;

	if (rows == RP_BATCH) {
		for (unsigned r = 0; r < rows; r++)
			bind_row(rp, b->multi, values + r * ncols, text, ncols,
				 (int)(r * ncols) + 1);
		step(rp, which, b->multi);
	} else {
		for (unsigned r = 0; r < rows && !rp->error; r++) {
			bind_row(rp, b->one, values + r * ncols, text, ncols, 1);
			step(rp, which, b->one);
		}
	}
}

static void flush_batch(struct rp *rp, int which)
{
	struct rp_batch *b = &rp->ins[which];

	if (!b->rows)
		return;
	if (rp->queue)
		rp_queue_rows(rp, which); /* takes the rows, leaves the batch empty */
	else
		rp_insert_rows(rp, which, b->values.v, b->values.n, b->text.v, b->rows);
	b->rows = 0;
	b->values.n = 0;
	b->text.n = 0;
}

void rp_flush(struct rp *rp)
{
	for (int i = 0; i < INS_COUNT; i++)
		flush_batch(rp, i);
}

void rp_run(struct rp *rp, int which, const char *types, ...)
{
	struct rp_batch *b = &rp->ins[which];
	va_list ap;

	if (rp->error)
		return;
	va_start(ap, types);
	for (const char *t = types; *t; t++) {
		struct rp_value *v = VEC_PUSH(&b->values);

		v->type = *t;
		switch (*t) {
		case 'i':
			v->i = va_arg(ap, int64_t);
			break;
		case 'd':
			v->d = va_arg(ap, double);
			break;
		case 't': {
			const char *text = va_arg(ap, const char *);
			size_t n = strlen(text) + 1;

			if (text == rp->guid) { /* in every row: bound from rp, not copied */
				v->type = 'g';
				break;
			}
			v->text = b->text.n;
			VEC_RESERVE(&b->text, b->text.n + n);
			memcpy(b->text.v + b->text.n, text, n);
			b->text.n += n;
			break;
		}
		default:
			break;
		}
	}
	va_end(ap);
	rp->rows++;
	if (++b->rows == RP_BATCH)
		flush_batch(rp, which);
}

/* The id of an interned string in rocpd_string. */
int64_t rp_string_id(struct rp *rp, const char *interned)
{
	bool inserted;
	uint64_t *slot =
		sc_hashmap_upsert(&rp->strings, (uint64_t)(uintptr_t)interned, 0, &inserted);

	if (inserted) {
		*slot = (uint64_t)++rp->next_string;
		rp_run(rp, INS_STRING, "itt", (int64_t)*slot, rp->guid, interned);
	}
	return (int64_t)*slot;
}

/* A region's name and category are usually the same few interned strings, row after row:
 * a small cache by pointer spares hashing them again (its entry is checked against the text,
 * since callers may pass buffers). */
static struct rp_recent *recent_of(struct rp *rp, const char *s)
{
	return &rp->recent[((uintptr_t)s >> 3 ^ (uintptr_t)s >> 11) % RP_RECENT];
}

int64_t rp_string_of(struct rp *rp, const char *s)
{
	struct rp_recent *r = recent_of(rp, s);

	if (r->ptr == s && r->string_id && !strcmp(r->interned, s))
		return r->string_id;
	if (r->ptr != s || strcmp(r->interned, s)) {
		r->ptr = s;
		r->interned = sc_strtab_intern(&rp->out->model->strings, s);
		r->event_id = 0;
	}
	r->string_id = rp_string_id(rp, r->interned);
	return r->string_id;
}

int64_t rp_event(struct rp *rp, const char *category, int64_t stack_id, const char *call_stack,
		 const char *line_info, const char *extdata)
{
	int64_t id = ++rp->next_event;
	char buf[128];

	category = sc_rocpd_category(category, buf, sizeof(buf));
	rp_run(rp, INS_EVENT, "iiiittt", id, rp_string_of(rp, category), stack_id, stack_id,
	       call_stack, line_info, extdata);
	return id;
}

static void region_row(struct rp *rp, int32_t tid, uint64_t start, uint64_t end, const char *name,
		       int64_t event_id)
{
	rp_run(rp, INS_REGION, "iiiii", (int64_t)tid, (int64_t)start, (int64_t)end,
	       rp_string_of(rp, name), event_id);
}

/* A track of (kind, thread or none, name), created on first use. */
static int64_t track(struct rp *rp, unsigned kind, int32_t tid, const char *name)
{
	const char *iname = sc_strtab_intern(&rp->out->model->strings, name);
	uint64_t key = sc_hash_bytes(&iname, sizeof(iname),
				     (uint64_t)kind << 40 ^ (uint64_t)(uint32_t)tid);
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&rp->tracks, key, 0, &inserted);

	if (inserted) {
		*slot = (uint64_t)++rp->next_track;
		if (tid)
			rp_run(rp, INS_TRACK, "itiiii", (int64_t)*slot, rp->guid, rp->nid,
			       (int64_t)rp->proc->pid, (int64_t)tid, rp_string_id(rp, iname));
		else
			rp_run(rp, INS_TRACK, "itiini", (int64_t)*slot, rp->guid, rp->nid,
			       (int64_t)rp->proc->pid, rp_string_id(rp, iname));
	}
	return (int64_t)*slot;
}

static const char *arg_type(char t)
{
	switch (t) {
	case SC_ARG_INT:
		return "int64_t";
	case SC_ARG_UINT:
		return "uint64_t";
	case SC_ARG_DOUBLE:
		return "double";
	case SC_ARG_POINTER:
		return "void*";
	default:
		return "const char*";
	}
}

/* One event shared by every row of `category` that needs nothing of its own (no arguments,
 * correlation or extdata): rocpd rows only reach their category through the event. */
static int64_t shared_event(struct rp *rp, const char *category)
{
	struct rp_recent *r = recent_of(rp, category);
	const char *icat;
	bool inserted;
	uint64_t *slot;

	if (r->ptr == category && r->event_id && !strcmp(r->interned, category))
		return r->event_id;
	icat = sc_strtab_intern(&rp->out->model->strings, category);
	slot = sc_hashmap_upsert(&rp->shared_events, (uint64_t)(uintptr_t)icat, 0, &inserted);
	if (inserted)
		*slot = (uint64_t)rp_event(rp, icat, 0, "{}", "{}", "{}");
	if (r->ptr != category || strcmp(r->interned, category)) {
		r->ptr = category;
		r->interned = icat;
		r->string_id = 0;
	}
	r->event_id = (int64_t)*slot;
	return r->event_id;
}

/* The Python stack that made the CUDA call of `corr` (gpu_python.h) as an event's call_stack
 * and line_info, outermost first like a sample's; false when it has none. */
static bool python_callsite_json(const struct sc_image *img, uint64_t corr, char **call_stack,
				 char **line_info)
{
	const struct sc_py_frame *frames;
	const struct sc_py_callsite *cs = sc_py_callsite_of(img, corr, &frames);
	json_t *st, *li;

	if (!cs || !cs->nframes)
		return false;
	st = json_array();
	li = json_array();
	for (uint16_t i = cs->nframes; i-- > 0;) {
		const struct sc_py_code *c = sc_py_code_of(img, frames[i].code_id);
		const char *name = c ? c->qualname : "[unknown Python code]";
		const char *file = c ? c->filename : "";

		json_array_append_new(st, json_pack("{s:s, s:s}", "name", name, "module", file));
		json_array_append_new(
			li, json_pack("{s:s, s:s, s:I}", "name", name, "file", file, "line",
				      (json_int_t)(c ? sc_py_code_line(c, frames[i].instr) : 0)));
	}
	*call_stack = json_dumps(st, JSON_COMPACT);
	*line_info = json_dumps(li, JSON_COMPACT);
	json_decref(st);
	json_decref(li);
	return true;
}

/* A marker region's event extdata: {"message": its text}, and "unterminated" when the
 * reader closed it. Caller frees. */
static char *marker_extdata(const struct sc_region_ev *r)
{
	json_t *o = json_pack("{s:s}", "message", r->name);
	char *text;

	if (r->unterminated)
		json_object_set_new(o, "unterminated", json_true());
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

static void on_region_end(void *ctx, struct sc_image *img, struct sc_thread *t,
			  const struct sc_region_ev *r)
{
	struct rp *rp = ctx;
	char *py_stack = NULL, *py_lines = NULL;
	bool python = r->corr_id && python_callsite_json(img, r->corr_id, &py_stack, &py_lines);
	/* Markers (NVTX) carry their text as rocprofv3's do, which rocpd summary's markers
	 * summary reads from the event. */
	bool marker = !strncmp(r->category, "MARKER_", 7);
	char *ext = marker ? marker_extdata(r) : NULL;
	int64_t ev = !r->nargs && !r->corr_id && !r->unterminated && !marker
			     ? shared_event(rp, r->category)
			     : rp_event(rp, r->category, (int64_t)r->corr_id,
					python ? py_stack : "{}", python ? py_lines : "{}",
					ext		  ? ext
					: r->unterminated ? "{\"unterminated\":true}"
							  : "{}");
	const char *p = r->args, *end = r->args + r->args_len, *name, *value;
	int64_t position = 0;
	char type;

	free(py_stack);
	free(py_lines);
	free(ext);
	region_row(rp, t->tid, r->start, r->end, r->name, ev);
	while ((p = sc_region_arg_next(p, end, &type, &name, &value)))
		rp_run(rp, INS_ARG, "iittt", ev, position++, arg_type(type), name, value);
}

static void on_mark(void *ctx, struct sc_image *img, struct sc_thread *t,
		    const struct sc_region_ev *r)
{
	struct rp *rp = ctx;
	json_t *ext = json_pack("{s:s}", "message", r->name);
	char *text = json_dumps(ext, JSON_COMPACT);
	int64_t ev = rp_event(rp, r->category, 0, "{}", "{}", text);
	char buf[128];

	(void)img;
	rp_run(rp, INS_SAMPLE, "iiit",
	       track(rp, 1, t->tid, sc_rocpd_category(r->category, buf, sizeof(buf))),
	       (int64_t)r->start, ev, "{}");
	free(text);
	json_decref(ext);
}

static void on_counter(void *ctx, struct sc_image *img, struct sc_thread *t,
		       const struct sc_counter_track *c, uint64_t ts, double value)
{
	struct rp *rp = ctx;
	/* One pmc row per (name, unit) of the process, in all its images (exec): both are
	 * interned, so the pair of pointers names it; hashed whole (64 bits), because a cheap
	 * mix of the two once gave two tracks one key and lost one of them. */
	const void *pair[2] = { c->name, c->unit };
	uint64_t key = sc_hash_bytes(pair, sizeof(pair), 0x636f756e746572);
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&rp->counters, key ? key : 1, 0, &inserted);
	int64_t ev;

	(void)img;
	(void)t;
	if (inserted) {
		char *sql;
		int64_t tr = track(rp, 2, rp->proc->pid, c->name), pmc = ++rp->next_pmc;

		sql = sqlite3_mprintf(
			"INSERT INTO \"rocpd_info_pmc%s\" (id, guid, nid, pid, "
			"agent_id, target_arch, name, symbol, description, component, "
			"units, value_type, is_constant, is_derived) VALUES (%lld, %Q, "
			"%lld, %d, 1, 'CPU', %Q, %Q, %Q, 'syscope', %Q, 'ABS', 0, 0)",
			rp->uuid, (long long)pmc, rp->guid, (long long)rp->nid, (int)rp->proc->pid,
			c->name, c->name, "user counter", c->unit);
		rp_exec(rp, sql);
		sqlite3_free(sql);
		*slot = (uint64_t)tr << 32 | (uint64_t)pmc;
	}
	ev = rp_event(rp, "user_counter", 0, "{}", "{}", "{}");
	rp_run(rp, INS_PMC_EVENT, "tiid", rp->guid, ev, (int64_t)(*slot & 0xffffffff), value);
	rp_run(rp, INS_SAMPLE, "iiit", (int64_t)(*slot >> 32), (int64_t)ts, ev, "{}");
}

/* call_stack and line_info of a stack as JSON: frames outermost first. */
static const char *stack_json(struct rp *rp, uint32_t stack, bool line_info)
{
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&rp->stack_json, (uint64_t)stack + 1, 0, &inserted);

	if (inserted) {
		struct sc_profile_set *set = rp->out->profiles;
		uint32_t *funcs, *lines;
		size_t n = sc_stack_path(set, &rp->out->model->stacks.v[stack], &funcs, &lines);
		json_t *cs = json_array(), *li = json_array();

		for (size_t i = 0; i < n; i++) {
			const struct sc_func *f = sc_func_of(set, funcs[i]);
			const struct sc_line *l = &set->lines.v[lines[i]];

			json_array_append_new(
				cs, json_pack("{s:s, s:s}", "name", f->name, "module", f->module));
			json_array_append_new(li,
					      json_pack("{s:s, s:s, s:I}", "name", f->name, "file",
							l->file, "line", (json_int_t)l->line));
		}
		*slot = rp->json.n + 1;
		*VEC_PUSH(&rp->json) = json_dumps(cs, JSON_COMPACT);
		*VEC_PUSH(&rp->json) = json_dumps(li, JSON_COMPACT);
		json_decref(cs);
		json_decref(li);
	}
	return rp->json.v[*slot - 1 + line_info];
}

static const char *sampling_category(unsigned kind)
{
	return kind == SC_SAMPLE_REALTIME   ? "wall_clock_sampling"
	       : kind == SC_SAMPLE_OVERFLOW ? "overflow_sampling"
					    : "timer_sampling";
}

/* The event of a stack, shared by all its samples: category, call_stack and line_info. */
static int64_t stack_event(struct rp *rp, uint32_t stack)
{
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&rp->stack_events, (uint64_t)stack + 1, 0, &inserted);
	const struct sc_stack *st = &rp->out->model->stacks.v[stack];

	if (inserted)
		*slot = (uint64_t)rp_event(rp, sampling_category(st->kind), (int64_t)stack + 1,
					   stack_json(rp, stack, false),
					   stack_json(rp, stack, true), "{}");
	return (int64_t)*slot;
}

static struct frame_run *run_of(struct rp *rp, struct sc_thread *t, unsigned kind)
{
	uint64_t key = ((uint64_t)(uint32_t)t->tid << 8 | kind) + 1;
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&rp->run_index, key, 0, &inserted);
	struct frame_run *fr;
	char name[128];

	if (!inserted)
		return rp->runs.v[*slot - 1];
	fr = sc_xcalloc(1, sizeof(*fr));
	fr->tid = t->tid;
	fr->kind = kind;
	snprintf(name, sizeof(name), "Thread %u (S%s) %d", t->index == UINT32_MAX ? 0 : t->index,
		 kind == SC_SAMPLE_REALTIME   ? ", wall"
		 : kind == SC_SAMPLE_OVERFLOW ? ", overflow"
					      : "",
		 (int)t->tid);
	fr->track = track(rp, 3 + kind, t->tid, name);
	*VEC_PUSH(&rp->runs) = fr;
	*slot = rp->runs.n;
	return fr;
}

/* Close the frames of `fr` from depth `keep` on, at `ts`. */
static void close_frames(struct rp *rp, struct frame_run *fr, size_t keep, uint64_t ts)
{
	const char *cat = sampling_category(fr->kind);

	while (fr->funcs.n > keep) {
		size_t i = --fr->funcs.n;
		const struct sc_func *f = sc_func_of(rp->out->profiles, fr->funcs.v[i]);

		region_row(rp, fr->tid, fr->starts.v[i], ts, f->name, shared_event(rp, cat));
	}
	fr->starts.n = fr->funcs.n;
}

static void on_sample(void *ctx, struct sc_image *img, struct sc_thread *t, uint64_t ts,
		      uint64_t cpu_ns, uint32_t stack)
{
	struct rp *rp = ctx;
	const struct sc_stack *st = &rp->out->model->stacks.v[stack];
	struct frame_run *fr = run_of(rp, t, st->kind);
	uint32_t *funcs, *lines;
	size_t n, same = 0;
	char ext[48];

	(void)img;
	/* The thread's CPU time lets a reader weigh samples as the session's own profiles do. */
	snprintf(ext, sizeof(ext), "{\"cpu_ns\":%llu}", (unsigned long long)cpu_ns);
	rp_run(rp, INS_SAMPLE, "iiit", fr->track, (int64_t)ts, stack_event(rp, stack), ext);
	n = sc_stack_path(rp->out->profiles, st, &funcs, &lines);
	while (same < n && same < fr->funcs.n && fr->funcs.v[same] == funcs[same])
		same++;
	close_frames(rp, fr, same, ts);
	for (size_t i = same; i < n; i++) {
		*VEC_PUSH(&fr->funcs) = funcs[i];
		*VEC_PUSH(&fr->starts) = ts;
	}
	if (!fr->first_ts)
		fr->first_ts = ts;
	fr->last_weight_ns = ts > fr->last_ts && fr->last_ts ? ts - fr->last_ts : 0;
	fr->last_ts = ts;
}

static void finish_runs(struct rp *rp)
{
	for (size_t i = 0; i < rp->runs.n; i++) {
		struct frame_run *fr = rp->runs.v[i];
		uint64_t end = fr->last_ts + fr->last_weight_ns; /* the last sample's share */

		close_frames(rp, fr, 0, end);
		region_row(rp, fr->tid, fr->first_ts, end, "samples [syscope]",
			   shared_event(rp, sampling_category(fr->kind)));
		VEC_FREE(&fr->funcs);
		VEC_FREE(&fr->starts);
		free(fr);
	}
	VEC_FREE(&rp->runs);
}

static const struct sc_timeline_ops rp_ops = {
	.region_end = on_region_end,
	.mark = on_mark,
	.counter = on_counter,
	.sample = on_sample,
	.gpu_op = rp_gpu_op,
};

/* A guid unique per (host, pid, start time). */
static void make_guid(struct rp *rp, const struct sc_image *img)
{
	uint64_t h = sc_hash_bytes(img->hostname, strlen(img->hostname),
				   (uint64_t)(uint32_t)img->pid << 32 ^ img->start_ns);

	sc_rocpd_make_guid(img->start_realtime_ns, h, rp->guid, sizeof(rp->guid));
	sc_rocpd_uuid(rp->guid, rp->uuid, sizeof(rp->uuid));
	rp->nid = (int64_t)(sc_hash_bytes(img->hostname, strlen(img->hostname), 7) & 0x7fffffff);
}

/* `sql` with {{nid}} and {{pid}} replaced by this process's (constant in every row of a
 * database: literals, not bound row after row). Frees `sql`. */
static char *with_ids(struct rp *rp, char *sql)
{
	VEC(char) out = { 0 };
	char nid[24], pid[24];

	snprintf(nid, sizeof(nid), "%lld", (long long)rp->nid);
	snprintf(pid, sizeof(pid), "%d", (int)rp->proc->pid);
	for (const char *p = sql; *p;) {
		const char *val = !strncmp(p, "{{nid}}", 7)   ? nid
				  : !strncmp(p, "{{pid}}", 7) ? pid
							      : NULL;

		if (!val) {
			*VEC_PUSH(&out) = *p++;
			continue;
		}
		for (; *val; val++)
			*VEC_PUSH(&out) = *val;
		p += 7;
	}
	*VEC_PUSH(&out) = '\0';
	free(sql);
	return out.v;
}

static void create_schema(struct rp *rp)
{
	char err[512];

	if (sc_rocpd_create(rp->db, rp->guid, err, sizeof(err))) {
		rp->error = 1;
		snprintf(rp->errmsg, sizeof(rp->errmsg), "%s", err);
		return;
	}
	for (int i = 0; i < INS_COUNT && !rp->error; i++) {
		char *one = with_ids(rp, sc_rocpd_substitute(insert_sql[i], rp->uuid, rp->guid));
		const char *tuple = strstr(one, "VALUES ") + 7;
		VEC(char) multi = { 0 };

		/* "INSERT ... VALUES (?, ...)" becomes "INSERT ... VALUES (?, ...), (?, ...), ..." */
		for (const char *c = one; *c; c++)
			*VEC_PUSH(&multi) = *c;
		for (int r = 1; r < RP_BATCH; r++) {
			*VEC_PUSH(&multi) = ',';
			for (const char *c = tuple; *c; c++)
				*VEC_PUSH(&multi) = *c;
		}
		*VEC_PUSH(&multi) = '\0';
		if (sqlite3_prepare_v2(rp->db, one, -1, &rp->ins[i].one, NULL) != SQLITE_OK ||
		    sqlite3_prepare_v2(rp->db, multi.v, -1, &rp->ins[i].multi, NULL) != SQLITE_OK)
			fail(rp, one);
		free(one);
		VEC_FREE(&multi);
	}
}

/* "KEY=value" strings as a JSON object. */
static json_t *key_values(const char *const *v, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(v[i], '=');
		char *key;

		if (!eq)
			continue;
		key = sc_xstrndup(v[i], (size_t)(eq - v[i]));
		json_object_set_new(o, key, json_string(eq + 1));
		free(key);
	}
	return o;
}

static char *dump(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	return s;
}

/* The runtime's notes of process `pid` ("5 children were not profiled...", what was lost and
 * why): rocpd has no table for them, so that a database converted or merged later still
 * says them, once per process. */
static json_t *notes_of(const struct sc_model *m, int32_t pid)
{
	json_t *arr = json_array();

	for (size_t i = 0; m && i < m->notes.n; i++)
		if (m->notes.v[i].pid == pid)
			json_array_append_new(arr, json_pack("{s:I, s:i, s:s}", "ts",
							     (json_int_t)m->notes.v[i].ts, "level",
							     (int)m->notes.v[i].level, "text",
							     m->notes.v[i].text));
	return arr;
}

/* What rocpd has no column for, kept for syscope's readers (convert from a database):
 * executable, cwd, exact argv, wall-clock start, how it ended, losses, settings, notes. */
static char *process_extdata(const struct sc_model *m, const struct sc_process *p)
{
	const struct sc_image *first = p->images.v[0], *last = p->images.v[p->images.n - 1];
	json_t *argv = json_array();
	uint64_t lost[3] = { 0 };

	for (size_t i = 0; i < last->argv.n; i++)
		json_array_append_new(argv, json_string(last->argv.v[i]));
	for (size_t i = 0; i < p->images.n; i++) {
		lost[0] += p->images.v[i]->lost_records;
		lost[1] += p->images.v[i]->lost_bytes;
		lost[2] += p->images.v[i]->lost_samples;
	}
	return dump(json_pack(
		"{s:{s:s, s:s?, s:s?, s:o, s:I, s:s, s:i, s:I, s:I, s:I, s:o, s:o}}", "syscope",
		"version", SYSCOPE_VERSION, "exe", last->exe, "cwd", last->cwd, "argv", argv,
		"start_realtime_ns", (json_int_t)first->start_realtime_ns, "end_reason",
		sc_end_reason_text(last->end_reason), "end_status", last->end_status,
		"lost_records", (json_int_t)lost[0], "lost_bytes", (json_int_t)lost[1],
		"lost_samples", (json_int_t)lost[2], "settings",
		key_values(first->settings.v, first->settings.n), "notes", notes_of(m, p->pid)));
}

static char *thread_extdata(const struct sc_thread *t)
{
	json_t *samplers = json_array();

	for (unsigned k = 0; k < SC_KINDS; k++)
		if (t->period_ns[k] || t->mechanism[k] || t->sampler_error[k])
			json_array_append_new(samplers,
					      json_pack("{s:i, s:I, s:i, s:I, s:i}", "kind", (int)k,
							"period_ns", (json_int_t)t->period_ns[k],
							"mechanism", (int)t->mechanism[k],
							"throttled_period_ns",
							(json_int_t)t->throttled_period_ns[k],
							"error", (int)t->sampler_error[k]));
	return dump(json_pack("{s:i, s:i, s:I, s:I, s:o}", "index",
			      t->index == UINT32_MAX ? -1 : (int)t->index, "creator",
			      (int)t->creator, "begin_cpu_ns", (json_int_t)t->begin_cpu,
			      "end_cpu_ns", (json_int_t)t->end_cpu, "samplers", samplers));
}

static void describe_process(struct rp *rp)
{
	const struct sc_process *p = rp->proc;
	const struct sc_image *first = p->images.v[0], *last = p->images.v[p->images.n - 1];
	uint64_t end = last->end_ns ? last->end_ns : last->last_ts;
	VEC(char) cmd = { 0 };
	char *env = dump(key_values(last->env.v, last->env.n)),
	     *ext = process_extdata(rp->out->model, p), *sql;

	for (size_t i = 0; i < last->argv.n; i++) {
		if (i)
			*VEC_PUSH(&cmd) = ' ';
		for (const char *c = last->argv.v[i]; *c; c++)
			*VEC_PUSH(&cmd) = *c;
	}
	*VEC_PUSH(&cmd) = '\0';
	sql = sqlite3_mprintf("INSERT INTO \"rocpd_info_node%s\" (id, guid, hash, machine_id, "
			      "system_name, hostname) VALUES (%lld, %Q, %lld, %Q, 'Linux', %Q)",
			      rp->uuid, (long long)rp->nid, rp->guid, (long long)rp->nid,
			      first->hostname, first->hostname);
	rp_exec(rp, sql);
	sqlite3_free(sql);
	sql = sqlite3_mprintf("INSERT INTO \"rocpd_info_process%s\" (id, guid, nid, ppid, pid, "
			      "init, fini, start, end, command, environment, extdata) VALUES (%d, "
			      "%Q, %lld, %d, %d, %lld, %lld, %lld, %lld, %Q, %Q, %Q)",
			      rp->uuid, (int)p->pid, rp->guid, (long long)rp->nid, (int)p->ppid,
			      (int)p->pid, (long long)first->start_ns, (long long)end,
			      (long long)first->start_ns, (long long)end,
			      cmd.v[0] ? cmd.v : (last->exe ? last->exe : "?"), env, ext);
	rp_exec(rp, sql);
	sqlite3_free(sql);
	free(env);
	free(ext);
	VEC_FREE(&cmd);
	for (size_t i = 0; i < p->threads.n; i++) {
		const struct sc_thread *t = &p->threads.v[i];
		char *text = thread_extdata(t);

		sql = sqlite3_mprintf(
			"INSERT INTO \"rocpd_info_thread%s\" (id, guid, nid, ppid, "
			"pid, tid, name, start, end, extdata) VALUES (%d, %Q, %lld, %d, %d, %d, "
			"%Q, %lld, %lld, %Q)",
			rp->uuid, (int)t->tid, rp->guid, (long long)rp->nid, (int)p->ppid,
			(int)p->pid, (int)t->tid, t->name,
			(long long)(t->begin_ts ? t->begin_ts : first->start_ns),
			(long long)(t->end_ts ? t->end_ts : end), text);
		rp_exec(rp, sql);
		sqlite3_free(sql);
		free(text);
	}
	/* The host as agent 1 (absolute index 0), and the default queue and stream. */
	sql = sqlite3_mprintf(
		"INSERT INTO \"rocpd_info_agent%s\" (id, guid, nid, pid, type, "
		"absolute_index, logical_index, type_index, uuid, name, model_name, "
		"vendor_name, product_name, user_name) VALUES (1, %Q, %lld, %d, 'CPU', "
		"0, 0, 0, 0, 'CPU', '', '', '', '')",
		rp->uuid, rp->guid, (long long)rp->nid, (int)p->pid);
	rp_exec(rp, sql);
	sqlite3_free(sql);
	sql = sqlite3_mprintf("INSERT INTO \"rocpd_info_queue%s\" (id, guid, nid, pid, name) "
			      "VALUES (0, %Q, %lld, %d, 'Default Queue'); INSERT INTO "
			      "\"rocpd_info_stream%s\" (id, guid, nid, pid, name) VALUES (0, %Q, "
			      "%lld, %d, 'Default Stream')",
			      rp->uuid, rp->guid, (long long)rp->nid, (int)p->pid, rp->uuid,
			      rp->guid, (long long)rp->nid, (int)p->pid);
	rp_exec(rp, sql);
	sqlite3_free(sql);
	rp_string_of(rp, ""); /* always present, as rocpd readers expect */
	rp_gpu_describe(rp);
}

/* Settings of a file built once, by one writer, and renamed into place only when complete:
 * no journal, no syncs, the lock held throughout, temporaries in memory. A process with
 * many rows gets 64 KiB pages (fewer page splits and writes; a few pages per table would
 * make the many small databases of a big session large) and a 32 MiB page cache. */
static const char *bulk_pragmas(const struct sc_process *p)
{
	uint64_t rows = 0;

	for (size_t i = 0; i < p->images.n; i++)
		rows += p->images.v[i]->regions + p->images.v[i]->marks +
			p->images.v[i]->counter_values;
	if (rows < 100000)
		return "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA locking_mode = "
		       "EXCLUSIVE; PRAGMA temp_store = MEMORY; BEGIN";
	return "PRAGMA page_size = 65536; PRAGMA cache_size = -32768; PRAGMA journal_mode = OFF; "
	       "PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE; PRAGMA temp_store = "
	       "MEMORY; BEGIN";
}

static int write_process(struct sc_output *out, struct sc_process *p)
{
	struct rp rp = { .out = out, .proc = p };
	struct sc_timeline_stats stats = { 0 };
	struct sc_hashmap *maps[] = { &rp.strings,	 &rp.tracks,	  &rp.counters,
				      &rp.stack_json,	 &rp.run_index,	  &rp.gpu_ids,
				      &rp.shared_events, &rp.stack_events };
	char *path = sc_xasprintf("%s/rocpd-%d.db", out->dir, (int)p->pid);
	struct sc_out_file tmp;
	int rc = 0;

	if (sc_out_begin(&tmp, path, 0644, SC_OUT_NAMED, rp.errmsg, sizeof(rp.errmsg))) {
		*VEC_PUSH(&out->errors) = sc_xstrdup(rp.errmsg);
		free(path);
		return -EIO;
	}
	/* One connection in one thread: no locking inside SQLite. */
	if (sqlite3_open_v2(tmp.tmp, &rp.db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
			    NULL) != SQLITE_OK) {
		*VEC_PUSH(&out->errors) =
			sc_xasprintf("cannot create %s: %s", tmp.tmp, sqlite3_errmsg(rp.db));
		sqlite3_close(rp.db);
		sc_out_abort(&tmp, NULL);
		free(path);
		return -EIO;
	}
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		sc_hashmap_init(maps[i]);
	make_guid(&rp, p->images.v[0]);
	rp_exec(&rp, bulk_pragmas(p));
	create_schema(&rp);
	describe_process(&rp);
	if (!rp.error && sc_output_threads(out) > 1)
		rp_queue_start(&rp);
	for (size_t i = 0; i < p->images.n && !rp.error; i++)
		sc_timeline_replay(out->model, p->images.v[i], &rp_ops, &rp, &stats);
	finish_runs(&rp);
	rp_flush(&rp);
	rp_queue_finish(&rp);
	rp_exec(&rp, "COMMIT");
	for (int i = 0; i < INS_COUNT; i++) {
		sqlite3_finalize(rp.ins[i].one);
		sqlite3_finalize(rp.ins[i].multi);
		VEC_FREE(&rp.ins[i].values);
		VEC_FREE(&rp.ins[i].text);
	}
	if (sqlite3_close(rp.db) != SQLITE_OK && !rp.error) {
		rp.error = 1;
		snprintf(rp.errmsg, sizeof(rp.errmsg), "closing the database failed");
	}
	if (rp.error) {
		*VEC_PUSH(&out->errors) = sc_xasprintf("cannot write %s: %s", path, rp.errmsg);
		sc_out_abort(&tmp, NULL);
		rc = -EIO;
	} else if (sc_out_commit(&tmp, NULL, rp.errmsg, sizeof(rp.errmsg))) {
		*VEC_PUSH(&out->errors) = sc_xstrdup(rp.errmsg);
		rc = -EIO;
	} else {
		*VEC_PUSH(&out->written) = sc_xasprintf("rocpd-%d.db", (int)p->pid);
	}
	for (size_t i = 0; i < rp.json.n; i++)
		free(rp.json.v[i]);
	VEC_FREE(&rp.json);
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		sc_hashmap_free(maps[i]);
	free(path);
	return rc;
}

static int write_rocpd(struct sc_output *out)
{
	int rc = 0;

	for (size_t i = 0; i < out->model->processes.n; i++)
		if (write_process(out, out->model->processes.v[i]))
			rc = -1;
	return rc;
}

const struct sc_sink sc_sink_rocpd = {
	.token = "rocpd",
	.description = "rocpd SQLite database, schema version 3 (rocpd-<pid>.db)",
	.write = write_rocpd,
	.replays = true,
};
