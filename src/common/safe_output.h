/* SPDX-License-Identifier: MIT */
/*
 * Writing a file the user named without harming what is already there. Every file the CLI
 * writes goes through this:
 *   - the destination must be absent, or a regular file that syscope made (it is in a
 *     session folder, or listed in its folder's .syscope-outputs) unless --force was given;
 *     symbolic links, devices, FIFOs and folders are never written through or replaced;
 *   - the data goes to a temporary file beside it, created exclusively (an unnamed O_TMPFILE
 *     where the filesystem has it, so that even a SIGKILL leaves nothing behind; else
 *     mkostemp, which never follows a link), removed on failure and on SIGINT, SIGTERM and
 *     SIGHUP of the CLI; a named one left by a killed syscope (".NAME.PID.XXXXXX", its
 *     process gone) is removed by the next that writes NAME;
 *   - it is renamed over the destination only when complete.
 */
#ifndef SYSCOPE_COMMON_SAFE_OUTPUT_H
#define SYSCOPE_COMMON_SAFE_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* --force: replace regular files syscope did not make. Set by the CLI. */
extern bool sc_out_force;

#define SC_OUT_MANIFEST ".syscope-outputs"

/* What a path that is not a regular file is ("a FIFO"), for the message refusing it. */
const char *sc_file_kind(mode_t mode);

/* The temporary needs a name from the start (SQLite opens files by name). */
#define SC_OUT_NAMED 0x1u
/* The caller knows an existing destination is syscope's, by its contents. */
#define SC_OUT_OURS 0x2u
/* Not listed in the manifest: the file carries its own mark (instrument -o's copies). */
#define SC_OUT_NO_MANIFEST 0x4u

struct sc_out_file {
	char *dest; /* where it goes */
	char *tmp;  /* the temporary's name; NULL while an unnamed O_TMPFILE */
	int fd;
	int slot; /* in the table of temporaries removed on a signal; -1 if none */
	unsigned flags;
};

/* 0 when `dest` may be written (see above); else -1 with `err` saying why not and what to
 * do. */
int sc_out_may_replace(const char *dest, char *err, size_t errlen);

/* Check `dest` and create its temporary (`mode`, less the umask) in `o`. Returns 0, or -1
 * with `err` set and nothing created. */
int sc_out_begin(struct sc_out_file *o, const char *dest, mode_t mode, unsigned flags, char *err,
		 size_t errlen);

/* Finish: flush `f` (the stream on o->fd, or NULL), close, check `dest` again and rename the
 * temporary over it, and list it in the folder's manifest. On any failure the temporary is
 * removed. Returns 0, or -1 with `err` naming the file and the problem. */
int sc_out_commit(struct sc_out_file *o, FILE *f, char *err, size_t errlen);

/* Give up: close (`f` if not NULL) and remove the temporary. */
void sc_out_abort(struct sc_out_file *o, FILE *f);

/* Write `len` bytes to `dest` through a temporary. Returns 0 or -1 with `err` set. */
int sc_out_write_file(const char *dest, const void *data, size_t len, mode_t mode, unsigned flags,
		      char *err, size_t errlen);

/* A child process writing outputs of its own (pid, or -1: none any more): a cleanup signal
 * ends it (SIGTERM) and waits for it before this process's temporaries are removed. */
void sc_out_helper(pid_t pid);

#endif /* SYSCOPE_COMMON_SAFE_OUTPUT_H */
