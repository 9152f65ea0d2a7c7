/* SPDX-License-Identifier: MIT */
/*
 * A session folder: what one `syscope` run (or a program started by a rewritten binary)
 * leaves behind.
 *
 *   <session>/session.json        what the launcher knew: command, settings and their
 *                                 sources, host, start/end, exit status (absent when the
 *                                 program was not started by the launcher)
 *   <session>/raw/<pid>.sraw       one raw file per process image (format.h)
 *   <session>/raw/vdso-<id>.so    the vDSO image, for symbolizing samples inside it
 *   <session>/<outputs>           written by the converter; raw/ is removed after a
 *                                 successful conversion that wrote the rocpd database,
 *                                 unless --keep-raw
 */
#ifndef SYSCOPE_STORE_SESSION_H
#define SYSCOPE_STORE_SESSION_H

#include "../common/vec.h"
#include "raw.h"

#define SC_SESSION_RAW_DIR "raw"
#define SC_SESSION_INFO "session.json"

struct sc_session {
	char *dir;
	VEC(struct sc_raw) files;
	VEC(char *) problems; /* one line each: file, offset, what was wrong */
	unsigned empty_files; /* processes that never started recording */
	/* From session.json, when the launcher wrote it: the program it started and the signal
	 * that ended it (0: it exited, or nothing is known). */
	int32_t launched_pid;
	int launched_signal;
};

/*
 * Open every raw file of the session folder `dir`. Files that cannot be read are listed in
 * `problems` and skipped. Returns 0, or -ENOENT with `err` set when `dir` is not a session
 * folder (no raw/ inside).
 */
int sc_session_open(struct sc_session *s, const char *dir, char *err, size_t errlen);
void sc_session_close(struct sc_session *s);
/* Record a problem (printf-style) for the end-of-conversion report. */
__attribute__((format(printf, 2, 3))) void sc_session_problem(struct sc_session *s, const char *fmt,
							      ...);
/* True when `dir` looks like a session folder: raw/ inside, or session.json (a converted
 * session whose raw/ was removed). */
bool sc_session_is_dir(const char *dir);
/* True when `dir` holds a raw/ folder (its recorded data, which convert reads). */
bool sc_session_has_raw(const char *dir);
/* Remove `dir`/raw and the files in it; 0, or -errno with `err` naming what was left. */
int sc_session_remove_raw(const char *dir, char *err, size_t errlen);

#endif /* SYSCOPE_STORE_SESSION_H */
