/* SPDX-License-Identifier: MIT */
#include "sqlite_cause.h"

#include "raw.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#define NEAR_BYTES (1u << 20) /* a write this close to a limit may be the one it refused */

const char *sc_sqlite_cause_of(int code, int sys_errno, const char *sqlite_msg, char *buf, size_t n)
{
	int primary = code & 0xff;
	const char *cause = sc_disk_errno_text(sys_errno);

	if (primary != SQLITE_IOERR && primary != SQLITE_FULL)
		snprintf(buf, n, "%s", sqlite_msg);
	else if (cause)
		snprintf(buf, n, "%s", cause);
	else if (sys_errno)
		snprintf(buf, n, "%s: %s", sqlite_msg, strerror(sys_errno));
	else
		snprintf(buf, n, "%s", primary == SQLITE_FULL ? "the disk is full" : sqlite_msg);
	return buf;
}

/* SQLite keeps errno only until the next system call; for a write that failed without it,
 * the likely cause from the file itself: its size at the process's file size limit, or its
 * file system without room. 0 when neither. */
static int guess_errno(const char *path)
{
	struct rlimit lim;
	struct stat st;
	struct statvfs vfs;

	if (!path || !*path || stat(path, &st))
		return 0;
	if (!getrlimit(RLIMIT_FSIZE, &lim) && lim.rlim_cur != RLIM_INFINITY &&
	    (unsigned long long)st.st_size + NEAR_BYTES >= (unsigned long long)lim.rlim_cur)
		return EFBIG;
	if (!statvfs(path, &vfs) && (unsigned long long)vfs.f_bavail * vfs.f_frsize < NEAR_BYTES)
		return ENOSPC;
	return 0;
}

const char *sc_sqlite_cause(struct sqlite3 *db, char *buf, size_t n)
{
	int code = sqlite3_extended_errcode(db), e = sqlite3_system_errno(db);

	if (!sc_disk_errno_text(e) &&
	    ((code & 0xff) == SQLITE_IOERR || (code & 0xff) == SQLITE_FULL)) {
		int guessed = guess_errno(sqlite3_db_filename(db, "main"));

		if (guessed)
			e = guessed;
	}
	return sc_sqlite_cause_of(code, e, sqlite3_errmsg(db), buf, n);
}
