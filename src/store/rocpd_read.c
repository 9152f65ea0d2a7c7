/* SPDX-License-Identifier: MIT */
#include "rocpd_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/vec.h"
#include "rocpd.h"

int sc_sqlite_file_check(const char *path, char *err, size_t errlen)
{
	char magic[16] = "";
	struct stat st;
	ssize_t got;
	/* O_NONBLOCK: a FIFO given as a database must not hang the reader. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot read it: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file; give a rocpd database file", path);
		close(fd);
		return -1;
	}
	got = read(fd, magic, sizeof(magic));
	if (got < 0) {
		snprintf(err, errlen, "%s: cannot read it: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	if (got != (ssize_t)sizeof(magic) || memcmp(magic, "SQLite format 3", 16)) {
		snprintf(err, errlen, "%s is not an SQLite database", path);
		return -1;
	}
	return 0;
}

int sc_is_sqlite_file(const char *path)
{
	char err[8];

	return !sc_sqlite_file_check(path, err, sizeof(err));
}

static int sql(sqlite3 *db, const char *q, char *err, size_t errlen)
{
	char *msg = NULL;

	if (sqlite3_exec(db, q, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	snprintf(err, errlen, "%s", msg ? msg : "?");
	sqlite3_free(msg);
	return -1;
}

/* Check that attached file `schema` is rocpd: its metadata says schema version 3 and every
 * base view exists. */
static int check_rocpd(sqlite3 *db, const char *schema, const char *path, char *err, size_t errlen)
{
	char q[512];
	sqlite3_stmt *st;
	const char *version = NULL;
	int rc = -1;

	snprintf(q, sizeof(q), "SELECT value FROM %s.rocpd_metadata WHERE tag = 'schema_version'",
		 schema);
	if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) {
		snprintf(
			err, errlen,
			"%s is an SQLite database but not a rocpd one (it has no rocpd_metadata: %s)",
			path, sqlite3_errmsg(db));
		return -1;
	}
	if (sqlite3_step(st) == SQLITE_ROW)
		version = (const char *)sqlite3_column_text(st, 0);
	if (!version)
		snprintf(err, errlen, "%s: rocpd_metadata holds no schema_version", path);
	else if (strcmp(version, SC_ROCPD_SCHEMA_VERSION) && strncmp(version, "3.", 2))
		snprintf(err, errlen, "%s: rocpd schema version %s; syscope reads version 3", path,
			 version);
	else
		rc = 0;
	sqlite3_finalize(st);
	for (size_t i = 0; !rc && sc_rocpd_base_names[i]; i++) {
		snprintf(q, sizeof(q), "SELECT * FROM %s.rocpd_%s LIMIT 0", schema,
			 sc_rocpd_base_names[i]);
		if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) {
			snprintf(err, errlen, "%s: not a complete rocpd database (no rocpd_%s: %s)",
				 path, sc_rocpd_base_names[i], sqlite3_errmsg(db));
			rc = -1;
		}
		sqlite3_finalize(st);
	}
	return rc;
}

/* A TEMP view per base name: the UNION ALL of that view in every attached file. */
static int union_views(struct sc_rocpd_set *set, char *err, size_t errlen)
{
	for (size_t b = 0; sc_rocpd_base_names[b]; b++) {
		VEC(char) q = { 0 };
		char part[256];
		int n;

		n = snprintf(part, sizeof(part), "CREATE TEMP VIEW rocpd_%s AS ",
			     sc_rocpd_base_names[b]);
		for (size_t i = 0; i < (size_t)n; i++)
			*VEC_PUSH(&q) = part[i];
		for (size_t f = 0; f < set->nfiles; f++) {
			n = snprintf(part, sizeof(part), "%sSELECT * FROM db%zu.rocpd_%s",
				     f ? " UNION ALL " : "", f, sc_rocpd_base_names[b]);
			for (size_t i = 0; i < (size_t)n; i++)
				*VEC_PUSH(&q) = part[i];
		}
		*VEC_PUSH(&q) = '\0';
		n = sql(set->db, q.v, err, errlen);
		VEC_FREE(&q);
		if (n)
			return -1;
	}
	for (size_t v = 0; sc_rocpd_views[v]; v++) {
		const char *ddl = sc_rocpd_views[v];
		char *q = sc_xasprintf("CREATE TEMP VIEW %s", ddl + strlen("CREATE VIEW "));

		if (sql(set->db, q, err, errlen)) {
			free(q);
			return -1;
		}
		free(q);
	}
	return 0;
}

