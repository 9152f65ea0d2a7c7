/* SPDX-License-Identifier: MIT */
/*
 * rocpd databases into the model. Every process of every file becomes an image whose
 * records are made from the database on each pass, in this order: process, environment,
 * settings, threads, counter tracks, GPU agents and streams; then per thread its regions
 * (begin and end, nested), marks and samples; counter values; GPU work; thread ends.
 *
 * What is read, and from where (docs/output-formats.md, rocpd):
 *   processes, threads   rocpd_info_process, rocpd_info_thread (+ syscope's extdata)
 *   regions              rocpd_region + event (category, stack_id as correlation) + rocpd_arg,
 *                        except the regions made of sampled frames (categories *_sampling),
 *                        which are the samples again
 *   marks                samples whose event extdata has a "message"
 *   call-stack samples   samples in a *_sampling category, frames from the event's
 *                        call_stack and line_info JSON; weights from extdata "cpu_ns" when
 *                        syscope wrote it, else from the time between samples
 *   counters             rocpd_pmc_event values that have a sample (a time and a track)
 *   GPU                  agents, streams, kernel dispatches (with their symbols), memory
 *                        copies and allocations
 * Rows the model has no place for (PMC values tied to kernel dispatches, code objects) are
 * not converted; the database keeps them.
 */
#define PR_FMT "import: "
#include "import.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/progress.h"
#include "../store/rocpd.h"
#include "../store/rocpd_read.h"
#include "timeline.h"

#define SC_MAX_IMPORT_FRAMES 1024 /* deeper stacks lose their outermost frames */
#define SAMPLING_CATEGORIES "('timer_sampling', 'wall_clock_sampling', 'overflow_sampling')"

struct importer;

/* A growing buffer of NUL-terminated strings. */
struct strings {
	VEC(char) v;
};

/* One process of one file: the image it becomes and what is needed to make its records. */
struct source {
	struct importer *imp;
	char *guid;
	int64_t proc_row; /* rocpd_info_process.id */
	size_t index;	  /* in importer.sources */
	int32_t pid, main_tid;
	const char *origin;
	json_t *ext;	    /* the process's extdata */
	json_t *env;	    /* its environment */
	sqlite3_stmt *args; /* a region's arguments (load_args), NULL when it has none */
	bool args_loaded;
	struct sc_hashmap tids;	  /* info_thread row id + 1 -> OS tid */
	struct sc_hashmap agents; /* info_agent row id + 1 -> device id, or SC_AGENT_HOST */
	struct sc_hashmap names;  /* interned GPU op name -> string id */
	struct sc_hashmap frames; /* hash of a frame -> index in symframes + 1 */
	uint32_t next_name;
	double sampling_period_ns;
	/* per pass */
	sc_raw_record_fn cb;
	void *ctx;
	const struct sc_image *img;
	int stop;
	uint64_t rows_read;	   /* not yet added to the progress line */
	struct sc_hashmap emitted; /* string ids sent in this pass */
};

struct importer {
	struct sc_rocpd_set set;
	struct sc_model *m;
	struct sc_session *session;
	VEC(struct source *) sources;
	VEC(char *) paths;
	VEC(uint64_t) buf; /* the record being made, 8-byte aligned */
	bool args_table;   /* temp.sc_args made (load_args) */
};

static void problem(struct source *s, const char *what)
{
	sc_session_problem(s->imp->session, "%s: cannot read %s: %s", s->origin, what,
			   sqlite3_errmsg(s->imp->set.db));
}

/* A statement with ?1 = the file's guid and ?2 = the process row, when the SQL uses them. */
static sqlite3_stmt *query(struct source *s, const char *sql)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(s->imp->set.db, sql, -1, &st, NULL) != SQLITE_OK) {
		problem(s, sql);
		return NULL;
	}
	if (sqlite3_bind_parameter_count(st) >= 1)
		sqlite3_bind_text(st, 1, s->guid, -1, SQLITE_STATIC);
	if (sqlite3_bind_parameter_count(st) >= 2)
		sqlite3_bind_int64(st, 2, s->proc_row);
	return st;
}

static const char *text(sqlite3_stmt *st, int col)
{
	const char *t = (const char *)sqlite3_column_text(st, col);

	return t ? t : "";
}

static uint64_t u64(sqlite3_stmt *st, int col)
{
	sqlite3_int64 v = sqlite3_column_int64(st, col);

	return v > 0 ? (uint64_t)v : 0;
}

static int32_t tid_of(struct source *s, sqlite3_stmt *st, int col)
{
	const uint64_t *slot;

	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return s->main_tid;
	slot = sc_hashmap_get(&s->tids, (uint64_t)sqlite3_column_int64(st, col) + 1);
	return slot ? (int32_t)*slot : (int32_t)sqlite3_column_int64(st, col);
}

/* A row read on a pass: the progress line counts them (sc_model_import_rocpd). */
static void row_read(struct source *s)
{
	if (++s->rows_read == 4096) {
		sc_progress_add(s->rows_read);
		s->rows_read = 0;
	}
}

/* --- making records --- */

/* Send a record made of `fixed` (a record struct, header filled here) and `tail`. */
static void emit(struct source *s, int32_t tid, uint16_t type, uint16_t flags, const void *fixed,
		 size_t fixed_len, const void *tail, size_t tail_len)
{
	struct importer *imp = s->imp;
	size_t size = sc_record_align((uint32_t)(fixed_len + tail_len));
	struct sc_record *rec;

	if (s->stop)
		return;
	VEC_RESERVE(&imp->buf, size / 8);
	memset(imp->buf.v, 0, size);
	memcpy(imp->buf.v, fixed, fixed_len);
	if (tail_len)
		memcpy((char *)imp->buf.v + fixed_len, tail, tail_len);
	rec = (struct sc_record *)imp->buf.v;
	rec->size = (uint32_t)size;
	rec->type = type;
	rec->flags = flags;
	if (sc_record_well_formed(rec))
		s->stop = s->cb(s->ctx, tid, rec, 0);
}

/* emit, into memory of the record's own that stays valid until the caller frees it: for a
 * region's begin record, whose name and arguments the replay keeps pointing at until the
 * region ends (emit's buffer is reused by the next record). Returns NULL when stopped. */
