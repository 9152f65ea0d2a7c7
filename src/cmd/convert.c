/* SPDX-License-Identifier: MIT */
/*
 * syscope convert SESSION | FILE.db...: read every raw file of a session folder (or import
 * rocpd databases, syscope's or another producer's), build the model and the profiles, and
 * write the output formats asked for, then the summary. Runs after every profiling verb,
 * and by hand on a session whose program was killed or whose conversion was interrupted.
 * Damaged data is converted as far as it is valid, and every problem is named.
 */
#define PR_FMT "convert: "
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../common/log.h"
#include "../common/progress.h"
#include "../common/safe_output.h"
#include "../common/strutil.h"
#include "../common/vec.h"
#include "../model/import.h"
#include "../model/model.h"
#include "../model/profile.h"
#include "../sinks/sink.h"
#include "../sinks/sink_apart.h"
#include "../sinks/summary.h"
#include "../store/session.h"
#include "cmd.h"
#include "output_path.h"

/* Whether the region profiles are built: the profile outputs read them. */
static bool wants_region_profiles(const struct sc_settings *s)
{
	return sc_list_has(s, SC_SET_OUTPUT_FORMAT, "text") ||
	       sc_list_has(s, SC_SET_OUTPUT_FORMAT, "json") ||
	       sc_list_has(s, SC_SET_OUTPUT_FORMAT, "folded");
}

static uint64_t session_bytes(const struct sc_session *session)
{
	uint64_t bytes = 0;

	for (size_t i = 0; i < session->files.n; i++)
		bytes += session->files.v[i].size;
	return bytes;
}

/* Work to do in bytes of raw data read: every pass over the records counts (the model's,
 * the region profiles', each timeline sink's), so that the line shows the fraction of the
 * records processed. */
static uint64_t progress_total(const struct sc_session *session, const struct sc_settings *s)
{
	return session_bytes(session) * (1 + wants_region_profiles(s) + sc_sinks_replaying(s));
}

/* The passes only a built model tells of: GPU time by Python line, why GPUs were idle (the
 * summary, the JSON), NCCL's summary. */
static uint64_t progress_model_passes(const struct sc_model *m, const struct sc_settings *s,
				      bool summary)
{
	bool python = false, gpu = false, regions = false;
	uint64_t passes = 0;

	for (size_t i = 0; i < m->images.n; i++) {
		const struct sc_image *img = m->images.v[i];

		python = python || img->py_callsites;
		regions = regions || img->regions;
		for (unsigned k = 0; k < SC_GPU_OP_KINDS; k++)
			gpu = gpu || img->gpu_ops[k];
	}
	passes += python;
	passes += gpu && (summary || sc_list_has(s, SC_SET_OUTPUT_FORMAT, "json"));
	passes += regions && summary && sc_bool(s, SC_SET_USE_NCCL);
	return passes;
}

#define ROCPD_APART_ROWS 200000

/* Whether the rocpd database is written by a child process beside the other outputs
 * (sink_apart.h): when there are other outputs and more than one thread may be used, and
 * the model was read from raw files (an imported one reads its databases as it replays,
 * through connections a child must not share), with rows enough to pay for it. */
static bool rocpd_apart(const struct sc_output *out)
{
	const struct sc_settings *s = out->settings;
	uint64_t rows = 0;

	/* A small database is written sooner than a second process symbolizes its stacks again
	 * (a 12-process session of throttled calls: 0.40-0.48 s alone, 0.56-0.63 s apart). */
	for (size_t i = 0; i < out->model->images.n; i++)
		rows += out->model->images.v[i]->regions + out->model->images.v[i]->marks +
			out->model->images.v[i]->counter_values;
	return rows >= ROCPD_APART_ROWS && !out->from_database &&
	       sc_list_has(s, SC_SET_OUTPUT_FORMAT, "rocpd") && sc_output_threads(out) > 1 &&
	       (wants_region_profiles(s) || sc_list_has(s, SC_SET_OUTPUT_FORMAT, "pftrace") ||
		sc_list_has(s, SC_SET_OUTPUT_FORMAT, "csv") ||
		sc_list_has(s, SC_SET_OUTPUT_FORMAT, "html"));
}

