/* SPDX-License-Identifier: MIT */
/*
 * SQLite's message for a failed call, with the system's cause where SQLite only says "disk
 * I/O error" or "database or disk is full": a file size limit (ulimit -f), a full disk, a
 * disk quota.
 */
#ifndef SYSCOPE_STORE_SQLITE_CAUSE_H
#define SYSCOPE_STORE_SQLITE_CAUSE_H

#include <stddef.h>

struct sqlite3;

/* The message of the last failed call on `db`, into `buf`; returns `buf`. Where SQLite kept
 * no errno, a file at the size limit or a file system without room is taken as the cause. */
const char *sc_sqlite_cause(struct sqlite3 *db, char *buf, size_t n);

/* The same for a known SQLite result code and system errno (0: none). */
const char *sc_sqlite_cause_of(int code, int sys_errno, const char *sqlite_msg, char *buf,
			       size_t n);

#endif