static void *emit_held(struct source *s, int32_t tid, uint16_t type, const void *fixed,
		       size_t fixed_len, const void *tail, size_t tail_len)
{
	size_t size = sc_record_align((uint32_t)(fixed_len + tail_len));
	struct sc_record *rec;

	if (s->stop)
		return NULL;
	rec = sc_xcalloc(1, size);
	memcpy(rec, fixed, fixed_len);
	if (tail_len)
		memcpy((char *)rec + fixed_len, tail, tail_len);
	rec->size = (uint32_t)size;
	rec->type = type;
	rec->flags = 0;
	if (sc_record_well_formed(rec))
		s->stop = s->cb(s->ctx, tid, rec, 0);
	return rec;
}

/* Returns the bytes added (the length a record's *_len field wants). */
static uint32_t strings_add(struct strings *b, const char *str)
{
	size_t n = strlen(str) + 1;

	VEC_RESERVE(&b->v, b->v.n + n);
	memcpy(b->v.v + b->v.n, str, n);
	b->v.n += n;
	return (uint32_t)n;
}

static json_t *ext_get(const struct source *s, const char *key)
{
	return json_object_get(json_object_get(s->ext, "syscope"), key);
}

/* The process's notes, kept in its extdata by the rocpd sink (one copy per process, so a
 * merged database says each process's once). */
static void import_notes(struct sc_model *m, int32_t pid, json_t *notes)
{
	size_t i;
	json_t *n;

	json_array_foreach (notes, i, n) {
		const char *text = json_string_value(json_object_get(n, "text"));
		struct sc_note *note;

		if (!text)
			continue;
		note = VEC_PUSH(&m->notes);
		note->pid = pid;
		note->ts = (uint64_t)json_integer_value(json_object_get(n, "ts"));
		note->level = (uint32_t)json_integer_value(json_object_get(n, "level"));
		note->text = sc_strtab_intern(&m->strings, text);
	}
}

static void emit_process(struct source *s, sqlite3_stmt *p)
{
	struct sc_rec_process r = { .ts = s->img->start_ns, .pid = s->pid };
	struct strings b = { 0 };
	json_t *argv = ext_get(s, "argv"), *v;
	const char *command = text(p, 8), *exe = json_string_value(ext_get(s, "exe"));
	size_t i;

	r.ppid = (int32_t)sqlite3_column_int64(p, 3);
	/* exe, argv (syscope's, or the command split on spaces), cwd */
	if (exe) {
		strings_add(&b, exe);
	} else {
		char *first = sc_xstrndup(command, strcspn(command, " "));

		strings_add(&b, first);
		free(first);
	}
	r.exe_len = (uint32_t)b.v.n;
	if (json_is_array(argv)) {
		json_array_foreach (argv, i, v)
			strings_add(&b, json_string_value(v) ? json_string_value(v) : "");
	} else {
		char *copy = sc_xstrdup(command), *save = NULL;

		for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
			strings_add(&b, t);
		free(copy);
	}
	r.cmdline_len = (uint32_t)b.v.n - r.exe_len;
	if (json_string_value(ext_get(s, "cwd")))
		r.cwd_len = strings_add(&b, json_string_value(ext_get(s, "cwd")));
	emit(s, s->main_tid, SC_REC_PROCESS, 0, &r, sizeof(r), b.v.v, b.v.n);
	VEC_FREE(&b.v);
}

/* ENVIRON from the environment JSON object, SETTINGS from syscope's extdata. */
static void emit_key_values(struct source *s, uint16_t type, json_t *obj)
{
	struct strings b = { 0 };
	struct sc_record hdr = { 0 };
	const char *key;
	json_t *v;

	if (!json_is_object(obj))
		return;
	json_object_foreach (obj, key, v) {
		char *kv = sc_xasprintf("%s=%s", key,
					json_string_value(v) ? json_string_value(v) : "");

		strings_add(&b, kv);
		free(kv);
	}
	if (b.v.n)
		emit(s, s->main_tid, type, 0, &hdr, sizeof(hdr), b.v.v, b.v.n);
	VEC_FREE(&b.v);
}

static void emit_threads(struct source *s, bool end)
{
	sqlite3_stmt *st =
		query(s, "SELECT id, tid, name, start, end, extdata FROM "
			 "rocpd_info_thread WHERE guid = ?1 AND pid = ?2 ORDER BY start, "
			 "id");
	uint32_t index = 0;

	while (st && sqlite3_step(st) == SQLITE_ROW) {
		json_t *ext = json_loads(text(st, 5), 0, NULL), *samplers, *e;
		int32_t tid = (int32_t)sqlite3_column_int64(st, 1);
		struct sc_rec_thread r = { .tid = tid };
		json_t *idx = json_object_get(ext, "index");
		size_t i;

		r.ts = end ? u64(st, 4) : u64(st, 3);
		r.index = json_is_integer(idx) ? (uint32_t)json_integer_value(idx) : index;
		r.creator_tid = (int32_t)json_integer_value(json_object_get(ext, "creator"));
		/* Without syscope's CPU times, weights come from wall time (see emit_samples). */
		e = json_object_get(ext, end ? "end_cpu_ns" : "begin_cpu_ns");
		r.cpu_ns = json_is_integer(e) ? (uint64_t)json_integer_value(e) : r.ts;
		index++;
		if (end) {
			emit(s, tid, SC_REC_THREAD_END, 0, &r, sizeof(r), NULL, 0);
			json_decref(ext);
			continue;
		}
		emit(s, tid, SC_REC_THREAD_BEGIN, 0, &r, sizeof(r), NULL, 0);
		if (*text(st, 2)) {
			struct sc_rec_thread_name n = { .ts = r.ts };

			snprintf(n.name, sizeof(n.name), "%s", text(st, 2));
			emit(s, tid, SC_REC_THREAD_NAME, 0, &n, sizeof(n), NULL, 0);
		}
		samplers = json_object_get(ext, "samplers");
		json_array_foreach (samplers, i, e) {
			struct sc_rec_sampler sm = { .ts = r.ts };
			uint16_t flags = 0;

			sm.kind = (uint16_t)json_integer_value(json_object_get(e, "kind"));
			sm.period_ns =
				(uint64_t)json_integer_value(json_object_get(e, "period_ns"));
			sm.mechanism =
				(uint16_t)json_integer_value(json_object_get(e, "mechanism"));
			sm.error = (int32_t)json_integer_value(json_object_get(e, "error"));
			emit(s, tid, SC_REC_SAMPLER, 0, &sm, sizeof(sm), NULL, 0);
			if (json_integer_value(json_object_get(e, "throttled_period_ns"))) {
				sm.period_ns = (uint64_t)json_integer_value(
					json_object_get(e, "throttled_period_ns"));
				flags = SC_SAMPLER_THROTTLED;
				emit(s, tid, SC_REC_SAMPLER, flags, &sm, sizeof(sm), NULL, 0);
			}
		}
		if (!json_is_array(samplers) && s->sampling_period_ns > 0) {
			struct sc_rec_sampler sm = { .ts = r.ts,
						     .kind = SC_SAMPLE_CPUTIME,
						     .period_ns = (uint64_t)s->sampling_period_ns };

			emit(s, tid, SC_REC_SAMPLER, 0, &sm, sizeof(sm), NULL, 0);
		}
		json_decref(ext);
	}
	sqlite3_finalize(st);
}

