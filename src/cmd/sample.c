/* SPDX-License-Identifier: MIT */
/*
 * syscope sample: call-stack sampling of an unmodified program and everything it starts,
 * then the profile outputs and a summary. The model is rocprof-sys-sample.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "cmd.h"

int cmd_sample(int argc, char **argv)
{
	const struct sc_verb *verb = sc_verb_find("sample");
	struct sc_launch_result res = { 0 };
	struct sc_cli cli;
	char err[SC_ERRMSG_MAX];
	int rc;

	sc_cli_parse(&cli, verb, argc, argv, NULL, true);
	if (sc_cli_answered(&cli, NULL))
		return 0;
	if (!cli.nrest)
		sc_die(SC_EXIT_USAGE, "sample: no program given (usage: %s)", verb->usage);
	/* This verb samples, whatever the environment says. */
	if (sc_settings_set(&cli.settings, SC_SET_USE_SAMPLING, "true", SC_SRC_CLI, err))
		sc_die(SC_EXIT_FAILURE, "%s", err);

	sc_launch(&cli, &res);
	rc = sc_convert_session(res.session_dir, res.session_dir, &cli.settings,
				sc_bool(&cli.settings, SC_SET_SUMMARY));
	if (rc)
		fprintf(stderr,
			"syscope: the raw data is kept in %s/raw; 'syscope convert %s' "
			"retries\n",
			res.session_dir, res.session_dir);
	free(res.session_dir);
	sc_cli_free(&cli);
	return res.exit_code;
}
