/* SPDX-License-Identifier: MIT */
/*
 * syscope report SESSION|FOLDER|FILE.db... [-o FILE|FOLDER]: the HTML report (src/sinks/html.c)
 * of a session folder, a folder of sessions or of rocpd databases (syscope merge's output),
 * or rocpd databases, every process of them in one page, and nothing else: report.html
 * beside the (first) input by default. Not to be confused with report.c, the text tables of `summary` and `avail`.
 */
#define PR_FMT "report: "
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/log.h"
#include "../common/strutil.h"
#include "../common/vec.h"
#include "../model/import.h"
#include "../model/model.h"
#include "../model/profile.h"
#include "../sinks/html.h"
#include "../store/session.h"
#include "cmd.h"

/* The model of rocpd databases: the files named, and those of each folder (a converted
 * session, a folder of sessions or of databases), as summary takes them. */
static int import_model(char **inputs, int n, const char *dir, struct sc_model *m,
			struct sc_session *s, const struct sc_settings *set)
{
	VEC(char *) paths = { 0 };
	char err[1024];
	int rc = 0;

	memset(s, 0, sizeof(*s));
	s->dir = sc_xstrdup(dir);
	for (int i = 0; i < n; i++)
		sc_rocpd_inputs(inputs[i], &paths);
	if (sc_model_import_rocpd(m, s, paths.v, paths.n, sc_bool(set, SC_SET_INCLUDE_INLINES), 0,
				  err, sizeof(err))) {
		pr_err("%s", err);
		sc_model_free(m);
		sc_session_close(s);
		rc = 1;
	}
	for (size_t i = 0; i < paths.n; i++)
		free(paths.v[i]);
	VEC_FREE(&paths);
	return rc;
}

/* One session folder with its raw records: the model from them; anything else from rocpd
 * databases. */
static int open_model(char **inputs, int n, const char *dir, struct sc_model *m,
		      struct sc_session *s, const struct sc_settings *set)
{
	char err[1024];

	if (n != 1 || !sc_session_is_dir(inputs[0]) || !sc_session_has_raw(inputs[0]))
		return import_model(inputs, n, dir, m, s, set);
	if (sc_session_open(s, inputs[0], err, sizeof(err))) {
		pr_err("%s", err);
		return 1;
	}
	if (!s->files.n) {
		pr_err("%s holds no recorded data", inputs[0]);
		sc_session_close(s);
		return 1;
	}
	sc_model_build(m, s, sc_bool(set, SC_SET_INCLUDE_INLINES));
	return 0;
}

static int write_report(struct sc_model *m, const char *dir, const struct sc_settings *set,
			bool from_database)
{
	struct sc_profile_set profiles;
	struct sc_output out = { .model = m,
				 .profiles = &profiles,
				 .settings = set,
				 .dir = dir,
				 .from_database = from_database };
	struct sc_func_view view;
	char err[512];
	int rc;

	/* Which instrumented functions show, as convert's outputs do. */
	if (sc_func_view_init(&view, sc_str(set, SC_SET_FUNCTION_INCLUDE),
			      sc_str(set, SC_SET_FUNCTION_EXCLUDE), err, sizeof(err)))
		sc_die(SC_EXIT_USAGE, "%s", err);
	view.label_file = sc_list_has(set, SC_SET_FUNCTION_LABEL, "file");
	view.label_line = sc_list_has(set, SC_SET_FUNCTION_LABEL, "line");
	m->view = &view;
	m->python_native = sc_bool(set, SC_SET_PYTHON_NATIVE);
	sc_profiles_build(&profiles, m, false);
	rc = sc_sink_html.write(&out);
	for (size_t i = 0; i < out.errors.n; i++)
		pr_err("%s", out.errors.v[i]);
	if (!rc)
		printf("%s/%s\n", dir, sc_html_file_name);
	sc_output_free(&out);
	sc_profiles_free(&profiles);
	m->view = NULL;
	sc_func_view_free(&view);
	return rc ? 1 : 0;
}

int cmd_report(int argc, char **argv)
{
	const struct sc_verb *verb = sc_verb_find("report");
	struct sc_extra_opt extras[] = { { NULL, 0, false, NULL, NULL, NULL } };
	struct sc_session session;
	struct sc_model model;
	struct sc_cli cli;
	struct stat st, ost;
	char *dir, *name = NULL;
	const char *input;
	bool from_raw;
	int rc;

	sc_cli_parse(&cli, verb, argc, argv, extras, false);
	if (sc_cli_answered(&cli, extras))
		return 0;
	if (cli.nrest < 1)
		sc_die(SC_EXIT_USAGE,
		       "report: give a session folder, a folder of sessions or of rocpd databases, "
		       "or rocpd databases (usage: %s)",
		       verb->usage);
	input = cli.rest[0];
	for (int i = 0; i < cli.nrest; i++)
		if (stat(cli.rest[i], &st))
			sc_die(SC_EXIT_FAILURE, "%s: %s", cli.rest[i], strerror(errno));
	stat(input, &st);
	if (cli.settings.v[SC_SET_OUTPUT_PATH].layer == SC_LAYER_CLI) {
		const char *o = sc_str(&cli.settings, SC_SET_OUTPUT_PATH);

		if (!stat(o, &ost) && S_ISDIR(ost.st_mode)) {
			dir = sc_xstrdup(o);
		} else {
			dir = sc_dir_of(o);
			name = sc_xstrdup(sc_base_name(o));
		}
	} else {
		/* Beside the input: in the folder given, or the first database's. */
		dir = S_ISDIR(st.st_mode) ? sc_xstrdup(input) : sc_dir_of(input);
	}
	if (name)
		sc_html_file_name = name;
	from_raw = cli.nrest == 1 && sc_session_is_dir(input) && sc_session_has_raw(input);
	rc = open_model(cli.rest, cli.nrest, dir, &model, &session, &cli.settings);
	if (!rc) {
		rc = write_report(&model, dir, &cli.settings, !from_raw);
		sc_model_free(&model);
		sc_session_close(&session);
	}
	free(dir);
	free(name);
	sc_cli_free(&cli);
	return rc;
}