static void emit_counter_tracks(struct source *s)
{
	sqlite3_stmt *st = query(s, "SELECT id, name, units FROM rocpd_info_pmc WHERE guid = ?1 "
				    "AND pid = ?2 ORDER BY id");

	while (st && sqlite3_step(st) == SQLITE_ROW) {
		struct sc_rec_counter_track r = { .ts = s->img->start_ns };
		struct strings b = { 0 };

		r.id = (uint32_t)sqlite3_column_int64(st, 0);
		r.name_len = strings_add(&b, text(st, 1));
		r.unit_len = strings_add(&b, text(st, 2));
		emit(s, s->main_tid, SC_REC_COUNTER_TRACK, 0, &r, sizeof(r), b.v.v, b.v.n);
		VEC_FREE(&b.v);
	}
	sqlite3_finalize(st);
}

/* --- GPU --- */

static uint32_t agent_of(struct source *s, sqlite3_stmt *st, int col)
{
	const uint64_t *slot;

	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return SC_AGENT_HOST;
	slot = sc_hashmap_get(&s->agents, (uint64_t)sqlite3_column_int64(st, col) + 1);
	return slot ? (uint32_t)*slot : SC_AGENT_HOST;
}

static void emit_agents(struct source *s)
{
	sqlite3_stmt *st =
		query(s, "SELECT id, type, logical_index, name, vendor_name, extdata "
			 "FROM rocpd_info_agent WHERE guid = ?1 AND pid = ?2 ORDER BY id");

	while (st && sqlite3_step(st) == SQLITE_ROW) {
		struct sc_rec_gpu_agent r = { .ts = s->img->start_ns, .type = SC_AGENT_GPU };
		struct strings b = { 0 };

		if (strcmp(text(st, 1), "GPU")) {
			*sc_hashmap_upsert(&s->agents, (uint64_t)sqlite3_column_int64(st, 0) + 1, 0,
					   NULL) = SC_AGENT_HOST;
			continue;
		}
		r.id = (uint32_t)sqlite3_column_int64(st, 2);
		*sc_hashmap_upsert(&s->agents, (uint64_t)sqlite3_column_int64(st, 0) + 1, 0, NULL) =
			r.id;
		r.name_len = strings_add(&b, text(st, 3));
		r.vendor_len = strings_add(&b, text(st, 4));
		emit(s, s->main_tid, SC_REC_GPU_AGENT, 0, &r, sizeof(r), b.v.v, b.v.n);
		VEC_FREE(&b.v);
	}
	sqlite3_finalize(st);
}

/* The stream a row's stream_id names: (agent, stream) as syscope's extdata has them, else
 * the row id on the op's agent. */
static void emit_streams(struct source *s)
{
	sqlite3_stmt *st = query(s, "SELECT id, name, json_extract(extdata, '$.stream_id'), "
				    "json_extract(extdata, '$.agent') FROM rocpd_info_stream WHERE "
				    "guid = ?1 AND pid = ?2 AND json_valid(extdata) AND "
				    "json_extract(extdata, '$.stream_id') IS NOT NULL");

	while (st && sqlite3_step(st) == SQLITE_ROW) {
		struct sc_rec_gpu_stream r = { .ts = s->img->start_ns };
		const char *name = text(st, 1);

		r.stream = u64(st, 2);
		r.agent = (uint32_t)sqlite3_column_int64(st, 3);
		r.name_len = (uint32_t)strlen(name) + 1;
		emit(s, s->main_tid, SC_REC_GPU_STREAM, 0, &r, sizeof(r), name, r.name_len);
	}
	sqlite3_finalize(st);
}

/* The string id of a GPU op name, sent before the first op of this pass that uses it. */
static uint32_t name_id(struct source *s, const char *name)
{
	const char *iname = sc_strtab_intern(&s->imp->m->strings, name);
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&s->names, (uint64_t)(uintptr_t)iname, 0, &inserted);

	if (inserted)
		*slot = ++s->next_name;
	sc_hashmap_upsert(&s->emitted, *slot, 1, &inserted);
	if (inserted) {
		struct sc_rec_string r = { .ts = s->img->start_ns, .id = (uint32_t)*slot };

		r.len = (uint32_t)strlen(iname) + 1;
		emit(s, s->main_tid, SC_REC_STRING, 0, &r, sizeof(r), iname, r.len);
	}
	return (uint32_t)*slot;
}

/* stream_id column -> the stream number GPU ops carry. */
static uint64_t stream_of(sqlite3_stmt *st, int col_id, int col_ext_stream)
{
	if (sqlite3_column_type(st, col_ext_stream) != SQLITE_NULL)
		return u64(st, col_ext_stream);
	return u64(st, col_id);
}

