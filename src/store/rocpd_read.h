/* SPDX-License-Identifier: MIT */
/*
 * Reading rocpd databases, ours or another producer's: one or many files attached to an
 * in-memory database, with the base views of every file combined (UNION ALL) and the data
 * and summary views recreated over them, so that one query sees every process of every file.
 * A file that is not a rocpd database (no metadata, unknown schema version, missing base
 * views) is refused with a message saying which and why.
 */
#ifndef SYSCOPE_STORE_ROCPD_READ_H
#define SYSCOPE_STORE_ROCPD_READ_H

#include <sqlite3.h>
#include <stddef.h>

struct sc_rocpd_set {
	sqlite3 *db; /* queries go here */
	size_t nfiles;
	char *merged; /* more files than SQLite attaches: the temporary database they became */
};

/* Open `paths`. More than sc_rocpd_max_files() are merged first into one temporary database
 * (removed by sc_rocpd_close). Returns 0, or -1 with `err` naming the file and the problem. */
int sc_rocpd_open(struct sc_rocpd_set *set, char *const *paths, size_t n, char *err, size_t errlen);
/* The databases SQLite may attach to one connection (its build's SQLITE_MAX_ATTACHED, 10 in
 * Debian's): a `make` build's or a shell script's session has more processes. */
size_t sc_rocpd_max_files(void);
void sc_rocpd_close(struct sc_rocpd_set *set);
/* Attach `path` read-only to `db` as `schema`, and check that it is rocpd: SQLite, metadata
 * with schema version 3, every base view. Returns 0, or -1 with `err` naming the file and
 * what is wrong (and nothing attached). */
int sc_rocpd_attach(sqlite3 *db, const char *path, const char *schema, char *err, size_t errlen);
/* The first column of the first row of `sql` as an integer (0 when there is none), with
 * `text` (or nothing, when NULL) bound to its ?1. */
long long sc_rocpd_scalar(sqlite3 *db, const char *sql, const char *text);
/* 0 when `path` is a regular, readable file that starts like an SQLite database; else -1 with
 * `err` saying which of these it is not (permission denied is said as such). */
int sc_sqlite_file_check(const char *path, char *err, size_t errlen);
/* True when `path` starts like an SQLite database. */
int sc_is_sqlite_file(const char *path);

#endif
