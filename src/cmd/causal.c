/* SPDX-License-Identifier: MIT */
/*
 * syscope causal: causal profiling, Coz's method (the model is rocprof-sys-causal). The
 * scope (functions, lines, modules; causal_scope.c) is resolved before the run into a file
 * of address ranges that the runtime reads (src/runtime/causal/); the program runs -n
 * times, each run under CPU-time sampling at 1 kHz with experiments, and the experiments of
 * every run make one causal profile in the last run's session folder: profile.coz (Coz's
 * format), causal.txt, causal.json, causal.svg (src/model/causal.c, src/sinks/causal.c).
 * The usual outputs of each run's samples are built as by syscope sample.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "../model/causal.h"
#include "causal.h"

#define MAX_SPEEDUPS 101

struct causal_cmd {
	struct causal_scope scope;
	char tmpdir[64];
	char scope_path[128];
	unsigned speedups[MAX_SPEEDUPS]; /* as given, 0 first */
	unsigned nspeedups;
	unsigned run, runs;
	bool end_to_end;
	VEC(char *) sessions;
	bool wrote;
};

static void parse_speedups(struct causal_cmd *c, const char *list)
{
	char *copy = sc_xstrdup(list), *save = NULL;
	bool zero = false;

	c->nspeedups = 1; /* the baseline */
	for (char *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
		char *end;
		long v = strtol(w, &end, 10);

		if (end == w || *end || v < 0 || v > 100)
			sc_die(SC_EXIT_USAGE,
			       "causal: --speedups: '%s' is not a percent from 0 to 100 (e.g. -S "
			       "0,10,25,50)",
			       w);
		if (!v) {
			zero = true;
			continue;
		}
		if (c->nspeedups < MAX_SPEEDUPS)
			c->speedups[c->nspeedups++] = (unsigned)v;
	}
	free(copy);
	(void)zero; /* 0 is always tried: every other experiment is a baseline */
	if (c->nspeedups == 1)
		pr_warn("causal: --speedups '%s' has no speedup above 0; only baselines are run",
			list);
}

static void set_or_die(struct sc_cli *cli, enum sc_setting_id id, const char *value)
{
	char err[SC_ERRMSG_MAX];

	if (sc_settings_set(&cli->settings, id, value, SC_LAYER_CLI, err))
		sc_die(SC_EXIT_FAILURE, "%s", err);
}

static bool copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "r"), *out = in ? fopen(to, "w") : NULL;
	char buf[65536];
	size_t n;
	bool ok = in && out;

	while (ok && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		ok = fwrite(buf, 1, n, out) == n;
	if (in)
		fclose(in);
	if (out && fclose(out))
		ok = false;
	return ok;
}

/* Why there is no prediction, and what would give one. */
static void explain_no_prediction(const struct causal_cmd *c, const struct sc_causal_data *d,
				  const struct sc_causal_analysis *a)
{
	if (!d->points.n && !c->end_to_end)
		fprintf(stderr,
			"  no prediction: the program passed no progress point (it has none in its "
			"source, such as COZ_PROGRESS, and --progress named none): name one with "
			"--progress FUNCTION or FILE:LINE (code run once per unit of work), or make "
			"each run one experiment with -e -n RUNS\n");
	else if (c->end_to_end && c->runs < 2)
		fprintf(stderr, "  no prediction: --end-to-end makes each run one experiment; "
				"one run is no comparison: give -n RUNS (e.g. -n 20)\n");
	else if (!a->baselines)
		fprintf(stderr,
			"  no prediction: no baseline experiment (0%% speedup) was completed: run "
			"longer, or give -n RUNS\n");
	else
		fprintf(stderr,
			"  no prediction: no unit tried ran during its experiments, or the progress "
			"point '%s' was not passed during them\n",
			a->point);
}