static void emit_kernels(struct source *s)
{
	sqlite3_stmt *st = query(
		s, "SELECT K.tid, K.agent_id, K.stream_id, K.start, K.end, "
		   "K.private_segment_size, K.group_segment_size, K.workgroup_size_x, "
		   "K.workgroup_size_y, K.workgroup_size_z, K.grid_size_x, K.grid_size_y, "
		   "K.grid_size_z, CASE WHEN json_valid(K.extdata) THEN json_extract(K.extdata, "
		   "'$.grid') END, Y.kernel_name, Y.display_name, Y.group_segment_size, "
		   "Y.arch_vgpr_count, E.stack_id, (SELECT json_extract(T.extdata, '$.stream_id') "
		   "FROM rocpd_info_stream T WHERE T.id = K.stream_id AND T.guid = K.guid AND "
		   "json_valid(T.extdata)) FROM rocpd_kernel_dispatch K LEFT JOIN "
		   "rocpd_info_kernel_symbol Y ON Y.id = K.kernel_id AND Y.guid = K.guid LEFT JOIN "
		   "rocpd_event E ON E.id = K.event_id AND E.guid = K.guid WHERE K.guid = ?1 AND "
		   "K.pid = ?2 ORDER BY K.start, K.id");

	while (st && sqlite3_step(st) == SQLITE_ROW && !s->stop) {
		row_read(s);
		struct sc_rec_gpu_op o = { .kind = SC_GPU_KERNEL };
		json_t *grid = json_loads(text(st, 13), JSON_DECODE_ANY, NULL);
		const char *name = *text(st, 14) ? text(st, 14) : text(st, 15);

		o.tid = tid_of(s, st, 0);
		o.agent = agent_of(s, st, 1);
		o.stream = stream_of(st, 2, 19);
		o.start = u64(st, 3);
		o.end = u64(st, 4) > o.start ? u64(st, 4) : o.start;
		o.local_per_thread = (uint32_t)u64(st, 5);
		o.shared_dynamic = (uint32_t)u64(st, 6);
		for (int d = 0; d < 3; d++) {
			uint64_t wg = u64(st, 7 + d), items = u64(st, 10 + d);

			o.block[d] = (uint32_t)wg;
			/* syscope keeps CUDA's grid in blocks; rocpd's is in work-items */
			if (json_is_array(grid))
				o.grid[d] = (uint32_t)json_integer_value(json_array_get(grid, d));
			else
				o.grid[d] = (uint32_t)(wg ? (items + wg - 1) / wg : items);
		}
		o.shared_static = (uint32_t)u64(st, 16);
		o.registers = (uint32_t)u64(st, 17);
		o.corr_id = u64(st, 18);
		o.name_id = *name ? name_id(s, name) : 0;
		json_decref(grid);
		emit(s, s->main_tid, SC_REC_GPU_OP, 0, &o, sizeof(o), NULL, 0);
	}
	sqlite3_finalize(st);
}

/* GPU counters per kernel (rocpd_pmc_event rows on a dispatch's event, as --gpu-events
 * writes them): the names once, then each dispatch's values under its stack_id. */
static void emit_kernel_metrics(struct source *s)
{
	static const char *const from =
		" FROM rocpd_pmc_event V JOIN rocpd_info_pmc M ON M.id = V.pmc_id AND M.guid = "
		"V.guid JOIN rocpd_kernel_dispatch K ON K.event_id = V.event_id AND K.guid = V.guid "
		"JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid WHERE K.guid = ?1 AND "
		"K.pid = ?2 AND E.stack_id > 0";
	char *sql = sc_xasprintf("SELECT DISTINCT M.name%s ORDER BY M.name LIMIT %u", from,
				 SC_GPU_METRICS_MAX);
	sqlite3_stmt *st = query(s, sql);
	struct sc_rec_gpu_metrics r = { .count = 0 };
	static char names[SC_GPU_METRICS_MAX][256];
	struct strings list = { 0 };
	double values[SC_GPU_METRICS_MAX];
	int64_t dispatch = -1;

	free(sql);
	while (st && sqlite3_step(st) == SQLITE_ROW && r.count < SC_GPU_METRICS_MAX) {
		snprintf(names[r.count++], sizeof(names[0]), "%s", text(st, 0));
		strings_add(&list, text(st, 0));
	}
	sqlite3_finalize(st);
	if (!r.count) {
		VEC_FREE(&list.v);
		return;
	}
	emit(s, s->main_tid, SC_REC_GPU_METRICS, SC_GPU_METRICS_NAMES, &r, sizeof(r), list.v.v,
	     list.v.n);
	VEC_FREE(&list.v);
	sql = sc_xasprintf("SELECT K.id, E.stack_id, M.name, V.value%s ORDER BY K.id", from);
	st = query(s, sql);
	free(sql);
	while (st && !s->stop) {
		bool row = sqlite3_step(st) == SQLITE_ROW;

		if (dispatch >= 0 && (!row || sqlite3_column_int64(st, 0) != dispatch))
			emit(s, s->main_tid, SC_REC_GPU_METRICS, 0, &r, sizeof(r), values,
			     r.count * sizeof(double));
		if (!row)
			break;
		if (sqlite3_column_int64(st, 0) != dispatch) {
			dispatch = sqlite3_column_int64(st, 0);
			r.corr_id = u64(st, 1);
			for (unsigned i = 0; i < r.count; i++)
				values[i] = NAN;
		}
		for (unsigned i = 0; i < r.count; i++)
			if (!strcmp(names[i], text(st, 2)))
				values[i] = sqlite3_column_double(st, 3);
	}
	sqlite3_finalize(st);
}

static uint16_t copy_kind_of(const char *name)
{
	static const struct {
		const char *suffix;
		uint16_t kind;
	} kinds[] = {
		{ "HOST_TO_DEVICE", SC_COPY_HTOD },   { "DEVICE_TO_HOST", SC_COPY_DTOH },
		{ "DEVICE_TO_DEVICE", SC_COPY_DTOD }, { "HOST_TO_HOST", SC_COPY_HTOH },
		{ "PEER_TO_PEER", SC_COPY_PTOP },
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strstr(name, kinds[i].suffix))
			return kinds[i].kind;
	return SC_COPY_UNKNOWN;
}

