/* SPDX-License-Identifier: MIT */
/*
 * syscope sample: call-stack sampling of an unmodified program and everything it starts,
 * then the profile outputs and a summary. The model is rocprof-sys-sample.
 */
#include "../common/log.h"
#include "cmd.h"

int cmd_sample(int argc, char **argv)
{
	const struct sc_verb *verb = sc_verb_find("sample");
	struct sc_cli cli;
	char err[SC_ERRMSG_MAX];

	if (!sc_profiling_cli(&cli, verb, argc, argv, NULL, NULL))
		return 0;
	/* This verb samples, whatever a preset or the environment says. */
	if (sc_settings_set(&cli.settings, SC_SET_USE_SAMPLING, "true", SC_LAYER_CLI, err))
		sc_die(SC_EXIT_FAILURE, "%s", err);
	return sc_profile_program(&cli);
}