/* The causal profile of every run so far, in `dir`, and its top lines on stderr. */
static void write_profile(struct causal_cmd *c, const char *dir)
{
	struct sc_causal_data d;
	struct sc_causal_analysis a;
	char err[512];

	if (sc_causal_load(&d, c->sessions.v, c->sessions.n, err, sizeof(err))) {
		pr_warn("causal: %s", err);
		return;
	}
	sc_causal_analyze(&d, &a);
	if (sc_causal_write_outputs(&d, &a, dir, err, sizeof(err)))
		pr_warn("causal: %s", err);
	else
		c->wrote = true;
	fprintf(stderr, "syscope causal: %zu experiments, %u baselines, progress '%s'; in %s:\n",
		d.exps.n, a.baselines, a.point, dir);
	for (size_t i = 0; i < a.results.n && i < 5; i++)
		fprintf(stderr, "  %zu. %-40s mean predicted program speedup %+.1f%%\n", i + 1,
			a.results.v[i].name, 100 * a.results.v[i].mean_predicted);
	if (a.unsampled)
		fprintf(stderr,
			"  %u of the units tried never ran during their experiments (no sample in "
			"them): no prediction for them\n",
			a.unsampled);
	if (d.disturbed)
		fprintf(stderr,
			"  %u experiments left out: the program waited for a CPU far longer in them "
			"than in the others (a real-time throttle, a burst of load)\n",
			d.disturbed);
	if (!a.results.n)
		explain_no_prediction(c, &d, &a);
	sc_causal_analysis_free(&a);
	sc_causal_data_free(&d);
}

static void after_launch(const char *session, void *ctx)
{
	struct causal_cmd *c = ctx;
	char *dest;

	if (!session)
		return;
	dest = sc_xasprintf("%s/%s", session, SC_CAUSAL_SCOPE_FILE);
	if (!copy_file(c->scope_path, dest))
		pr_warn("causal: cannot copy the scope to %s", dest);
	free(dest);
	*VEC_PUSH(&c->sessions) = sc_xstrdup(session);
	if (c->run + 1 == c->runs)
		write_profile(c, session);
}

/* The scope file's folder goes however syscope ends (a run that cannot start dies). */
static struct causal_cmd *cleanup_cmd;

static void remove_scope(void)
{
	if (!cleanup_cmd)
		return;
	unlink(cleanup_cmd->scope_path);
	rmdir(cleanup_cmd->tmpdir);
	cleanup_cmd = NULL;
}

/* The first run: what is in scope, checked before anything runs. */
static void prepare(struct causal_cmd *c, struct sc_cli *cli)
{
	const struct sc_settings *s = &cli->settings;
	char *program;
	int rc;

	if (!cli->nrest)
		sc_die(SC_EXIT_USAGE, "causal: no program given (usage: %s)", cli->verb->usage);
	program = sc_find_program(cli->rest[0]);
	parse_speedups(c, sc_str(s, SC_SET_CAUSAL_SPEEDUPS));
	c->runs = (unsigned)sc_int(s, SC_SET_CAUSAL_RUNS);
	c->end_to_end = sc_bool(s, SC_SET_CAUSAL_END_TO_END);
	sc_causal_resolve(&c->scope, program, sc_str(s, SC_SET_CAUSAL_MODE),
			  sc_str(s, SC_SET_CAUSAL_FUNCTION), sc_str(s, SC_SET_CAUSAL_LINE),
			  sc_str(s, SC_SET_CAUSAL_BINARY), sc_str(s, SC_SET_CAUSAL_PROGRESS));
	free(program);
	snprintf(c->tmpdir, sizeof(c->tmpdir), "/tmp/syscope-causal-XXXXXX");
	if (!mkdtemp(c->tmpdir))
		sc_die(SC_EXIT_FAILURE, "causal: cannot make a folder in /tmp: %s",
		       strerror(errno));
	cleanup_cmd = c;
	atexit(remove_scope);
	snprintf(c->scope_path, sizeof(c->scope_path), "%s/scope.txt", c->tmpdir);
	if ((rc = sc_causal_write_scope(&c->scope, c->scope_path)))
		sc_die(SC_EXIT_FAILURE, "causal: cannot write %s: %s", c->scope_path,
		       strerror(-rc));
	pr_info("causal: %zu %s%s in scope", c->scope.units.n,
		c->scope.units.v[0].kind == 'l' ? "line" : "function",
		c->scope.units.n == 1 ? "" : "s");
	if (c->end_to_end && c->runs < c->nspeedups * c->scope.units.n)
		pr_warn("causal: --end-to-end tries one speedup of one %s per run; %u runs cover "
			"%u of the %zu pairs (-n %zu covers them all)",
			c->scope.units.v[0].kind == 'l' ? "line" : "function", c->runs, c->runs,
			c->nspeedups * c->scope.units.n, c->nspeedups * c->scope.units.n);
}