static void emit_copies(struct source *s)
{
	sqlite3_stmt *st = query(
		s,
		"SELECT M.tid, M.start, M.end, S.string, M.src_agent_id, M.dst_agent_id, "
		"M.size, M.stream_id, M.dst_address, E.stack_id, (SELECT json_extract(T.extdata, "
		"'$.stream_id') FROM rocpd_info_stream T WHERE T.id = M.stream_id AND T.guid = "
		"M.guid AND json_valid(T.extdata)) FROM rocpd_memory_copy M LEFT JOIN "
		"rocpd_string S ON S.id = M.name_id AND S.guid = M.guid LEFT JOIN rocpd_event E "
		"ON E.id = M.event_id AND E.guid = M.guid WHERE M.guid = ?1 AND M.pid = ?2 "
		"ORDER BY M.start, M.id");

	while (st && sqlite3_step(st) == SQLITE_ROW && !s->stop) {
		row_read(s);
		struct sc_rec_gpu_op o = { .kind = SC_GPU_COPY };
		const char *name = text(st, 3);

		o.tid = tid_of(s, st, 0);
		o.start = u64(st, 1);
		o.end = u64(st, 2) > o.start ? u64(st, 2) : o.start;
		o.src_agent = agent_of(s, st, 4);
		o.dst_agent = agent_of(s, st, 5);
		o.bytes = u64(st, 6);
		o.stream = stream_of(st, 7, 10);
		o.corr_id = u64(st, 9);
		if (!strcmp(name, "MEMORY_SET")) {
			o.kind = SC_GPU_SET;
			o.address = u64(st, 8);
		}
		o.copy_kind = o.kind == SC_GPU_COPY ? copy_kind_of(name) : 0;
		o.agent = o.dst_agent != SC_AGENT_HOST ? o.dst_agent : o.src_agent;
		if (o.agent == SC_AGENT_HOST)
			o.agent = 0;
		o.name_id = *name ? name_id(s, name) : 0;
		emit(s, s->main_tid, SC_REC_GPU_OP, 0, &o, sizeof(o), NULL, 0);
	}
	sqlite3_finalize(st);
}

static void emit_allocations(struct source *s)
{
	sqlite3_stmt *st =
		query(s, "SELECT M.tid, M.agent_id, M.type, M.level, M.start, M.end, "
			 "M.address, M.size, E.stack_id FROM rocpd_memory_allocate M "
			 "LEFT JOIN rocpd_event E ON E.id = M.event_id AND E.guid = "
			 "M.guid WHERE M.guid = ?1 AND M.pid = ?2 ORDER BY M.start, M.id");

	while (st && sqlite3_step(st) == SQLITE_ROW && !s->stop) {
		row_read(s);
		struct sc_rec_gpu_op o = { 0 };
		const char *type = text(st, 2), *level = text(st, 3);

		o.kind = !strcmp(type, "FREE") || !strcmp(type, "RECLAIM") ? SC_GPU_FREE
									   : SC_GPU_ALLOC;
		for (uint16_t l = SC_MEM_REAL; l <= SC_MEM_SCRATCH; l++)
			if (!strcmp(level, sc_gpu_mem_level(l)))
				o.copy_kind = l;
		o.tid = tid_of(s, st, 0);
		o.agent = agent_of(s, st, 1);
		if (o.agent == SC_AGENT_HOST)
			o.agent = 0;
		o.start = u64(st, 4);
		o.end = u64(st, 5) > o.start ? u64(st, 5) : o.start;
		o.address = u64(st, 6);
		o.bytes = u64(st, 7);
		o.corr_id = u64(st, 8);
		emit(s, s->main_tid, SC_REC_GPU_OP, 0, &o, sizeof(o), NULL, 0);
	}
	sqlite3_finalize(st);
}

/* --- regions, marks, samples, counters --- */

static char arg_type_char(const char *type)
{
	if (strchr(type, '*'))
		return strstr(type, "char") ? SC_ARG_STRING : SC_ARG_POINTER;
	if (strstr(type, "double") || strstr(type, "float"))
		return SC_ARG_DOUBLE;
	if (strstr(type, "uint") || strstr(type, "unsigned") || !strcmp(type, "size_t"))
		return SC_ARG_UINT;
	if (strstr(type, "int") || strstr(type, "long") || strstr(type, "short"))
		return SC_ARG_INT;
	return SC_ARG_STRING;
}

/* The arguments of the process's regions, copied once into an indexed table of the
 * connection's TEMP database (rocpd_arg has no index; a file-backed table and SQLite's page
 * cache keep the memory flat whatever their number), and a statement that looks up those of
 * one event. A process whose regions have no arguments needs neither. */
static void load_args(struct source *s)
{
	struct importer *imp = s->imp;
	sqlite3_stmt *st;
	char *q;

	s->args_loaded = true;
	if (!imp->args_table) {
		if (sqlite3_exec(imp->set.db,
				 "CREATE TEMP TABLE sc_args (src INTEGER, "
				 "event_id INTEGER, position INTEGER, id INTEGER, type TEXT, name "
				 "TEXT, value TEXT, PRIMARY KEY (src, event_id, position, id)) "
				 "WITHOUT ROWID",
				 NULL, NULL, NULL) != SQLITE_OK) {
			problem(s, "region arguments");
			return;
		}
		imp->args_table = true;
	}
	q = sqlite3_mprintf("INSERT INTO temp.sc_args SELECT %lld, A.event_id, A.position, A.id, "
			    "A.type, A.name, A.value FROM rocpd_arg A WHERE A.guid = ?1 AND "
			    "A.event_id IN (SELECT event_id FROM rocpd_region WHERE guid = ?1 "
			    "AND pid = ?2) ORDER BY A.event_id, A.position, A.id",
			    (long long)s->index);
	st = query(s, q);
	sqlite3_free(q);
	if (!st)
		return;
	if (sqlite3_step(st) != SQLITE_DONE)
		problem(s, "region arguments");
	sqlite3_finalize(st);
	if (!sqlite3_changes(imp->set.db))
		return;
	if (sqlite3_prepare_v2(imp->set.db,
			       "SELECT type, name, value FROM temp.sc_args WHERE src = ?1 AND "
			       "event_id = ?2 ORDER BY position, id",
			       -1, &s->args, NULL) != SQLITE_OK) {
		problem(s, "region arguments");
		s->args = NULL;
		return;
	}
	sqlite3_bind_int64(s->args, 1, (sqlite3_int64)s->index);
}

/* A region's begin record: name, category, then its arguments; the record, which the
 * caller frees once the region has ended. */