/* Write the outputs of a built model and report. */
static int write_outputs(struct sc_model *model, const char *out_dir, const struct sc_settings *s,
			 bool summary, bool from_database, const char *merged_trace)
{
	struct sc_profile_set profiles;
	struct sc_output out = { .settings = s,
				 .dir = out_dir,
				 .from_database = from_database,
				 .merged_trace = merged_trace };
	const char *inc = sc_str(s, SC_SET_FUNCTION_INCLUDE),
		   *exc = sc_str(s, SC_SET_FUNCTION_EXCLUDE);
	struct sc_func_view view;
	struct sc_sink_apart apart = { .pid = -1 };
	char err[512];
	int failed;

	if (sc_func_view_init(&view, inc, exc, err, sizeof(err)))
		sc_die(SC_EXIT_USAGE, "%s", err);
	view.label_file = sc_list_has(s, SC_SET_FUNCTION_LABEL, "file");
	view.label_line = sc_list_has(s, SC_SET_FUNCTION_LABEL, "line");
	model->view = &view;
	model->python_native = sc_bool(s, SC_SET_PYTHON_NATIVE);
	out.model = model;
	if (rocpd_apart(&out))
		sc_sink_apart_start(&apart, &sc_sink_rocpd, &out);
	/* Region profiles are read by the profile outputs only. */
	sc_profiles_build(&profiles, model, wants_region_profiles(s));
	out.profiles = &profiles;
	failed = sc_sinks_write_all(&out);
	failed += sc_sink_apart_finish(&apart, &out); /* when sc_sinks_write_all did not */
	sc_progress_end();
	if ((*inc || *exc) && !view.seen)
		pr_warn("--function-include/--function-exclude: this session has no instrumented "
			"functions (build with -finstrument-functions)");
	else if (*inc && !view.matched)
		pr_warn("--function-include '%s' matched none of the instrumented functions", inc);
	if (summary)
		sc_summary_print(stderr, &out, (unsigned)sc_int(s, SC_SET_SUMMARY_TOP));
	else
		for (size_t i = 0; i < out.errors.n; i++)
			pr_err("%s", out.errors.v[i]);
	sc_output_free(&out);
	sc_profiles_free(&profiles);
	model->view = NULL;
	sc_func_view_free(&view);
	return failed ? 1 : 0;
}

static double seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool same_folder(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* After a complete conversion into the session folder raw/ is needed no more (it doubles
 * the disk used): summary, merge, report and convert -f read the rocpd database. Kept with
 * --keep-raw, after any problem, without a database, or when the outputs went elsewhere. */
static void remove_raw_when_done(const struct sc_session *session, const char *out_dir,
				 const struct sc_settings *s)
{
	char err[1024];

	if (sc_bool(s, SC_SET_KEEP_RAW))
		return;
	if (!sc_list_has(s, SC_SET_OUTPUT_FORMAT, "rocpd")) {
		pr_info("raw/ kept: no rocpd database was written, and summary, merge and report "
			"read one");
		return;
	}
	if (session->problems.n || !same_folder(session->dir, out_dir)) {
		pr_info("raw/ kept: %s", session->problems.n
						 ? "the session was damaged"
						 : "the outputs went to another folder");
		return;
	}
	if (sc_session_remove_raw(session->dir, err, sizeof(err)))
		pr_warn("%s", err);
	else
		pr_info("removed %s/" SC_SESSION_RAW_DIR " (--keep-raw keeps it)", session->dir);
}

int sc_convert_session(const char *dir, const char *out_dir, const struct sc_settings *s,
		       bool summary)
{
	struct sc_session session;
	struct sc_model model;
	char err[1024];
	double t0, t1;
	int rc;

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
	sc_progress_begin("converting", progress_total(&session, s));
	t0 = seconds_now();
	sc_model_build(&model, &session, sc_bool(s, SC_SET_INCLUDE_INLINES));
	sc_progress_more(session_bytes(&session) * progress_model_passes(&model, s, summary));
	t1 = seconds_now();
	rc = write_outputs(&model, out_dir, s, summary, false, NULL);
	pr_info("read the session and resolved symbols in %.2f s, wrote the outputs in %.2f s",
		t1 - t0, seconds_now() - t1);
	sc_model_free(&model);
	if (!rc)
		remove_raw_when_done(&session, out_dir, s);
	sc_session_close(&session);
	return rc;
}

/* `dir` as a shell reads it back: as is when it holds only safe characters, else quoted. */
static void print_shell_word(FILE *f, const char *dir)
{
	if (!dir[strspn(dir, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			     "/._-+:@%,=")]) {
		fputs(dir, f);
		return;
	}
	fputc('\'', f);
	for (const char *p = dir; *p; p++)
		if (*p == '\'')
			fputs("'\\''", f);
		else
			fputc(*p, f);
	fputc('\'', f);
}

int sc_convert_after_run(const char *session, const struct sc_settings *s)
{
	int rc;

	if (!strcmp(sc_str(s, SC_SET_CONVERT), "later")) {
		fprintf(stderr,
			"syscope: the raw session is in %s; build its outputs with:\n  "
			"syscope convert ",
			session);
		print_shell_word(stderr, session);
		fputc('\n', stderr);
		return 0;
	}
	rc = sc_convert_session(session, session, s, sc_bool(s, SC_SET_SUMMARY));
	if (rc) {
		fprintf(stderr, "syscope: the raw data is kept in %s/raw; 'syscope convert ",
			session);
		print_shell_word(stderr, session);
		fputs("' retries\n", stderr);
	}
	return rc;
}

int sc_convert_databases(char *const *paths, size_t n, const char *out_dir,
			 const struct sc_settings *s, bool summary, const char *merged_trace)
{
	struct sc_session session = { .dir = sc_xstrdup(out_dir) };
	struct sc_model model;
	char err[1024];
	int rc = 1;

	/* The line counts rows read, on every pass over them, as a session's counts bytes. */
	sc_progress_begin("converting", 0);
	if (!sc_model_import_rocpd(&model, &session, paths, n, sc_bool(s, SC_SET_INCLUDE_INLINES),
				   wants_region_profiles(s) + sc_sinks_replaying(s), err,
				   sizeof(err))) {
		sc_progress_more(model.import_rows * progress_model_passes(&model, s, summary));
		rc = write_outputs(&model, out_dir, s, summary, true, merged_trace);
	} else {
		pr_err("%s", err);
	}
	sc_progress_end();
	sc_model_free(&model);
	sc_session_close(&session);
	return rc;
}

bool sc_formats_besides_rocpd(struct sc_settings *set)
{
	struct sc_setting_value *v = &set->v[SC_SET_OUTPUT_FORMAT];
	char err[SC_ERRMSG_MAX], buf[256] = "";
	char *copy, *save = NULL;
	bool asked = v->layer == SC_LAYER_CLI && sc_list_has(set, SC_SET_OUTPUT_FORMAT, "rocpd");

	if (v->layer < SC_LAYER_ENV) {
		sc_settings_set(set, SC_SET_OUTPUT_FORMAT, "pftrace", SC_LAYER_CLI, err);
		return false;
	}
	copy = sc_xstrdup(v->text);
	for (char *t = strtok_r(copy, " ,", &save); t; t = strtok_r(NULL, " ,", &save))
		if (strcmp(t, "rocpd"))
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
				 buf[0] ? " " : "", t);
	free(copy);
	sc_settings_set(set, SC_SET_OUTPUT_FORMAT, buf, SC_LAYER_CLI, err);
	return asked;
}

