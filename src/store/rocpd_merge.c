/* SPDX-License-Identifier: MIT */
/*
 * Merging rocpd databases into one, so that its views show every process of every input
 * (docs/output-formats.md, rocpd: one guid per file, ids unique per guid).
 *
 * The output gets a new guid. Each (input file, guid) is copied table by table with
 * INSERT ... SELECT: ids move up past the rows already there (the first input keeps its
 * own), and every column that refers to another table moves with that table. Strings are
 * shared by value and nodes by machine id, both through a temporary map. A column only one
 * side has is left out (another producer's newer or older schema); `pid` of
 * rocpd_info_process and `tid` of rocpd_info_thread are the OS ids, not references.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/hashmap.h"
#include "../common/log.h"
#include "../common/progress.h"
#include "../common/safe_output.h"
#include "../common/vec.h"
#include "rocpd.h"
#include "rocpd_clock.h"
#include "rocpd_read.h"
#include "sqlite_cause.h"

/* Tables are copied in the order of the schema's list (sc_rocpd_base_names), from the first
 * after these three: metadata is the output's own, strings and nodes are shared by value. */
#define FIRST_COPIED 3
#define NTABLES 32	/* more than the schema has */
#define COPY_ROWS 65536 /* ids copied by one statement */

struct merge {
	sqlite3 *db;
	char guid[48], uuid[64];
	int64_t offset[NTABLES];
	char *err;
	size_t errlen;
	VEC(char *) merged; /* guids copied so far, "guid path" each */
	uint64_t file_bytes, file_done, file_rows, file_rows_done; /* progress_rows */
	int64_t rows[NTABLES];		/* of each table in the file being merged */
	struct sc_clock_survey *clocks; /* every input's, before any is copied */
};

/* The input that brought `guid` already, or NULL: the same session or database given twice
 * (or a copy of it) would double its samples. */
static const char *merged_from(const struct merge *mg, const char *guid)
{
	size_t n = strlen(guid);

	for (size_t i = 0; i < mg->merged.n; i++)
		if (!strncmp(mg->merged.v[i], guid, n) && mg->merged.v[i][n] == ' ')
			return mg->merged.v[i] + n + 1;
	return NULL;
}

static int fail(struct merge *mg, const char *what)
{
	char cause[256];

	snprintf(mg->err, mg->errlen, "%s: %s", what,
		 sc_sqlite_cause(mg->db, cause, sizeof(cause)));
	return -1;
}