static void *emit_begin(struct source *s, int32_t tid, sqlite3_stmt *r)
{
	struct sc_rec_region g = { .ts = u64(r, 1), .corr_id = u64(r, 5) };
	struct strings b = { 0 };
	void *held;

	g.name_len = strings_add(&b, *text(r, 3) ? text(r, 3) : "(unnamed)");
	g.cat_len = strings_add(&b, *text(r, 4) ? sc_rocpd_category_of_file(text(r, 4)) : "user");
	if (s->args && sqlite3_column_type(r, 6) != SQLITE_NULL) {
		sqlite3_bind_int64(s->args, 2, sqlite3_column_int64(r, 6));
		while (sqlite3_step(s->args) == SQLITE_ROW && g.nargs < 0xffff) {
			char type[2] = { arg_type_char(text(s->args, 0)), 0 };

			strings_add(&b, type);
			strings_add(&b, text(s->args, 1));
			strings_add(&b, text(s->args, 2));
			g.nargs++;
		}
		sqlite3_reset(s->args);
	}
	g.args_len = (uint32_t)b.v.n - g.name_len - g.cat_len;
	held = emit_held(s, tid, SC_REC_REGION_BEGIN, &g, sizeof(g), b.v.v, b.v.n);
	VEC_FREE(&b.v);
	return held;
}

static void emit_end(struct source *s, int32_t tid, uint64_t ts)
{
	struct sc_rec_region_end e = { .ts = ts };

	emit(s, tid, SC_REC_REGION_END, 0, &e, sizeof(e), NULL, 0);
}

/* A region emitted and not ended yet: its end, and its begin record (freed at its end). */
struct open_rec {
	uint64_t end;
	void *begin;
};

static void close_last(struct source *s, int32_t tid, struct open_rec *open, size_t *n)
{
	--*n;
	emit_end(s, tid, open[*n].end);
	free(open[*n].begin);
}

/*
 * Regions as begin and end records, nested per thread: ordered by start (the longer first
 * when two start together), each region ends every region on its thread that ended before
 * it began. A region reaching past the end of the one it starts in is cut there, since a
 * thread's regions must nest.
 */
static void emit_regions(struct source *s)
{
	sqlite3_stmt *r = query(
		s,
		"SELECT R.tid, R.start, R.end, N.string, C.string, E.stack_id, R.event_id FROM "
		"rocpd_region R LEFT JOIN rocpd_string N ON N.id = R.name_id AND N.guid = R.guid "
		"LEFT JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid LEFT JOIN "
		"rocpd_string C ON C.id = E.category_id AND C.guid = E.guid WHERE R.guid = ?1 AND "
		"R.pid = ?2 AND COALESCE(C.string, '') NOT IN " SAMPLING_CATEGORIES
		" ORDER BY R.tid, R.start, R.end DESC, R.id");
	VEC(struct open_rec) open = { 0 }; /* the regions open on the thread */
	int32_t tid = 0;

	if (!s->args_loaded)
		load_args(s);
	while (r && sqlite3_step(r) == SQLITE_ROW && !s->stop) {
		row_read(s);
		int32_t rt = tid_of(s, r, 0);
		uint64_t start = u64(r, 1), end = u64(r, 2) > start ? u64(r, 2) : start;

		if (rt != tid) {
			while (open.n)
				close_last(s, tid, open.v, &open.n);
			tid = rt;
		}
		while (open.n && open.v[open.n - 1].end <= start)
			close_last(s, tid, open.v, &open.n);
		if (open.n && end > open.v[open.n - 1].end)
			end = open.v[open.n - 1].end;
		*VEC_PUSH(&open) = (struct open_rec){ .end = end, .begin = emit_begin(s, tid, r) };
	}
	while (open.n)
		close_last(s, tid, open.v, &open.n);
	VEC_FREE(&open);
	sqlite3_finalize(r);
}

static void emit_marks(struct source *s)
{
	sqlite3_stmt *st = query(
		s,
		"SELECT T.tid, S.timestamp, C.string, json_extract(E.extdata, '$.message') FROM "
		"rocpd_sample S JOIN rocpd_track T ON T.id = S.track_id AND T.guid = S.guid JOIN "
		"rocpd_event E ON E.id = S.event_id AND E.guid = S.guid LEFT JOIN rocpd_string C "
		"ON C.id = E.category_id AND C.guid = E.guid WHERE S.guid = ?1 AND T.pid = ?2 AND "
		"json_valid(E.extdata) AND json_extract(E.extdata, '$.message') IS NOT NULL "
		"ORDER BY T.tid, S.timestamp, S.id");

	while (st && sqlite3_step(st) == SQLITE_ROW && !s->stop) {
		row_read(s);
		struct sc_rec_region g = { .ts = u64(st, 1) };
		struct strings b = { 0 };

		g.name_len = strings_add(&b, text(st, 3));
		g.cat_len = strings_add(&b, *text(st, 2) ? sc_rocpd_category_of_file(text(st, 2))
							 : "user");
		emit(s, tid_of(s, st, 0), SC_REC_MARK, 0, &g, sizeof(g), b.v.v, b.v.n);
		VEC_FREE(&b.v);
	}
	sqlite3_finalize(st);
}

static uint64_t frame_index(struct source *s, const char *func, const char *module,
			    const char *file, uint32_t line)
{
	struct sc_model *m = s->imp->m;
	struct sc_symframe f = { .func = sc_strtab_intern(&m->strings, func),
				 .file = sc_strtab_intern(&m->strings, file),
				 .module = sc_strtab_intern(&m->strings, module),
				 .line = line };
	uint64_t key = sc_hash_bytes(&f, sizeof(f), 0x5f) | 1;
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&s->frames, key, 0, &inserted);

	if (inserted) {
		*VEC_PUSH(&m->symframes) = f;
		*slot = m->symframes.n;
	}
	return *slot - 1;
}

/* Frames of a sample, leaf first, from call_stack (names, modules) and line_info (files and
 * lines), both outermost first; a single object counts as one frame. */
static size_t sample_frames(struct source *s, const char *cs_text, const char *li_text,
			    uint64_t *frames, size_t max)
{
	json_t *cs = json_loads(cs_text, 0, NULL), *li = json_loads(li_text, 0, NULL);
	size_t n = 0, count;

	if (json_is_object(cs)) {
		json_t *one = json_array();

		json_array_append(one, cs);
		json_decref(cs);
		cs = one;
	}
	if (json_is_object(li)) {
		json_t *one = json_array();

		json_array_append(one, li);
		json_decref(li);
		li = one;
	}
	count = json_array_size(cs);
	for (size_t i = count; i-- > 0 && n < max;) {
		json_t *c = json_array_get(cs, i), *l = json_array_get(li, i);
		const char *func = json_string_value(json_object_get(c, "name"));
		const char *module = json_string_value(json_object_get(c, "module"));
		const char *file = json_string_value(json_object_get(l, "file"));
		json_t *line = json_object_get(l, "line");

		if (!file)
			file = json_string_value(json_object_get(c, "file"));
		frames[n++] = frame_index(
			s, func ? func : "[unknown]", module ? module : "", file ? file : "",
			json_is_integer(line) ? (uint32_t)json_integer_value(line) : 0);
	}
	json_decref(cs);
	json_decref(li);
	return n;
}

