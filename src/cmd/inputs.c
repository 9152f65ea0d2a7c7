/* SPDX-License-Identifier: MIT */
/*
 * The rocpd databases a reader verb (summary, merge) is given: database files as they are;
 * a session folder's rocpd-<pid>.db files, written first if the session has none yet; a
 * folder of sessions (syscope-<exe>-output/, one session per run or per rank) the
 * databases of each; a folder of databases (syscope merge's output) its rocpd-*.db files.
 */
#define PR_FMT ""
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/log.h"
#include "../common/vec.h"
#include "../store/session.h"
#include "cmd.h"

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in `dir` accepted by `want`, sorted. */
static void list_dir(const char *dir, bool (*want)(const char *dir, const char *name), void *vec_)
{
	VEC(char *) *vec = vec_;
	size_t before = vec->n;
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' && want(dir, de->d_name))
			*VEC_PUSH(vec) = sc_xasprintf("%s/%s", dir, de->d_name);
	if (d)
		closedir(d);
	if (vec->n > before)
		qsort(vec->v + before, vec->n - before, sizeof(*vec->v), by_name);
}

static bool is_database(const char *dir, const char *name)
{
	size_t n = strlen(name);

	(void)dir;
	return !strncmp(name, "rocpd-", 6) && n > 3 && !strcmp(name + n - 3, ".db");
}

static bool is_session(const char *dir, const char *name)
{
	char *path = sc_xasprintf("%s/%s", dir, name);
	bool yes = sc_session_is_dir(path);

	free(path);
	return yes;
}

static void session_databases(const char *dir, void *vec_)
{
	VEC(char *) *vec = vec_;
	size_t before = vec->n;

	list_dir(dir, is_database, vec);
	if (vec->n == before) {
		struct sc_settings only_rocpd;
		char err[SC_ERRMSG_MAX];

		pr_info("%s has no rocpd databases yet: writing them", dir);
		if (sc_settings_init(&only_rocpd) ||
		    sc_settings_set(&only_rocpd, SC_SET_OUTPUT_FORMAT, "rocpd", SC_LAYER_CLI,
				    err) ||
		    sc_settings_set(&only_rocpd, SC_SET_KEEP_RAW, "true", SC_LAYER_CLI, err))
			sc_die(SC_EXIT_FAILURE, "out of memory");
		if (sc_convert_session(dir, dir, &only_rocpd, false))
			sc_die(SC_EXIT_FAILURE, "%s could not be converted", dir);
		sc_settings_free(&only_rocpd);
		list_dir(dir, is_database, vec);
	}
}

void sc_rocpd_inputs(const char *arg, void *vec_)
{
	VEC(char *) *vec = vec_;
	VEC(char *) sessions = { 0 };
	struct stat st;

	if (stat(arg, &st))
		sc_die(SC_EXIT_FAILURE, "%s: %s", arg, strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		*VEC_PUSH(vec) = sc_xstrdup(arg);
		return;
	}
	if (sc_session_is_dir(arg)) {
		session_databases(arg, vec);
		return;
	}
	list_dir(arg, is_session, &sessions);
	if (!sessions.n) {
		size_t before = vec->n;

		/* A folder of databases: syscope merge's output (syscope-merged/), say. */
		list_dir(arg, is_database, vec);
		if (vec->n > before)
			return;
		sc_die(SC_EXIT_FAILURE,
		       "%s is neither a rocpd database, nor a session folder, nor a folder of "
		       "sessions or of rocpd-*.db files",
		       arg);
	}
	for (size_t i = 0; i < sessions.n; i++) {
		session_databases(sessions.v[i], vec);
		free(sessions.v[i]);
	}
	VEC_FREE(&sessions);
}
