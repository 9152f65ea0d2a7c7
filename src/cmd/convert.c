/* SPDX-License-Identifier: MIT */
/*
 * syscope convert SESSION: read every raw file of a session folder, build the model and the
 * profiles, and write the output formats asked for, then the summary. Runs after every
 * profiling verb, and by hand on a session whose program was killed or whose conversion was
 * interrupted. Damaged data is converted as far as it is valid, and every problem is named.
 */
#define PR_FMT "convert: "
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/log.h"
#include "../model/model.h"
#include "../model/profile.h"
#include "../sinks/sink.h"
#include "../sinks/summary.h"
#include "../store/session.h"
#include "cmd.h"

int sc_convert_session(const char *dir, const char *out_dir, const struct sc_settings *s,
		       bool summary)
{
	struct sc_session session;
	struct sc_model model;
	struct sc_profile_set profiles;
	struct sc_output out = { .settings = s, .dir = out_dir };
	char err[1024];
	int failed;

	if (sc_session_open(&session, dir, err, sizeof(err))) {
		pr_err("%s", err);
		return 1;
	}
	if (!session.files.n) {
		pr_err("%s holds no recorded data%s", dir,
		       session.problems.n ? " that could be read:" : " (did the program start?)");
		for (size_t i = 0; i < session.problems.n; i++)
			pr_err("  %s", session.problems.v[i]);
		sc_session_close(&session);
		return 1;
	}
	sc_model_build(&model, &session, sc_bool(s, SC_SET_INCLUDE_INLINES));
	sc_profiles_build(&profiles, &model);
	out.model = &model;
	out.profiles = &profiles;
	failed = sc_sinks_write_all(&out);
	if (summary)
		sc_summary_print(stderr, &out, (unsigned)sc_int(s, SC_SET_SUMMARY_TOP));
	else
		for (size_t i = 0; i < out.errors.n; i++)
			pr_err("%s", out.errors.v[i]);
	for (size_t i = 0; i < out.written.n; i++)
		free(out.written.v[i]);
	for (size_t i = 0; i < out.errors.n; i++)
		free(out.errors.v[i]);
	VEC_FREE(&out.written);
	VEC_FREE(&out.errors);
	sc_profiles_free(&profiles);
	sc_model_free(&model);
	sc_session_close(&session);
	return failed ? 1 : 0;
}

int cmd_convert(int argc, char **argv)
{
	const struct sc_verb *verb = sc_verb_find("convert");
	struct sc_cli cli;
	const char *out_dir;
	struct stat st;
	int rc;

	sc_cli_parse(&cli, verb, argc, argv, NULL, false);
	if (sc_cli_answered(&cli, NULL))
		return 0;
	if (cli.nrest != 1)
		sc_die(SC_EXIT_USAGE, "convert: give one session folder (usage: %s)", verb->usage);
	if (stat(cli.rest[0], &st))
		sc_die(SC_EXIT_FAILURE, "%s: %s", cli.rest[0], strerror(errno));
	if (!S_ISDIR(st.st_mode))
		sc_die(SC_EXIT_FAILURE, "%s: not a session folder (give the folder syscope wrote)",
		       cli.rest[0]);
	out_dir = cli.settings.v[SC_SET_OUTPUT_PATH].source == SC_SRC_CLI
			  ? sc_str(&cli.settings, SC_SET_OUTPUT_PATH)
			  : cli.rest[0];
	if (out_dir != cli.rest[0] && mkdir(out_dir, 0755) && errno != EEXIST)
		sc_die(SC_EXIT_FAILURE, "cannot create %s: %s", out_dir, strerror(errno));
	rc = sc_convert_session(cli.rest[0], out_dir, &cli.settings,
				sc_bool(&cli.settings, SC_SET_SUMMARY));
	sc_cli_free(&cli);
	return rc;
}