static void emit_samples(struct source *s)
{
	sqlite3_stmt *st = query(
		s,
		"SELECT T.tid, S.timestamp, C.string, E.call_stack, E.line_info, CASE WHEN "
		"json_valid(S.extdata) THEN json_extract(S.extdata, '$.cpu_ns') END FROM "
		"rocpd_sample S JOIN rocpd_track T ON T.id = S.track_id AND T.guid = S.guid JOIN "
		"rocpd_event E ON E.id = S.event_id AND E.guid = S.guid JOIN rocpd_string C ON "
		"C.id = E.category_id AND C.guid = E.guid WHERE S.guid = ?1 AND T.pid = ?2 AND "
		"C.string IN " SAMPLING_CATEGORIES " ORDER BY T.tid, S.timestamp, S.id");
	struct {
		struct sc_rec_sample r;
		uint64_t frames[SC_MAX_IMPORT_FRAMES];
	} rec;

	while (st && sqlite3_step(st) == SQLITE_ROW && !s->stop) {
		row_read(s);
		size_t n = sample_frames(s, text(st, 3), text(st, 4), rec.frames,
					 SC_MAX_IMPORT_FRAMES);

		if (!n)
			continue;
		memset(&rec.r, 0, sizeof(rec.r));
		rec.r.ts = u64(st, 1);
		rec.r.cpu_ns = sqlite3_column_type(st, 5) == SQLITE_NULL ? rec.r.ts : u64(st, 5);
		rec.r.kind = !strcmp(text(st, 2), "wall_clock_sampling") ? SC_SAMPLE_REALTIME
			     : !strcmp(text(st, 2), "overflow_sampling") ? SC_SAMPLE_OVERFLOW
									 : SC_SAMPLE_CPUTIME;
		rec.r.nframes = (uint16_t)n;
		emit(s, tid_of(s, st, 0), SC_REC_SAMPLE, SC_STACK_SYMBOLIC, &rec,
		     sizeof(rec.r) + n * 8, NULL, 0);
	}
	sqlite3_finalize(st);
}

static void emit_counters(struct source *s)
{
	sqlite3_stmt *st = query(
		s,
		"SELECT T.tid, S.timestamp, V.pmc_id, V.value FROM rocpd_pmc_event V JOIN "
		"rocpd_sample S ON S.event_id = V.event_id AND S.guid = V.guid JOIN rocpd_track T "
		"ON T.id = S.track_id AND T.guid = S.guid WHERE V.guid = ?1 AND T.pid = ?2 ORDER "
		"BY S.timestamp, S.id");

	while (st && sqlite3_step(st) == SQLITE_ROW && !s->stop) {
		row_read(s);
		struct sc_rec_counter c = { .ts = u64(st, 1) };

		c.track = (uint32_t)sqlite3_column_int64(st, 2);
		c.value = sqlite3_column_double(st, 3);
		emit(s, tid_of(s, st, 0), SC_REC_COUNTER, 0, &c, sizeof(c), NULL, 0);
	}
	sqlite3_finalize(st);
}

static int source_foreach(void *src, const struct sc_image *img, sc_raw_record_fn cb, void *ctx)
{
	struct source *s = src;
	sqlite3_stmt *p = query(s, "SELECT id, guid, nid, ppid, pid, init, fini, start, command "
				   "FROM rocpd_info_process WHERE guid = ?1 AND id = ?2");

	s->cb = cb;
	s->ctx = ctx;
	s->img = img;
	s->stop = 0;
	sc_hashmap_init(&s->emitted);
	if (p && sqlite3_step(p) == SQLITE_ROW) {
		emit_process(s, p);
		emit_key_values(s, SC_REC_ENVIRON, s->env);
		emit_key_values(s, SC_REC_SETTINGS, ext_get(s, "settings"));
		emit_threads(s, false);
		emit_counter_tracks(s);
		emit_agents(s);
		emit_streams(s);
		emit_regions(s);
		emit_marks(s);
		emit_samples(s);
		emit_counters(s);
		emit_kernels(s);
		emit_kernel_metrics(s);
		emit_copies(s);
		emit_allocations(s);
		emit_threads(s, true);
	}
	sqlite3_finalize(p);
	sc_hashmap_free(&s->emitted);
	return s->stop;
}

/* --- loading --- */

static void source_free(struct source *s)
{
	json_decref(s->ext);
	json_decref(s->env);
	sqlite3_finalize(s->args);
	sc_hashmap_free(&s->tids);
	sc_hashmap_free(&s->agents);
	sc_hashmap_free(&s->names);
	sc_hashmap_free(&s->frames);
	free(s->guid);
	free(s);
}

static void importer_free(void *p)
{
	struct importer *imp = p;

	for (size_t i = 0; i < imp->sources.n; i++)
		source_free(imp->sources.v[i]);
	VEC_FREE(&imp->sources);
	for (size_t i = 0; i < imp->paths.n; i++)
		free(imp->paths.v[i]);
	VEC_FREE(&imp->paths);
	VEC_FREE(&imp->buf);
	sc_rocpd_close(&imp->set);
	free(imp);
}

/* The file a guid comes from, for messages. */
static const char *origin_of(struct importer *imp, const char *guid)
{
	for (size_t i = 0; i < imp->paths.n; i++) {
		char q[128];
		sqlite3_stmt *st;
		bool match = false;

		snprintf(q, sizeof(q),
			 "SELECT 1 FROM db%zu.rocpd_metadata WHERE tag = 'guid' AND "
			 "value = ?1",
			 i);
		if (sqlite3_prepare_v2(imp->set.db, q, -1, &st, NULL) != SQLITE_OK)
			continue;
		sqlite3_bind_text(st, 1, guid, -1, SQLITE_STATIC);
		match = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
		if (match)
			return imp->paths.v[i];
	}
	return imp->paths.n ? imp->paths.v[0] : "?";
}