/* The settings of run `c->run`: experiments on, CPU-time sampling at 1 kHz (unless the
 * command line chose a rate). */
static void configure(struct causal_cmd *c, struct sc_cli *cli)
{
	char num[32];

	set_or_die(cli, SC_SET_CAUSAL, "true");
	set_or_die(cli, SC_SET_USE_SAMPLING, "true");
	set_or_die(cli, SC_SET_SAMPLING_CPUTIME, "true");
	if (cli->settings.v[SC_SET_SAMPLING_FREQ].layer < SC_LAYER_ENV)
		set_or_die(cli, SC_SET_SAMPLING_FREQ, "1000");
	set_or_die(cli, SC_SET_CAUSAL_SCOPE_FILE, c->scope_path);
	/* The last run reads every run's experiments from its raw records. */
	set_or_die(cli, SC_SET_KEEP_RAW, "true");
	if (c->end_to_end) {
		unsigned speedup = c->speedups[c->run % c->nspeedups];
		size_t unit = (c->run / c->nspeedups) % c->scope.units.n;

		snprintf(num, sizeof(num), "%zu", unit);
		set_or_die(cli, SC_SET_CAUSAL_E2E_UNIT, num);
		snprintf(num, sizeof(num), "%u", speedup);
		set_or_die(cli, SC_SET_CAUSAL_E2E_SPEEDUP, num);
	}
	/* Each run is a session of its own. Without a time-stamped folder per run, the runs
	 * after the first go beside it, into DIR-2, DIR-3... (as two runs in one second do
	 * under one DIR): a session folder is never reused. */
	if (c->run && !sc_bool(&cli->settings, SC_SET_TIME_OUTPUT)) {
		char *dir = sc_xstrdup(sc_str(&cli->settings, SC_SET_OUTPUT_PATH)), *path;
		size_t n = strlen(dir);

		while (n > 1 && dir[n - 1] == '/')
			dir[--n] = '\0';
		path = sc_xasprintf("%s-%u", dir, c->run + 1);
		set_or_die(cli, SC_SET_OUTPUT_PATH, path);
		free(path);
		free(dir);
	}
}

int cmd_causal(int argc, char **argv)
{
	const struct sc_verb *verb = sc_verb_find("causal");
	struct causal_cmd c = { .runs = 1 };
	int rc = 0;

	for (c.run = 0; c.run < c.runs; c.run++) {
		struct sc_cli cli;

		if (!sc_profiling_cli(&cli, verb, argc, argv, NULL, NULL))
			return 0;
		if (!c.run)
			prepare(&c, &cli);
		configure(&c, &cli);
		if (c.runs > 1)
			pr_info("causal: run %u of %u", c.run + 1, c.runs);
		rc = sc_profile_program_then(&cli, after_launch, &c);
	}
	remove_scope();
	for (size_t i = 0; i < c.sessions.n; i++)
		free(c.sessions.v[i]);
	VEC_FREE(&c.sessions);
	sc_causal_scope_free(&c.scope);
	if (!rc && !c.wrote)
		rc = SC_EXIT_FAILURE;
	return rc;
}
