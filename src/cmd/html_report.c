/* SPDX-License-Identifier: MIT */
/*
 * syscope report SESSION|FILE.db [-o FILE|FOLDER]: the HTML report (src/sinks/html.c) of a
 * session folder or a rocpd database, and nothing else: report.html beside the input by
 * default. Not to be confused with report.c, the text tables of `summary` and `avail`.
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

/* Build the model of `input` (a session folder or a database); returns 0 or 1 (said why). */
/* The model of rocpd databases: one file, or a converted session's (its raw/ removed). */
static int import_model(const char *input, bool is_dir, struct sc_model *m, struct sc_session *s,
			const struct sc_settings *set)
{
	VEC(char *) paths = { 0 };
	char err[1024];
	int rc = 0;

	memset(s, 0, sizeof(*s));
	s->dir = is_dir ? sc_xstrdup(input) : sc_dir_of(input);
	if (is_dir)
		sc_rocpd_inputs(input, &paths);
	else
		*VEC_PUSH(&paths) = sc_xstrdup(input);
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

static int open_model(const char *input, bool is_dir, struct sc_model *m, struct sc_session *s,
		      const struct sc_settings *set)
{
	char err[1024];

	if (!is_dir || (sc_session_is_dir(input) && !sc_session_has_raw(input)))
		return import_model(input, is_dir, m, s, set);
	if (!sc_session_is_dir(input)) {
		pr_err("%s: not a session folder (no raw/ inside); give the folder syscope wrote, "
		       "or a rocpd database",
		       input);
		return 1;
	}
	if (sc_session_open(s, input, err, sizeof(err))) {
		pr_err("%s", err);
		return 1;
	}
	if (!s->files.n) {
		pr_err("%s holds no recorded data", input);
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
	int rc;

	sc_cli_parse(&cli, verb, argc, argv, extras, false);
	if (sc_cli_answered(&cli, extras))
		return 0;
	if (cli.nrest != 1)
		sc_die(SC_EXIT_USAGE,
		       "report: give one session folder or rocpd database (usage: %s)",
		       verb->usage);
	input = cli.rest[0];
	if (stat(input, &st))
		sc_die(SC_EXIT_FAILURE, "%s: %s", input, strerror(errno));
	if (cli.settings.v[SC_SET_OUTPUT_PATH].layer == SC_LAYER_CLI) {
		const char *o = sc_str(&cli.settings, SC_SET_OUTPUT_PATH);

		if (!stat(o, &ost) && S_ISDIR(ost.st_mode)) {
			dir = sc_xstrdup(o);
		} else {
			dir = sc_dir_of(o);
			name = sc_xstrdup(sc_base_name(o));
		}
	} else {
		dir = S_ISDIR(st.st_mode) ? sc_xstrdup(input) : sc_dir_of(input);
	}
	if (name)
		sc_html_file_name = name;
	rc = open_model(input, S_ISDIR(st.st_mode), &model, &session, &cli.settings);
	if (!rc) {
		rc = write_report(&model, dir, &cli.settings,
				  !S_ISDIR(st.st_mode) || !sc_session_has_raw(input));
		sc_model_free(&model);
		sc_session_close(&session);
	}
	free(dir);
	free(name);
	sc_cli_free(&cli);
	return rc;
}