static uint32_t end_reason_of(const char *text)
{
	static const char *const names[] = { "unknown", "exit", "_exit", "signal", "exec" };

	for (uint32_t i = 0; text && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(text, names[i]))
			return i;
	return SC_END_RUNNING;
}

/* The thread ids of a process, and which one is the main thread. */
static void load_threads(struct source *s)
{
	sqlite3_stmt *st = query(s, "SELECT id, tid FROM rocpd_info_thread WHERE guid = ?1 AND "
				    "pid = ?2 ORDER BY start, id");

	s->main_tid = 0;
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		int32_t tid = (int32_t)sqlite3_column_int64(st, 1);

		*sc_hashmap_upsert(&s->tids, (uint64_t)sqlite3_column_int64(st, 0) + 1, 0, NULL) =
			(uint32_t)tid;
		if (!s->main_tid || tid == s->pid)
			s->main_tid = tid;
	}
	sqlite3_finalize(st);
	if (!s->main_tid)
		s->main_tid = s->pid;
}

static void add_process(struct importer *imp, sqlite3_stmt *p)
{
	struct source *s = sc_xcalloc(1, sizeof(*s));
	struct sc_image *img;
	json_t *v;
	uint64_t start, end;
	const char *freq;

	s->imp = imp;
	s->index = imp->sources.n;
	s->guid = sc_xstrdup(text(p, 0));
	s->proc_row = sqlite3_column_int64(p, 1);
	s->pid = (int32_t)sqlite3_column_int64(p, 2);
	s->origin = origin_of(imp, s->guid);
	s->ext = json_loads(text(p, 9), 0, NULL);
	s->env = json_loads(text(p, 8), 0, NULL);
	sc_hashmap_init(&s->tids);
	sc_hashmap_init(&s->agents);
	sc_hashmap_init(&s->names);
	sc_hashmap_init(&s->frames);
	*VEC_PUSH(&imp->sources) = s;
	load_threads(s);
	freq = json_string_value(json_object_get(ext_get(s, "settings"), "SAMPLING_FREQ"));
	if (freq && atof(freq) > 0)
		s->sampling_period_ns = 1e9 / atof(freq);

	img = sc_model_add_image(imp->m, s->pid, *text(p, 10) ? text(p, 10) : "");
	img->feed.foreach = source_foreach;
	img->feed.src = s;
	img->feed.origin = s->origin;
	img->ppid = (int32_t)sqlite3_column_int64(p, 3);
	/* rocprof-sys leaves the process times 0: take them from its regions then. */
	start = u64(p, 6) ? u64(p, 6) : u64(p, 4) ? u64(p, 4) : u64(p, 11);
	end = u64(p, 7) ? u64(p, 7) : u64(p, 5) ? u64(p, 5) : u64(p, 12);
	img->start_ns = start;
	img->end_ns = end;
	v = ext_get(s, "start_realtime_ns");
	img->start_realtime_ns = json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
	img->on_merged_clock = json_is_string(ext_get(s, "clock"));
	img->end_reason = end_reason_of(json_string_value(ext_get(s, "end_reason")));
	img->end_status = (int32_t)json_integer_value(ext_get(s, "end_status"));
	img->lost_records = (uint64_t)json_integer_value(ext_get(s, "lost_records"));
	img->lost_bytes = (uint64_t)json_integer_value(ext_get(s, "lost_bytes"));
	img->lost_samples = (uint64_t)json_integer_value(ext_get(s, "lost_samples"));
	import_notes(imp->m, s->pid, ext_get(s, "notes"));
}

int sc_model_import_rocpd(struct sc_model *m, struct sc_session *s, char *const *paths, size_t n,
			  bool inlines, unsigned later_passes, char *err, size_t errlen)
{
	struct importer *imp = sc_xcalloc(1, sizeof(*imp));
	sqlite3_stmt *p;

	sc_model_init(m, s, inlines);
	if (sc_rocpd_open(&imp->set, paths, n, err, errlen)) {
		free(imp);
		return -1;
	}
	imp->m = m;
	imp->session = s;
	m->importer = imp;
	m->importer_free = importer_free;
	for (size_t i = 0; i < n; i++)
		*VEC_PUSH(&imp->paths) = sc_xstrdup(paths[i]);
	if (sqlite3_prepare_v2(
		    imp->set.db,
		    "SELECT P.guid, P.id, P.pid, P.ppid, P.init, P.fini, P.start, P.end, "
		    "P.environment, P.extdata, N.hostname, (SELECT MIN(R.start) FROM rocpd_region R "
		    "WHERE R.guid = P.guid AND R.pid = P.id), (SELECT MAX(R.end) FROM rocpd_region R "
		    "WHERE R.guid = P.guid AND R.pid = P.id) FROM rocpd_info_process P LEFT JOIN "
		    "rocpd_info_node N ON N.id = P.nid AND N.guid = P.guid ORDER BY P.start, P.pid",
		    -1, &p, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: cannot read its processes: %s", paths[0],
			 sqlite3_errmsg(imp->set.db));
		return -1;
	}
	while (sqlite3_step(p) == SQLITE_ROW)
		add_process(imp, p);
	sqlite3_finalize(p);
	/* The rows a pass reads, which the model's own pass (sc_model_finish) is the first of. */
	if (sqlite3_prepare_v2(imp->set.db,
			       "SELECT (SELECT COUNT(*) FROM rocpd_region) + (SELECT COUNT(*) FROM "
			       "rocpd_sample) + (SELECT COUNT(*) FROM rocpd_kernel_dispatch) + "
			       "(SELECT COUNT(*) FROM rocpd_memory_copy) + (SELECT COUNT(*) FROM "
			       "rocpd_memory_allocate)",
			       -1, &p, NULL) == SQLITE_OK &&
	    sqlite3_step(p) == SQLITE_ROW)
		m->import_rows = (uint64_t)sqlite3_column_int64(p, 0);
	sqlite3_finalize(p);
	sc_progress_more(m->import_rows * (1 + later_passes));
	if (!imp->sources.n) {
		snprintf(err, errlen, "%s holds no process (rocpd_info_process is empty)",
			 n == 1 ? paths[0] : "the databases");
		return -1;
	}
	sc_model_finish(m);
	return 0;
}