/* `-f pftrace csv FILE.db`: the words after -f that are format names (and not files) are
 * formats too, as rocprof's tools take them. Rewrites argv in place; returns the new argc;
 * *joined is to be freed. */
static int gather_formats(int argc, char **argv, char **joined)
{
	int out = 0;

	*joined = NULL;
	for (int i = 0; i < argc; i++) {
		bool flag = !strcmp(argv[i], "-f") || !strcmp(argv[i], "--format");
		struct stat st;

		argv[out++] = argv[i];
		if (!flag || i + 1 >= argc)
			continue;
		free(*joined);
		*joined = sc_xstrdup(argv[++i]);
		while (i + 1 < argc && sc_sink_find(argv[i + 1]) && stat(argv[i + 1], &st)) {
			char *more = sc_xasprintf("%s %s", *joined, argv[++i]);

			free(*joined);
			*joined = more;
		}
		argv[out++] = *joined;
	}
	return out;
}

bool sc_cli_parse_formats(struct sc_cli *cli, const struct sc_verb *verb, int argc, char **argv,
			  const char *format_help)
{
	const char *formats = NULL, *force = NULL;
	struct sc_extra_opt extras[] = {
		{ "format", 'f', true, "FORMAT...", format_help, &formats },
		{ "force", 0, false, "", "Replace output files that syscope did not write",
		  &force },
		{ 0 },
	};
	char *joined, err[SC_ERRMSG_MAX];
	bool answered;

	argc = gather_formats(argc, argv, &joined);
	sc_cli_parse(cli, verb, argc, argv, extras, false);
	answered = sc_cli_answered(cli, extras);
	sc_out_force = force != NULL;
	if (!answered && formats &&
	    sc_settings_set(&cli->settings, SC_SET_OUTPUT_FORMAT, formats, SC_LAYER_CLI, err))
		sc_die(SC_EXIT_USAGE, "%s: -f: %s", verb->name, err);
	free(joined); /* the setting keeps its own copy */
	return !answered;
}

char *sc_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? sc_xstrndup(path, (size_t)(slash - path) + (slash == path))
		     : sc_xstrdup(".");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

#define LISTED 12 /* outputs named; a session of 1 000 processes has 2 000 */

