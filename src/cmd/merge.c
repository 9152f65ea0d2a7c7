/* SPDX-License-Identifier: MIT */
/*
 * syscope merge INPUT... -o OUT: many processes, MPI ranks or nodes into one rocpd database,
 * whose views show every process, and one Perfetto trace in which each process keeps its
 * own tracks and is named with its rank. Inputs are rocpd databases, session folders or
 * folders of sessions (inputs.c). Other formats (csv, json, text, folded) can be made from
 * the merged database in the same run.
 */
#define PR_FMT "merge: "
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/log.h"
#include "../common/vec.h"
#include "../store/rocpd.h"
#include "cmd.h"
#include "output_path.h"

#define DEFAULT_OUT "syscope-merged"

struct target {
	char *dir, *db, *trace; /* trace: a file name in dir */
};

/* OUT ending in .db names the database (the trace goes beside it); else OUT is a folder. */
static void target_of(const char *out, struct target *t)
{
	size_t n = strlen(out);

	if (n > 3 && !strcmp(out + n - 3, ".db")) {
		const char *slash = strrchr(out, '/');
		const char *base = slash ? slash + 1 : out;

		t->dir = sc_dir_of(out);
		t->db = sc_xstrdup(out);
		t->trace = sc_xasprintf("%.*s.pftrace", (int)(strlen(base) - 3), base);
	} else {
		t->dir = sc_xstrdup(out);
		t->db = sc_xasprintf("%s/rocpd-merged.db", out);
		t->trace = sc_xstrdup("perfetto-trace-merged.pftrace");
	}
}

int cmd_merge(int argc, char **argv)
{
	const struct sc_verb *verb = sc_verb_find("merge");
	VEC(char *) files = { 0 };
	struct sc_cli cli;
	struct target t;
	char err[1024], *out;
	int rc = 0;

	if (!sc_cli_parse_formats(
		    &cli, verb, argc, argv,
		    "Formats besides the merged rocpd database: pftrace (the default), "
		    "csv, json, text, folded"))
		return 0;
	if (!cli.nrest)
		sc_die(SC_EXIT_USAGE,
		       "merge: give the sessions or rocpd databases to merge (usage: %s)",
		       verb->usage);
	out = cli.settings.v[SC_SET_OUTPUT_PATH].layer == SC_LAYER_CLI
		      ? sc_output_path_for_input(&cli.settings,
						 sc_str(&cli.settings, SC_SET_OUTPUT_PATH),
						 cli.rest[0])
		      : sc_xstrdup(DEFAULT_OUT);
	sc_output_path_trim(out);
	target_of(out, &t);
	free(out);
	for (int i = 0; i < cli.nrest; i++)
		sc_rocpd_inputs(cli.rest[i], &files);
	for (size_t i = 0; i < files.n; i++) {
		struct stat a, b;

		if (!stat(files.v[i], &a) && !stat(t.db, &b) && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev)
			sc_die(SC_EXIT_USAGE,
			       "merge: %s is an input; the merged database must go elsewhere (-o)",
			       t.db);
	}
	if (mkdir(t.dir, 0755) && errno != EEXIST)
		sc_die(SC_EXIT_FAILURE, "cannot create %s: %s", t.dir, strerror(errno));
	sc_formats_besides_rocpd(&cli.settings); /* the merged database is always written */
	if (sc_rocpd_merge(files.v, files.n, t.db, err, sizeof(err))) {
		pr_err("%s", err);
		rc = 1;
	} else {
		fprintf(stderr, "syscope: merged %zu database%s into %s\n", files.n,
			files.n == 1 ? "" : "s", t.db);
		if (sc_str(&cli.settings, SC_SET_OUTPUT_FORMAT)[0])
			rc = sc_convert_databases(&t.db, 1, t.dir, &cli.settings,
						  sc_bool(&cli.settings, SC_SET_SUMMARY), t.trace);
	}
	for (size_t i = 0; i < files.n; i++)
		free(files.v[i]);
	VEC_FREE(&files);
	free(t.dir);
	free(t.db);
	free(t.trace);
	sc_cli_free(&cli);
	return rc;
}
