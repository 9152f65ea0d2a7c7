/* SPDX-License-Identifier: MIT */
#include "session.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#define MAX_PROBLEMS 200 /* a badly damaged session must not bury the summary */

void sc_session_problem(struct sc_session *s, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	if (s->problems.n > MAX_PROBLEMS)
		return;
	if (s->problems.n == MAX_PROBLEMS) {
		*VEC_PUSH(&s->problems) = sc_xstrdup("(more problems not listed)");
		return;
	}
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (msg)
		*VEC_PUSH(&s->problems) = msg;
}

bool sc_session_has_raw(const char *dir)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/" SC_SESSION_RAW_DIR, dir);
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

bool sc_session_is_dir(const char *dir)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/" SC_SESSION_INFO, dir);
	return sc_session_has_raw(dir) || (!stat(path, &st) && S_ISREG(st.st_mode));
}

int sc_session_remove_raw(const char *dir, char *err, size_t errlen)
{
	char path[4200], file[4500];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/" SC_SESSION_RAW_DIR, dir);
	d = opendir(path);
	if (!d) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	/* The runtime writes plain files only into raw/ (raw files, vDSO copies, plans). */
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
			if (unlink(file) && !rc) {
				rc = -errno;
				snprintf(err, errlen, "cannot remove %s: %s", file,
					 strerror(errno));
			}
		}
	closedir(d);
	if (!rc && rmdir(path)) {
		rc = -errno;
		snprintf(err, errlen, "cannot remove %s: %s", path, strerror(errno));
	}
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* How the launched program ended, as its launcher saw it (a SIGKILL leaves no trace in the
 * program's own file). */
static void read_launch_end(struct sc_session *s, const char *dir)
{
	char path[4200];
	json_t *info, *sig;

	snprintf(path, sizeof(path), "%s/" SC_SESSION_INFO, dir);
	if (!(info = json_load_file(path, 0, NULL)))
		return;
	sig = json_object_get(json_object_get(info, "exit"), "signal");
	s->launched_pid = (int32_t)json_integer_value(json_object_get(info, "pid"));
	s->launched_signal = json_is_integer(sig) ? (int)json_integer_value(sig) : 0;
	json_decref(info);
}

int sc_session_open(struct sc_session *s, const char *dir, char *err, size_t errlen)
{
	VEC(char *) names = { 0 };
	char path[4200];
	struct dirent *de;
	DIR *d;

	memset(s, 0, sizeof(*s));
	s->dir = sc_xstrdup(dir);
	snprintf(path, sizeof(path), "%s/" SC_SESSION_RAW_DIR, dir);
	d = opendir(path);
	if (!d) {
		snprintf(err, errlen, "%s is not a syscope session folder (no %s/ inside: %s)", dir,
			 SC_SESSION_RAW_DIR, strerror(errno));
		sc_session_close(s);
		return -ENOENT;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name), sl = strlen(SC_RAW_SUFFIX);

		if (len > sl && !strcmp(de->d_name + len - sl, SC_RAW_SUFFIX))
			*VEC_PUSH(&names) = sc_xasprintf("%s/%s", path, de->d_name);
	}
	closedir(d);
	if (names.n > 1)
		qsort(names.v, names.n, sizeof(*names.v), by_name);
	for (size_t i = 0; i < names.n; i++) {
		struct sc_raw r;
		char msg[1024];
		int rc = sc_raw_open(&r, names.v[i], msg, sizeof(msg));

		if (rc == -ENODATA)
			s->empty_files++;
		else if (rc)
			sc_session_problem(s, "%s", msg);
		else
			*VEC_PUSH(&s->files) = r;
		free(names.v[i]);
	}
	VEC_FREE(&names);
	read_launch_end(s, dir);
	return 0;
}

void sc_session_close(struct sc_session *s)
{
	for (size_t i = 0; i < s->files.n; i++)
		sc_raw_close(&s->files.v[i]);
	VEC_FREE(&s->files);
	for (size_t i = 0; i < s->problems.n; i++)
		free(s->problems.v[i]);
	VEC_FREE(&s->problems);
	free(s->dir);
	memset(s, 0, sizeof(*s));
}