/* A session whose raw/ was removed after its conversion: nothing to rebuild from. */
static noreturn void refuse_converted(const char *dir)
{
	VEC(char *) names = { 0 };
	char *list = sc_xstrdup(""), *db = NULL;
	size_t dbs = 0;
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' && strcmp(de->d_name, SC_SESSION_INFO))
			*VEC_PUSH(&names) = sc_xstrdup(de->d_name);
	if (d)
		closedir(d);
	if (names.n > 1)
		qsort(names.v, names.n, sizeof(*names.v), by_name);
	for (size_t i = 0; i < names.n; i++) {
		char *more = i < LISTED	   ? sc_xasprintf("%s\n  %s", list, names.v[i])
			     : i == LISTED ? sc_xasprintf("%s\n  ... and %zu more", list,
							  names.n - LISTED)
					   : NULL;

		dbs += sc_ends_with(names.v[i], ".db");
		if (!db && sc_ends_with(names.v[i], ".db"))
			db = names.v[i];
		if (more) {
			free(list);
			list = more;
		}
	}
	pr_err("%s was converted already and its raw data removed (raw/ goes after a successful "
	       "conversion), so its outputs cannot be rebuilt; they are there:%s",
	       dir, names.n ? list : " (none left)");
	if (dbs > 1)
		fprintf(stderr,
			"  other formats come from its %zu databases: syscope convert -f FORMAT "
			"%s/rocpd-*.db\n",
			dbs, dir);
	else if (db)
		fprintf(stderr,
			"  other formats come from its database: syscope convert -f FORMAT %s/%s\n",
			dir, db);
	fprintf(stderr, "  to convert a session again, record it with --keep-raw (or --convert "
			"later, then syscope convert --keep-raw)\n");
	for (size_t i = 0; i < names.n; i++)
		free(names.v[i]);
	VEC_FREE(&names);
	free(list);
	exit(SC_EXIT_FAILURE);
}

int cmd_convert(int argc, char **argv)
{
	const struct sc_verb *verb = sc_verb_find("convert");
	struct sc_cli cli;
	char *out_dir, err[SC_ERRMSG_MAX];
	struct stat st;
	int rc;

	if (!sc_cli_parse_formats(&cli, verb, argc, argv,
				  "Output formats, as --output-format: pftrace, csv, json, text, "
				  "folded (and rocpd from a session)"))
		return 0;
	if (cli.nrest < 1)
		sc_die(SC_EXIT_USAGE,
		       "convert: give a session folder or rocpd databases (usage: %s)",
		       verb->usage);
	for (int i = 0; i < cli.nrest; i++)
		if (stat(cli.rest[i], &st))
			sc_die(SC_EXIT_FAILURE, "%s: %s", cli.rest[i], strerror(errno));
	if (S_ISDIR(st.st_mode) && cli.nrest > 1)
		sc_die(SC_EXIT_USAGE, "convert: give one session folder at a time");
	out_dir = cli.settings.v[SC_SET_OUTPUT_PATH].layer == SC_LAYER_CLI
			  ? sc_output_path_for_input(&cli.settings,
						     sc_str(&cli.settings, SC_SET_OUTPUT_PATH),
						     cli.rest[0])
		  : S_ISDIR(st.st_mode) ? sc_xstrdup(cli.rest[0])
					: sc_dir_of(cli.rest[0]);
	sc_output_path_trim(out_dir);
	if (mkdir(out_dir, 0755) && errno != EEXIST)
		sc_die(SC_EXIT_FAILURE, "cannot create %s: %s", out_dir, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		if (!sc_session_is_dir(cli.rest[0]))
			sc_die(SC_EXIT_FAILURE,
			       "%s: not a session folder (no raw/ inside); give the folder syscope "
			       "wrote, or a rocpd database",
			       cli.rest[0]);
		if (!sc_session_has_raw(cli.rest[0]))
			refuse_converted(cli.rest[0]);
		sc_apply_session_settings(&cli.settings, cli.rest[0]);
		rc = sc_convert_session(cli.rest[0], out_dir, &cli.settings,
					sc_bool(&cli.settings, SC_SET_SUMMARY));
	} else {
		if (sc_formats_besides_rocpd(&cli.settings))
			sc_die(SC_EXIT_USAGE,
			       "convert: the input is a rocpd database already; choose other formats "
			       "(pftrace, csv, json, text, folded), or combine databases with "
			       "'syscope merge'");
		if (!sc_str(&cli.settings, SC_SET_OUTPUT_FORMAT)[0])
			sc_settings_set(&cli.settings, SC_SET_OUTPUT_FORMAT, "pftrace",
					SC_LAYER_CLI, err);
		rc = sc_convert_databases(cli.rest, (size_t)cli.nrest, out_dir, &cli.settings,
					  sc_bool(&cli.settings, SC_SET_SUMMARY), NULL);
	}
	free(out_dir);
	sc_cli_free(&cli);
	return rc;
}