static int exec(struct merge *mg, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(mg->db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	snprintf(mg->err, mg->errlen, "%s (in: %.160s)", msg ? msg : "?", sql);
	sqlite3_free(msg);
	return -1;
}

static int64_t scalar(struct merge *mg, const char *sql, const char *guid)
{
	return sc_rocpd_scalar(mg->db, sql, guid);
}

static const char *const *const tables = sc_rocpd_base_names;

/* The rows of the file being merged, to measure the progress line in: it counts bytes of
 * the input files, each file's share given out as its rows are copied. */
static void progress_begin_file(struct merge *mg, const char *path)
{
	struct stat st;

	mg->file_bytes = stat(path, &st) ? 0 : (uint64_t)st.st_size;
	mg->file_done = mg->file_rows_done = mg->file_rows = 0;
	for (size_t t = FIRST_COPIED; tables[t]; t++) {
		char *q = sqlite3_mprintf("SELECT COUNT(*) FROM src.\"rocpd_%s\"", tables[t]);

		mg->rows[t] = scalar(mg, q, NULL);
		mg->file_rows += (uint64_t)mg->rows[t];
		sqlite3_free(q);
	}
}

static void progress_rows(struct merge *mg, uint64_t rows)
{
	uint64_t upto;

	mg->file_rows_done += rows;
	if (!mg->file_rows || mg->file_rows_done >= mg->file_rows)
		upto = mg->file_bytes;
	else
		upto = (uint64_t)((double)mg->file_bytes * (double)mg->file_rows_done /
				  (double)mg->file_rows);
	if (upto > mg->file_done) {
		sc_progress_add(upto - mg->file_done);
		mg->file_done = upto;
	}
}

static int table_index(const char *name)
{
	for (size_t i = 0; tables[i]; i++)
		if (!strcmp(tables[i], name))
			return (int)i;
	return -1;
}

/* What a column of `table` refers to: a table name, "string", "info_node", or NULL for a
 * plain value. */
static const char *reference_of(const char *table, const char *col)
{
	static const struct {
		const char *col, *target;
	} refs[] = {
		{ "nid", "info_node" },
		{ "pid", "info_process" },
		{ "tid", "info_thread" },
		{ "agent_id", "info_agent" },
		{ "dst_agent_id", "info_agent" },
		{ "src_agent_id", "info_agent" },
		{ "queue_id", "info_queue" },
		{ "stream_id", "info_stream" },
		{ "name_id", "string" },
		{ "category_id", "string" },
		{ "region_name_id", "string" },
		{ "event_id", "event" },
		{ "track_id", "track" },
		{ "pmc_id", "info_pmc" },
		{ "kernel_id", "info_kernel_symbol" },
		{ "code_object_id", "info_code_object" },
	};

	if ((!strcmp(table, "info_process") && !strcmp(col, "pid")) ||
	    (!strcmp(table, "info_thread") && !strcmp(col, "tid")))
		return NULL;
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
		if (!strcmp(refs[i].col, col))
			return refs[i].target;
	return NULL;
}

/* Columns of the output table `table` that the input's view has too. */
static int common_columns(struct merge *mg, const char *table, void *cols_)
{
	VEC(char *) *cols = cols_;
	char *sql = sqlite3_mprintf("SELECT * FROM src.\"rocpd_%s\" LIMIT 0", table);
	sqlite3_stmt *in, *out;
	int rc = 0;

	if (sqlite3_prepare_v2(mg->db, sql, -1, &in, NULL) != SQLITE_OK) {
		sqlite3_free(sql);
		return fail(mg, table);
	}
	sqlite3_free(sql);
	sql = sqlite3_mprintf("PRAGMA main.table_info(\"rocpd_%s%s\")", table, mg->uuid);
	if (sqlite3_prepare_v2(mg->db, sql, -1, &out, NULL) != SQLITE_OK) {
		rc = fail(mg, table);
		out = NULL;
	}
	sqlite3_free(sql);
	while (out && sqlite3_step(out) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(out, 1);

		for (int c = 0; c < sqlite3_column_count(in); c++)
			if (!strcmp(sqlite3_column_name(in, c), name))
				*VEC_PUSH(cols) = sc_xstrdup(name);
	}
	sqlite3_finalize(out);
	sqlite3_finalize(in);
	return rc;
}

/* Strings and nodes: add those not there yet, and map the input's ids to the output's. */
static int share_by_value(struct merge *mg, const char *guid)
{
	char *sql = sqlite3_mprintf(
		"DELETE FROM temp.smap; DELETE FROM temp.nmap; "
		"INSERT OR IGNORE INTO \"rocpd_string%s\" (guid, string) SELECT %Q, string FROM "
		"src.rocpd_string WHERE guid = %Q; "
		"INSERT INTO temp.smap SELECT S.id, M.id FROM src.rocpd_string S JOIN "
		"\"rocpd_string%s\" M ON M.string = S.string WHERE S.guid = %Q; "
		"INSERT OR IGNORE INTO \"rocpd_info_node%s\" (guid, hash, machine_id, system_name, "
		"hostname, release, version, hardware_name, domain_name) SELECT %Q, hash, "
		"machine_id, system_name, hostname, release, version, hardware_name, domain_name "
		"FROM src.rocpd_info_node WHERE guid = %Q; "
		"INSERT INTO temp.nmap SELECT S.id, M.id FROM src.rocpd_info_node S JOIN "
		"\"rocpd_info_node%s\" M ON M.machine_id = S.machine_id WHERE S.guid = %Q",
		mg->uuid, mg->guid, guid, mg->uuid, guid, mg->uuid, mg->guid, guid, mg->uuid, guid);
	int rc = exec(mg, sql);

	sqlite3_free(sql);
	return rc;
}

/* Id offsets of every table: the first input keeps its ids, later ones go above. */
static void compute_offsets(struct merge *mg, const char *guid)
{
	for (size_t t = FIRST_COPIED; tables[t]; t++) {
		char *max =
			sqlite3_mprintf("SELECT MAX(id) FROM \"rocpd_%s%s\"", tables[t], mg->uuid);
		char *any = sqlite3_mprintf("SELECT EXISTS (SELECT 1 FROM \"rocpd_%s%s\")",
					    tables[t], mg->uuid);
		char *min = sqlite3_mprintf("SELECT MIN(id) FROM src.\"rocpd_%s\" WHERE guid = ?1",
					    tables[t]);

		mg->offset[t] = scalar(mg, any, NULL)
					? scalar(mg, max, NULL) + 1 - scalar(mg, min, guid)
					: 0;
		sqlite3_free(max);
		sqlite3_free(any);
		sqlite3_free(min);
	}
}

static int copy_table(struct merge *mg, size_t t, const char *guid, const struct sc_clock_fix *fix)
{
	VEC(char *) cols = { 0 };
	VEC(char) into = { 0 }, select = { 0 };
	char *sql;
	int rc;

	if (!mg->rows[t]) /* an empty table of this file: nothing to copy */
		return 0;
	rc = common_columns(mg, tables[t], &cols);
	for (size_t c = 0; !rc && c < cols.n; c++) {
		const char *col = cols.v[c], *ref = reference_of(tables[t], col);
		char *expr;

		if (!strcmp(col, "id"))
			expr = sqlite3_mprintf("X.id + %lld", (long long)mg->offset[t]);
		else if (!strcmp(col, "guid"))
			expr = sqlite3_mprintf("%Q", mg->guid);
		else if (ref && !strcmp(ref, "string"))
			expr = sqlite3_mprintf("(SELECT new FROM temp.smap WHERE old = X.\"%w\")",
					       col);
		else if (ref && !strcmp(ref, "info_node"))
			expr = sqlite3_mprintf("(SELECT new FROM temp.nmap WHERE old = X.\"%w\")",
					       col);
		else if (ref)
			expr = sqlite3_mprintf("X.\"%w\" + %lld", col,
					       (long long)mg->offset[table_index(ref)]);
		else if (fix->n && sc_clock_is_time(col))
			expr = sc_clock_aligned(fix, col);
		else if (fix->how && !strcmp(tables[t], "info_process") && !strcmp(col, "extdata"))
			expr = sqlite3_mprintf("CASE WHEN json_valid(X.extdata) THEN "
					       "json_set(X.extdata, '$.syscope.clock', %Q) ELSE "
					       "X.extdata END",
					       fix->how);
		else
			expr = sqlite3_mprintf("X.\"%w\"", col);
		for (const char *p = c ? ", " : ""; *p; p++)
			*VEC_PUSH(&into) = *p, *VEC_PUSH(&select) = *p;
		for (const char *p = col; *p; p++)
			*VEC_PUSH(&into) = *p;
		for (const char *p = expr; *p; p++)
			*VEC_PUSH(&select) = *p;
		sqlite3_free(expr);
	}
	*VEC_PUSH(&into) = '\0';
	*VEC_PUSH(&select) = '\0';
	if (!rc) {
		char *q = sqlite3_mprintf("SELECT MIN(id) FROM src.\"rocpd_%s\" WHERE guid = ?1",
					  tables[t]);
		int64_t lo = scalar(mg, q, guid), hi, rows;

		sqlite3_free(q);
		q = sqlite3_mprintf("SELECT MAX(id) FROM src.\"rocpd_%s\" WHERE guid = ?1",
				    tables[t]);
		hi = scalar(mg, q, guid);
		sqlite3_free(q);
		rows = mg->rows[t];
		/* In ranges of ids (dense ones: syscope's are), so that the progress line moves
		 * with the rows copied; one statement where the ids are sparse. */
		for (int64_t a = lo; !rc && a <= hi;) {
			int64_t b =
				hi - a < COPY_ROWS || hi - lo > 4 * rows ? hi : a + COPY_ROWS - 1;

			sql = sqlite3_mprintf("INSERT INTO \"rocpd_%s%s\" (%s) SELECT %s FROM "
					      "src.\"rocpd_%s\" X WHERE X.guid = %Q AND X.id >= "
					      "%lld AND X.id <= %lld",
					      tables[t], mg->uuid, into.v, select.v, tables[t],
					      guid, (long long)a, (long long)b);
			rc = exec(mg, sql);
			sqlite3_free(sql);
			if (!rc)
				progress_rows(mg, (uint64_t)sqlite3_changes(mg->db));
			a = b + 1;
		}
	}
	for (size_t c = 0; c < cols.n; c++)
		free(cols.v[c]);
	VEC_FREE(&cols);
	VEC_FREE(&into);
	VEC_FREE(&select);
	return rc;
}

/* The guids of the processes of the input attached as "src". */
static void list_guids(struct merge *mg, void *guids_)
{
	VEC(char *) *guids = guids_;
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(mg->db, "SELECT DISTINCT guid FROM src.rocpd_info_process", -1, &st,
			       NULL) != SQLITE_OK)
		return;
	while (sqlite3_step(st) == SQLITE_ROW)
		*VEC_PUSH(guids) = sc_xstrdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

/* What `path` says of its processes' clocks (an input that cannot be read is said to be so
 * when it is merged). */
static void survey_file(struct merge *mg, const char *path)
{
	VEC(char *) guids = { 0 };
	char err[512];

	if (sc_rocpd_attach(mg->db, path, "src", err, sizeof(err)))
		return;
	list_guids(mg, &guids);
	for (size_t g = 0; g < guids.n; g++) {
		sc_clock_survey_add(mg->clocks, mg->db, guids.v[g]);
		free(guids.v[g]);
	}
	VEC_FREE(&guids);
	exec(mg, "DETACH DATABASE src");
}

static int merge_file(struct merge *mg, const char *path)
{
	VEC(char *) guids = { 0 };
	struct sc_clock_fix fix;
	int rc = 0;

	if (sc_rocpd_attach(mg->db, path, "src", mg->err, mg->errlen))
		return -1;
	list_guids(mg, &guids);
	progress_begin_file(mg, path);
	rc = exec(mg, "BEGIN");
	for (size_t g = 0; !rc && g < guids.n; g++) {
		const char *before = merged_from(mg, guids.v[g]);

		if (before) {
			pr_warn("%s: its data (rocpd guid %s) is that of %s, merged already; "
				"skipped, so that nothing is counted twice",
				path, guids.v[g], before);
			continue;
		}
		*VEC_PUSH(&mg->merged) = sc_xasprintf("%s %s", guids.v[g], path);
		rc = share_by_value(mg, guids.v[g]);
		compute_offsets(mg, guids.v[g]);
		sc_clock_fix_of(mg->clocks, path, guids.v[g], &fix);
		for (size_t t = FIRST_COPIED; !rc && tables[t]; t++)
			rc = copy_table(mg, t, guids.v[g], &fix);
	}
	if (rc) {
		char why[512];

		snprintf(why, sizeof(why), "%s", mg->err);
		snprintf(mg->err, mg->errlen, "%s: %s", path, why);
	}
	for (size_t g = 0; g < guids.n; g++)
		free(guids.v[g]);
	VEC_FREE(&guids);
	progress_rows(mg, mg->file_rows);     /* the rest of its share (guids skipped, say) */
	exec(mg, rc ? "ROLLBACK" : "COMMIT"); /* a database is detached outside a transaction */
	exec(mg, "DETACH DATABASE src");
	return rc;
}

int sc_rocpd_merge(char *const *inputs, size_t n, const char *out, char *err, size_t errlen)
{
	struct merge mg = { .err = err, .errlen = errlen };
	struct sc_out_file tmp;
	struct timespec now;
	uint64_t h = 0x6d65726765ull;
	int rc;

	for (size_t i = 0; i < n; i++)
		h = sc_hash_bytes(inputs[i], strlen(inputs[i]), h);
	clock_gettime(CLOCK_REALTIME, &now);
	sc_rocpd_make_guid((uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec,
			   h ^ (uint64_t)now.tv_nsec, mg.guid, sizeof(mg.guid));
	sc_rocpd_uuid(mg.guid, mg.uuid, sizeof(mg.uuid));
	if (sc_out_begin(&tmp, out, 0644, SC_OUT_NAMED, err, errlen))
		return -1;
	if (sqlite3_open_v2(tmp.tmp, &mg.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL) !=
	    SQLITE_OK) {
		snprintf(err, errlen, "cannot create %s: %s", tmp.tmp, sqlite3_errmsg(mg.db));
		sqlite3_close(mg.db);
		sc_out_abort(&tmp, NULL);
		return -1;
	}
	rc = exec(&mg, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
		       "CREATE TEMP TABLE smap (old INTEGER PRIMARY KEY, new INTEGER); "
		       "CREATE TEMP TABLE nmap (old INTEGER PRIMARY KEY, new INTEGER); BEGIN");
	if (!rc)
		rc = sc_rocpd_create(mg.db, mg.guid, err, errlen);
	if (!rc)
		rc = exec(&mg, "COMMIT");
	if (!rc) {
		uint64_t bytes = 0;
		struct stat st;

		for (size_t i = 0; i < n; i++)
			bytes += stat(inputs[i], &st) ? 0 : (uint64_t)st.st_size;
		sc_progress_begin(n == 1 ? "merging 1 database" : "merging databases", bytes);
	}
	mg.clocks = sc_clock_survey_new();
	for (size_t i = 0; !rc && i < n; i++)
		survey_file(&mg, inputs[i]);
	for (size_t i = 0; !rc && i < n; i++)
		rc = merge_file(&mg, inputs[i]);
	sc_clock_survey_free(mg.clocks);
	sc_progress_end();
	if (sqlite3_close(mg.db) != SQLITE_OK && !rc) {
		snprintf(err, errlen, "cannot write %s: closing it failed", out);
		rc = -1;
	}
	if (rc)
		sc_out_abort(&tmp, NULL);
	else
		rc = sc_out_commit(&tmp, NULL, err, errlen);
	for (size_t i = 0; i < mg.merged.n; i++)
		free(mg.merged.v[i]);
	VEC_FREE(&mg.merged);
	return rc;
}
