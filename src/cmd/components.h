/* SPDX-License-Identifier: MIT */
/*
 * The component table: one row per data source, read by everything on the command line that
 * needs to know the sources — the domain flags of run and sample (profiling.c), the launcher's
 * pre-launch checks and the program's environment (launch.c), `avail -C` and
 * `avail --list-domains` (avail.c), --help, and the generated docs. Adding a source is its
 * runtime folder plus one row in components.c.
 *
 * A row's domain flag (--FLAG[=VALUE]) either belongs to it alone (--cuda=kernel,nvtx chooses
 * among its domains, --cpu=HZ sets its rate) or is shared by several rows, each naming itself
 * with a token of the flag (--parallel=mpi,openmp).
 */
#ifndef SYSCOPE_CMD_COMPONENTS_H
#define SYSCOPE_CMD_COMPONENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/settings.h"

/* A token of a domain flag and the spellings users reach for (canonical: spelling == token). */
struct sc_alias {
	const char *spelling, *token;
};

/* What `avail -C` says of a component on this machine. */
struct sc_probe {
	bool ok;
	char state[256];
};

/* How a component prepares the program's start (launcher side, before the fork). */
struct sc_launch_env {
	const char *libdir;  /* where libsyscope.so and its plugins are */
	const char *program; /* the program to run, as found on PATH */
};

struct sc_component {
	const char *name;	 /* as `avail -C` lists it */
	const char *description; /* what it records */
	int enable;		 /* the BOOL setting that turns it on; -1: none (always on) */

	/* Domain flag of run and sample: --FLAG, or NULL for none. */
	const char *flag;
	const char *flag_metavar, *flag_help;
	const char *token; /* shared flag: the token naming this row; NULL: own flag */
	const struct sc_alias
		*aliases; /* own flag: its tokens; shared flag: this row's spellings */
	int value;	  /* own flag: the setting its =VALUE goes to; -1: none */

	/* Not in this version yet: why (flags are accepted and checked, and say so). */
	const char *pending;

	/* Variables the component sets in the program's environment; the runtime carries them
	 * across exec like LD_PRELOAD, whatever environment the program passes. NULL-ended. */
	const char *const *program_env;

	void (*probe)(struct sc_probe *p);    /* avail -C; NULL: always yes */
	void (*check)(struct sc_settings *s); /* before the session exists */
	void (*environment)(const struct sc_settings *s, const struct sc_launch_env *e); /* child */
};

extern const struct sc_component sc_components[];
extern const size_t sc_ncomponents;

const struct sc_component *sc_component_find(const char *name);

/* Canonical tokens (space-separated, caller frees) of a comma list for --flag; "" or "all":
 * every token. Exits with the valid ones and the closest on an unknown one. */
char *sc_domain_tokens(const char *flag, const char *value, const struct sc_alias *aliases);

/* The canonical tokens of a flag (own: its aliases'; shared: every row's token), into buf. */
const char *sc_domain_flag_values(const char *flag, char *buf, size_t n);

/* Launcher hooks over every enabled component. */
void sc_components_check(struct sc_settings *s);
/* In the child, before exec: each component's environment, then SYSCOPE_CARRIED_ENV naming
 * the variables they set, for the runtime to carry across exec. */
void sc_components_environment(const struct sc_settings *s, const struct sc_launch_env *e);

#endif /* SYSCOPE_CMD_COMPONENTS_H */