long long sc_rocpd_scalar(sqlite3 *db, const char *sql, const char *text)
{
	sqlite3_stmt *st;
	long long v = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return 0;
	if (text)
		sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

int sc_rocpd_attach(sqlite3 *db, const char *path, const char *schema, char *err, size_t errlen)
{
	char *uri, *q;
	int rc;

	if (sc_sqlite_file_check(path, err, errlen))
		return -1;
	uri = sqlite3_mprintf("file:%s?mode=ro", path);
	q = sqlite3_mprintf("ATTACH DATABASE %Q AS %s", uri, schema);
	rc = sql(db, q, err, errlen);
	sqlite3_free(uri);
	sqlite3_free(q);
	if (rc) {
		char why[256];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s: cannot open it: %s", path, why);
		return -1;
	}
	if (check_rocpd(db, schema, path, err, errlen)) {
		q = sqlite3_mprintf("DETACH DATABASE %s", schema);
		sqlite3_exec(db, q, NULL, NULL, NULL);
		sqlite3_free(q);
		return -1;
	}
	return 0;
}

/* After a failure reading the files together: name the ones SQLite finds damaged. */
static void name_damaged(struct sc_rocpd_set *set, char *const *paths, char *err, size_t errlen)
{
	char why[256];

	snprintf(why, sizeof(why), "%s", err);
	for (size_t i = 0; i < set->nfiles; i++) {
		char q[64], *msg = NULL;

		snprintf(q, sizeof(q), "PRAGMA db%zu.quick_check(1)", i);
		if (sqlite3_exec(set->db, q, NULL, NULL, &msg) != SQLITE_OK) {
			snprintf(err, errlen, "%s is damaged: %s", paths[i], msg ? msg : why);
			sqlite3_free(msg);
			return;
		}
	}
	if (set->nfiles == 1)
		snprintf(err, errlen, "%s: %s", paths[0], why);
}

size_t sc_rocpd_max_files(void)
{
	sqlite3 *db;
	int n = 10; /* SQLite's default SQLITE_MAX_ATTACHED */

	if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
		sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 125);
		n = sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, -1);
	}
	sqlite3_close(db);
	return n > 0 ? (size_t)n : 1;
}

/* The temporary database of merge_first and its folder. Frees `path`. */
static void remove_merged(char *path)
{
	unlink(path);
	*strrchr(path, '/') = '\0';
	rmdir(path);
	free(path);
}

/* The merged database holds every process under one guid: the importer's queries of one
 * process (its regions, samples by track, GPU work, a region's arguments) would each scan
 * the tables of all, a time growing with the square of the processes. Indexes by process
 * make them lookups. Without them (an error here) the reading is only slower. */
static void index_by_process(const char *path)
{
	static const char *const idx[][2] = {
		{ "region", "pid, tid, start" },
		{ "arg", "event_id" },
		{ "track", "pid" },
		{ "sample", "track_id" },
		{ "kernel_dispatch", "pid" },
		{ "memory_copy", "pid" },
		{ "memory_allocate", "pid" },
		{ "info_thread", "pid" },
		{ "info_agent", "pid" },
		{ "info_pmc", "pid" },
		{ "info_stream", "pid" },
		{ "pmc_event", "event_id" },
	};
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	char *uuid = NULL;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT value FROM rocpd_metadata WHERE tag = 'uuid'", -1, &st,
			       NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		uuid = sc_xstrdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN", NULL, NULL,
		     NULL);
	for (size_t i = 0; uuid && i < sizeof(idx) / sizeof(idx[0]); i++) {
		char *q = sqlite3_mprintf("CREATE INDEX IF NOT EXISTS \"sc_by_%s%s\" ON "
					  "\"rocpd_%s%s\" (%s)",
					  idx[i][0], uuid, idx[i][0], uuid, idx[i][1]);

		sqlite3_exec(db, q, NULL, NULL, NULL);
		sqlite3_free(q);
	}
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	free(uuid);
}

/* Past the attach limit: `paths` merged into one temporary database, one file at a time as
 * `syscope merge` does; its path, or NULL with `err` set. */
static char *merge_first(char *const *paths, size_t n, char *err, size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	char *dir = sc_xasprintf("%s/syscope-rocpd-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	char *path;

	if (!mkdtemp(dir)) {
		snprintf(err, errlen, "cannot make a folder to merge %zu databases in: %s", n,
			 strerror(errno));
		free(dir);
		return NULL;
	}
	path = sc_xasprintf("%s/merged.db", dir);
	free(dir);
	pr_info("%zu databases, more than SQLite attaches at once (%zu): merging them first", n,
		sc_rocpd_max_files());
	if (sc_rocpd_merge(paths, n, path, err, errlen)) {
		*strrchr(path, '/') = '\0';
		rmdir(path);
		free(path);
		return NULL;
	}
	index_by_process(path);
	return path;
}

int sc_rocpd_open(struct sc_rocpd_set *set, char *const *paths, size_t n, char *err, size_t errlen)
{
	memset(set, 0, sizeof(*set));
	if (n > sc_rocpd_max_files()) {
		char *merged = merge_first(paths, n, err, errlen);

		if (!merged)
			return -1;
		if (sc_rocpd_open(set, &merged, 1, err, errlen)) {
			remove_merged(merged);
			return -1;
		}
		set->merged = merged;
		return 0;
	}
	if (sqlite3_open_v2(":memory:", &set->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL) !=
	    SQLITE_OK) {
		snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(set->db));
		return -1;
	}
	sqlite3_limit(set->db, SQLITE_LIMIT_ATTACHED, 125);
	/* Temporary tables, sorts and materialized views on disk (through SQLite's bounded page
	 * cache), not in memory: they can be as large as the files. Set before the TEMP views
	 * (changing it later drops them). */
	sqlite3_exec(set->db, "PRAGMA temp_store = FILE", NULL, NULL, NULL);
	for (size_t i = 0; i < n; i++) {
		char schema[32];

		snprintf(schema, sizeof(schema), "db%zu", i);
		if (sc_rocpd_attach(set->db, paths[i], schema, err, errlen))
			goto fail;
		set->nfiles++;
	}
	if (union_views(set, err, errlen)) {
		name_damaged(set, paths, err, errlen);
		goto fail;
	}
	return 0;
fail:
	sc_rocpd_close(set);
	return -1;
}

void sc_rocpd_close(struct sc_rocpd_set *set)
{
	if (set->db)
		sqlite3_close(set->db);
	if (set->merged)
		remove_merged(set->merged);
	memset(set, 0, sizeof(*set));
}
