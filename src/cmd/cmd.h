/* SPDX-License-Identifier: MIT */
/*
 * The syscope command line: the verb table (main.c), option parsing from the settings table
 * (options.c), the launcher shared by the profiling verbs (launch.c) and conversion
 * (convert.c). Only code under src/cmd/ exits the process.
 */
#ifndef SYSCOPE_CMD_CMD_H
#define SYSCOPE_CMD_CMD_H

#include <stdbool.h>
#include <stdio.h>

#include "../common/settings.h"

/* Exit codes of syscope itself (the profiled program's status passes through otherwise). */
#define SC_EXIT_USAGE 2	     /* bad command line */
#define SC_EXIT_FAILURE 1    /* could not do what was asked */
#define SC_EXIT_NOEXEC 126   /* program found but not executable, as a shell says */
#define SC_EXIT_NOTFOUND 127 /* program not found */

struct sc_verb {
	const char *name;
	int (*fn)(int argc, char **argv);
	unsigned mask; /* SC_VERB_* bit for the settings table */
	const char *summary;
	const char *usage;
};

extern const struct sc_verb sc_verbs[];
extern const unsigned sc_nverbs;
const struct sc_verb *sc_verb_find(const char *name); /* NULL if there is none */

/* A verb-specific option that is not a setting. */
struct sc_extra_opt {
	const char *long_flag; /* without "--" */
	char short_flag;
	bool takes_value;
	const char *metavar;
	const char *help;
	const char **value; /* OUT: the value ("" for a flag given without one), NULL if absent */
};

struct sc_cli {
	const struct sc_verb *verb;
	struct sc_settings settings;
	char **rest; /* program and its arguments, or positional arguments */
	int nrest;
	bool help;
	const char *help_topic;
	bool version;
};

/*
 * Parse a verb's command line into `cli`: defaults, then SYSCOPE_* environment, then flags.
 * With `program_follows`, the first argument that is not an option (or everything after
 * "--") is the program to run; otherwise non-option arguments are positional. Exits with a
 * message on a bad option or value.
 */
void sc_cli_parse(struct sc_cli *cli, const struct sc_verb *verb, int argc, char **argv,
		  struct sc_extra_opt *extras, bool program_follows);

void sc_cli_free(struct sc_cli *cli);
/* When --help or --version was given: print it, free `cli` and return true. */
bool sc_cli_answered(struct sc_cli *cli, const struct sc_extra_opt *extras);

/* A settings-parser message ("NAME 'x' is not valid (valid: ...)") as one about the flag the
 * user typed ("--flag 'x' is not valid (valid: ...)"), into `out`. */
void sc_flag_message(int id, const char *flag, const char *errmsg, char *out, size_t n);
/* How an option was typed on the argv `cli` was parsed from, for messages: "-x" or "--long"
 * (the last given before the program or "--"; "--long" when neither was). Returns `buf`. */
#define SC_SPELLING_MAX 64
const char *sc_cli_spelling(const struct sc_cli *cli, int argc, char **argv, const char *long_flag,
			    char short_flag, char buf[SC_SPELLING_MAX]);

/* Print a verb's help from the settings table and its extra options. */
void sc_cli_help(const struct sc_verb *verb, const struct sc_extra_opt *extras, const char *topic);

int cmd_sample(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_avail(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_instrument(int argc, char **argv);
int cmd_python(int argc, char **argv);
int cmd_causal(int argc, char **argv);
int cmd_attach(int argc, char **argv);

/* profiling.c: the command line of sample and run, with configuration files, the preset
 * (`default_preset` when none is named; NULL for none) and domain flags applied. Returns
 * false when it was answered without running anything (help, --list-presets, --explain,
 * --export-config), and `cli` is freed then. */
bool sc_profiling_cli(struct sc_cli *cli, const struct sc_verb *verb, int argc, char **argv,
		      const char *default_preset, const struct sc_extra_opt *verb_extras);
/* Launch the program, write the outputs and the summary; frees `cli`; returns the exit code
 * syscope should end with. */
int sc_profile_program(struct sc_cli *cli);
/* The same, with `after_launch` called on the session folder before its outputs are built. */
int sc_profile_program_then(struct sc_cli *cli,
			    void (*after_launch)(const char *session, void *ctx), void *ctx);

/* launch.c: run a program under libsyscope.so and wait for its whole process tree. */
struct sc_launch_result {
	char *session_dir;
	int exit_code; /* what syscope should exit with: the program's status or 128+signal */
	bool nothing_recorded; /* the program could not be profiled (said before it ran), and
				* nothing it started was either */
};
int sc_launch(struct sc_cli *cli, struct sc_launch_result *res);
/* syscope attach (attach.c): the session made as for a launch, then `run` attaches to the
 * process, records and detaches; it returns what the session information says of the
 * attach (a jansson object, or NULL) and sets *exit_code. */
typedef struct json_t *(*sc_attach_fn)(const char *session, const char *lib, void *ctx,
				       int *exit_code);
int sc_launch_attached(struct sc_cli *cli, sc_attach_fn run, void *ctx,
		       struct sc_launch_result *res);
/* Find the program as a shell would: a name with a slash as is, else the first match on
 * PATH. Exits 127 (not found) or 126 (found, cannot run), naming it. Caller frees. */
char *sc_find_program(const char *name);

/* convert.c: build every output of a session folder and print the summary. Returns 0 when
 * the outputs were written, 1 otherwise. */
int sc_convert_session(const char *dir, const char *out_dir, const struct sc_settings *s,
		       bool summary);
/* After a profiling verb's run: convert now (saying how to retry when that failed), or with
 * --convert later print the command that will. Returns sc_convert_session's 0 or 1. */
int sc_convert_after_run(const char *session, const struct sc_settings *s);
/* The same from rocpd databases (their formats but rocpd: the input is rocpd already); with
 * `merged_trace`, one Perfetto trace of that name holds every process. */
int sc_convert_databases(char *const *paths, size_t n, const char *out_dir,
			 const struct sc_settings *s, bool summary, const char *merged_trace);

/* The output formats to make from a rocpd database: those asked for, rocpd left out
 * (pftrace when none was asked for). True when rocpd was asked for on the command line. */
bool sc_formats_besides_rocpd(struct sc_settings *set);

/* Parse the command line of a verb whose -f/--format FORMAT... sets OUTPUT_FORMAT (the words
 * after -f that are format names count too: `-f pftrace csv`). Returns false when --help or
 * --version was answered (and `cli` freed). */
bool sc_cli_parse_formats(struct sc_cli *cli, const struct sc_verb *verb, int argc, char **argv,
			  const char *format_help);
/* session_settings.c: the settings of the run recorded in `dir`/session.json, where `s`
 * has none from the environment or command line. */
void sc_apply_session_settings(struct sc_settings *s, const char *dir);
/* The folder part of a path ("." when there is none). Caller frees. */
char *sc_dir_of(const char *path);

/* docgen.c: the man page (roff) and the bash completion script, from the verbs' help and
 * the settings table. */
void sc_write_man_page(FILE *f);
void sc_write_bash_completion(FILE *f);

/* inputs.c: add to `vec` (a VEC(char *)) the rocpd databases of `arg`: a database, a session
 * folder (converted to rocpd first if need be) or a folder of sessions. Exits on error. */
void sc_rocpd_inputs(const char *arg, void *vec);

#endif /* SYSCOPE_CMD_CMD_H */
