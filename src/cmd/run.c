/* SPDX-License-Identifier: MIT */
/*
 * syscope run: the general launcher. What is recorded comes from the preset ('balanced'
 * unless --preset or SYSCOPE_PRESET names another), refined by configuration files, the
 * environment, domain flags (--cuda, --cpu, ...) and every setting's own flag. The model is
 * rocprof-sys-run.
 */
#include "cmd.h"

int cmd_run(int argc, char **argv)
{
	struct sc_cli cli;

	if (!sc_profiling_cli(&cli, sc_verb_find("run"), argc, argv, "balanced", NULL))
		return 0;
	return sc_profile_program(&cli);
}
