/* SPDX-License-Identifier: MIT */
/*
 * The command line of the profiling verbs (sample, run): flags and environment
 * (sc_cli_parse), then configuration files, then the preset, then the domain flags that
 * refine it; and the options that answer without running anything (--list-presets,
 * --explain, --export-config, --preset-schema).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

#include "../common/log.h"
#include "../common/safe_output.h"
#include "../common/strutil.h"
#include "../common/vec.h"
#include "../config/config.h"
#include "cmd.h"
#include "components.h"

/* `typed`: the flag as the user typed it ("-d", "--duration"), which a refusal names. */
static void set_flag(struct sc_settings *s, int id, const char *value, const char *typed)
{
	char err[SC_ERRMSG_MAX], msg[SC_ERRMSG_MAX + SC_SPELLING_MAX];

	if (sc_settings_set(s, (enum sc_setting_id)id, value, SC_LAYER_CLI, err)) {
		sc_flag_message(id, typed, err, msg, sizeof(msg));
		sc_die(SC_EXIT_USAGE, "%s", msg);
	}
}

static void set_cli(struct sc_cli *cli, int id, const char *value, const char *typed)
{
	set_flag(&cli->settings, id, value, typed);
}

/* Two command-line flags that set one thing differently: an error naming both. */
static void contradiction(const struct sc_cli *cli, int id, const char *flag, const char *value)
{
	const struct sc_setting_def *d = &sc_setting_defs[id];

	if (cli->settings.v[id].layer == SC_LAYER_CLI && strcmp(cli->settings.v[id].text, value))
		sc_die(SC_EXIT_USAGE, "--%s and --%s%s%s contradict each other; give one", flag,
		       d->type == SC_T_BOOL && !strcmp(cli->settings.v[id].text, "false") ? "no-"
											  : "",
		       d->long_flag,
		       d->type == SC_T_BOOL ? "" : sc_xasprintf("=%s", cli->settings.v[id].text));
}

/* The values of the domain flags (one per component row with a flag, by row) and of
 * rocprof-sys-run's shorthands. */
struct domain_flags {
	const char *value[64];
	const char *trace, *profile, *wait, *duration;
	char wait_typed[SC_SPELLING_MAX], duration_typed[SC_SPELLING_MAX]; /* "-w", "--wait" */
};

/* Add `formats` to the output formats the layers below the command line chose. */
static void add_formats(struct sc_cli *cli, const char *formats, const char *flag)
{
	char *list = sc_xstrdup(sc_str(&cli->settings, SC_SET_OUTPUT_FORMAT));
	char *copy = sc_xstrdup(formats), *save = NULL;

	for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
		list = sc_xwith_word(list, w);
	set_cli(cli, SC_SET_OUTPUT_FORMAT, list, flag);
	free(list);
	free(copy);
}

/* A component's own domain flag: turns it on and, given =VALUE, sets its value setting (the
 * tokens of a LIST, or a value such as --cpu=HZ). */
static void apply_own_flag(struct sc_cli *cli, const struct sc_component *c, const char *value,
			   bool preset_on)
{
	char typed[SC_SPELLING_MAX];

	snprintf(typed, sizeof(typed), "--%s", c->flag);
	if (c->enable >= 0) {
		if (!preset_on && !sc_bool(&cli->settings, (enum sc_setting_id)c->enable))
			pr_info("--%s turns on the %s the preset leaves off", c->flag, c->name);
		contradiction(cli, c->enable, c->flag, "true");
		set_cli(cli, c->enable, "true", typed);
	}
	if (*value && c->value >= 0) {
		char *v = c->aliases ? sc_domain_tokens(c->flag, value, c->aliases)
				     : sc_xstrdup(value);
		struct sc_settings probe;

		/* Parsed alone first, so that a contradiction compares canonical values. */
		if (sc_settings_init(&probe))
			sc_die(70, "out of memory");
		set_flag(&probe, c->value, v, typed);
		contradiction(cli, c->value, c->flag, probe.v[c->value].text);
		sc_settings_free(&probe);
		set_cli(cli, c->value, v, typed);
		free(v);
	}
}

/* A flag shared by several components (--parallel=mpi,openmp): each token names a row. */
static void apply_shared_flag(struct sc_cli *cli, const char *flag, const char *value)
{
	struct sc_alias all[64];
	size_t n = 0;
	char *tokens, *save = NULL, typed[SC_SPELLING_MAX];

	snprintf(typed, sizeof(typed), "--%s", flag);

	for (size_t i = 0; i < sc_ncomponents; i++) {
		const struct sc_component *c = &sc_components[i];

		if (c->flag && c->token && !strcmp(c->flag, flag))
			for (const struct sc_alias *a = c->aliases; a->spelling && n < 63; a++)
				all[n++] = *a;
	}
	all[n] = (struct sc_alias){ NULL, NULL };
	tokens = sc_domain_tokens(flag, value, all);
	for (char *w = strtok_r(tokens, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		for (size_t i = 0; i < sc_ncomponents; i++) {
			const struct sc_component *c = &sc_components[i];

			if (!c->flag || !c->token || strcmp(c->flag, flag) || strcmp(c->token, w))
				continue;
			if (c->pending)
				pr_warn("--%s=%s: %s tracing is %s; its threads and processes are "
					"still profiled",
					flag, w, c->name, c->pending);
			else if (c->enable >= 0)
				set_cli(cli, c->enable, "true", typed);
		}
	}
	free(tokens);
}

/* Whether the row is the first of its flag (a shared flag has one option for all rows). */
static bool first_of_flag(size_t row)
{
	for (size_t i = 0; i < row; i++)
		if (sc_components[i].flag &&
		    !strcmp(sc_components[i].flag, sc_components[row].flag))
			return false;
	return true;
}

static void apply_domains(struct sc_cli *cli, const struct domain_flags *df, bool preset_sampled)
{
	for (size_t i = 0; i < sc_ncomponents; i++) {
		const struct sc_component *c = &sc_components[i];

		if (!c->flag || !df->value[i])
			continue;
		if (c->token)
			apply_shared_flag(cli, c->flag, df->value[i]);
		else
			apply_own_flag(cli, c, df->value[i],
				       c->enable != SC_SET_USE_SAMPLING || preset_sampled);
	}
	if (df->trace)
		add_formats(cli, "pftrace", "--trace");
	if (df->profile)
		add_formats(cli, "text json", "--profile");
	if (df->wait) {
		contradiction(cli, SC_SET_SAMPLING_DELAY, "wait", df->wait);
		set_cli(cli, SC_SET_SAMPLING_DELAY, df->wait, df->wait_typed);
	}
	if (df->duration) {
		contradiction(cli, SC_SET_SAMPLING_DURATION, "duration", df->duration);
		set_cli(cli, SC_SET_SAMPLING_DURATION, df->duration, df->duration_typed);
	}
	if (sc_bool(&cli->settings, SC_SET_USE_NVML) &&
	    cli->settings.v[SC_SET_USE_NVML].layer == SC_LAYER_CLI &&
	    !sc_bool(&cli->settings, SC_SET_USE_CUDA))
		pr_info("hint: --gpu without CUDA tracing shows telemetry but not the kernels; "
			"add --cuda");
}

/* Configuration files: SYSCOPE_CONFIG_FILE / --config (colon-separated), else ~/.syscope.cfg
 * when it exists. */
static void load_config_files(struct sc_cli *cli)
{
	const char *list = sc_str(&cli->settings, SC_SET_CONFIG_FILE);
	char *copy, *save = NULL, err[SC_CONFIG_ERR];
	const char *home = getenv("HOME");

	if (!*list) {
		char *dflt = home ? sc_xasprintf("%s/.syscope.cfg", home) : NULL;

		if (dflt && !access(dflt, R_OK) && sc_config_file_load(dflt, &cli->settings, err))
			sc_die(SC_EXIT_USAGE, "%s", err);
		free(dflt);
		return;
	}
	copy = sc_xstrdup(list);
	for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save))
		if (sc_config_file_load(p, &cli->settings, err))
			sc_die(SC_EXIT_USAGE, "%s", err);
	free(copy);
}

/* ROCPROFSYS_* variables of a rocprof-sys user's environment, below SYSCOPE_* ones. */
static void migrate_environment(struct sc_cli *cli)
{
	struct sc_migration m = { .n = 0 };
	char err[SC_CONFIG_ERR];

	sc_migration_from_environment(&m, environ);
	if (m.n && sc_migration_apply(&m, &cli->settings, SC_LAYER_ENV, "environment", err))
		sc_die(SC_EXIT_USAGE, "%s", err);
	sc_migration_free(&m);
}

static void export_config(const struct sc_cli *cli, const char *file)
{
	json_t *doc = sc_config_export(&cli->settings);
	int rc;

	if (*file) {
		char *text = json_dumps(doc, JSON_INDENT(2)), err[512];

		if (!text)
			sc_die(SC_EXIT_FAILURE, "cannot write %s: out of memory", file);
		rc = sc_out_write_file(file, text, strlen(text), 0644, 0, err, sizeof(err));
		if (rc)
			sc_die(SC_EXIT_FAILURE, "%s", err);
		free(text);
		fprintf(stderr,
			"syscope: wrote the configuration to %s (use it with --preset=%s)\n", file,
			file);
	} else {
		json_dumpf(doc, stdout, JSON_INDENT(2));
		putchar('\n');
	}
	json_decref(doc);
}

/* The profiling verbs' options followed by one verb's own (NULL: none); caller frees. */
static struct sc_extra_opt *join_extras(const struct sc_extra_opt *common,
					const struct sc_extra_opt *own)
{
	size_t n = 0, m = 0;
	struct sc_extra_opt *all;

	while (common[n].long_flag)
		n++;
	while (own && own[m].long_flag)
		m++;
	all = sc_xcalloc(n + m + 1, sizeof(*all));
	memcpy(all, common, n * sizeof(*all));
	if (m)
		memcpy(all + n, own, m * sizeof(*all));
	return all;
}

/* Where a setting's value came from, as the user would name it: the flag, the environment
 * variable, or the setting (a preset or configuration file). */
static const char *value_source(const struct sc_cli *cli, int id, char *buf, size_t n)
{
	const struct sc_setting_def *d = &sc_setting_defs[id];

	if (cli->settings.v[id].layer == SC_LAYER_CLI && d->long_flag)
		snprintf(buf, n, "--%s", d->long_flag);
	else if (cli->settings.v[id].layer == SC_LAYER_ENV)
		snprintf(buf, n, "%s%s", SC_SETTING_ENV_PREFIX, d->name);
	else
		snprintf(buf, n, "%s", d->name);
	return buf;
}

/* Lists of ids the runtime would only note at run time (and then record no per-CPU track, no
 * GPU telemetry, or sample every thread): refused before the program starts. */
static void check_id_lists(const struct sc_cli *cli)
{
	static const struct {
		enum sc_setting_id id;
		const char *what, *example;
		unsigned max;
		bool all;
	} lists[] = {
		{ SC_SET_PROCESS_CPUS, "CPU ids", "0,2-5", SC_ID_LIST_MAX_CPUS, true },
		{ SC_SET_SAMPLING_GPUS, "GPU indexes", "0,2-3", SC_ID_LIST_MAX_GPUS, true },
		{ SC_SET_SAMPLING_TIDS, "thread indexes (creation order, 0 = main)", "0,2-4",
		  SC_ID_LIST_MAX_TIDS, false },
	};
	unsigned long bits[SC_ID_LIST_MAX_TIDS / (8 * sizeof(unsigned long))];
	char src[96];

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		const char *text = sc_str(&cli->settings, lists[i].id);

		if (!text || !*text || (lists[i].all && !strcmp(text, "all")))
			continue;
		if (lists[i].max > SC_ID_LIST_MAX_TIDS ||
		    sc_parse_id_list(text, bits, lists[i].max))
			sc_die(SC_EXIT_USAGE,
			       "%s '%s' is not valid (valid: %s and ranges of them from 0 to %u, "
			       "e.g. %s%s)",
			       value_source(cli, lists[i].id, src, sizeof(src)), text,
			       lists[i].what, lists[i].max - 1, lists[i].example,
			       lists[i].all ? ", or 'all'" : "");
	}
}

/* --cpus naming CPUs this machine does not have: those get no track, say so before the run
 * (a list that does not parse was refused by check_id_lists). */
static void check_cpus(const struct sc_cli *cli)
{
	const char *list = sc_str(&cli->settings, SC_SET_PROCESS_CPUS);
	long have = sysconf(_SC_NPROCESSORS_CONF);
	unsigned long bits[SC_ID_LIST_MAX_CPUS / (8 * sizeof(unsigned long))];
	char missing[128] = "";
	long first = -1;
	bool several;

	if (!*list || !strcmp(list, "all") || have < 1 ||
	    sc_parse_id_list(list, bits, SC_ID_LIST_MAX_CPUS))
		return;
	for (long id = have; id <= (long)SC_ID_LIST_MAX_CPUS; id++) {
		bool set = id < (long)SC_ID_LIST_MAX_CPUS &&
			   (bits[id / (8 * sizeof(long))] >> (id % (8 * sizeof(long))) & 1);

		if (set && first < 0)
			first = id;
		if (!set && first >= 0) {
			size_t n = strlen(missing);

			if (id - 1 > first)
				snprintf(missing + n, sizeof(missing) - n, "%s%ld-%ld",
					 n ? "," : "", first, id - 1);
			else
				snprintf(missing + n, sizeof(missing) - n, "%s%ld", n ? "," : "",
					 first);
			first = -1;
		}
	}
	several = strchr(missing, ',') || strchr(missing, '-');
	if (missing[0])
		pr_warn("--cpus %s: this machine has %ld CPU%s (0-%ld); CPU%s %s get%s no track",
			list, have, have == 1 ? "" : "s", have - 1, several ? "s" : "", missing,
			several ? "" : "s");
}

/* --interfaces naming an interface this machine does not have: it gets no track, said before
 * the program starts with the interfaces there are (from /proc/net/dev, as the runtime reads
 * them). A warning, not a refusal: a launcher (mpirun, srun) may start the program on hosts
 * whose interfaces this one lacks. */
static void check_interfaces(const struct sc_cli *cli)
{
	const char *list = sc_str(&cli->settings, SC_SET_PROCESS_INTERFACES);
	char have[1024] = "", line[512], src[96], missing[256] = "", *copy, *save = NULL;
	unsigned nmissing = 0;
	FILE *f;

	if (!*list)
		return;
	f = fopen("/proc/net/dev", "r");
	if (!f)
		return; /* nothing to compare with: the runtime notes what it cannot find */
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *name = line;
		size_t len = strlen(have);

		if (!colon)
			continue;
		*colon = '\0';
		while (*name == ' ' || *name == '\t')
			name++;
		snprintf(have + len, sizeof(have) - len, "%s%s", len ? ", " : "", name);
	}
	fclose(f);
	copy = sc_xstrdup(list);
	for (char *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
		char key[sizeof(have)];
		bool found = false;
		size_t len = strlen(missing);

		snprintf(key, sizeof(key), "%s", have);
		for (char *s2 = NULL, *h = strtok_r(key, ", ", &s2); h && !found;
		     h = strtok_r(NULL, ", ", &s2))
			found = !strcmp(h, w);
		if (!found) {
			snprintf(missing + len, sizeof(missing) - len, "%s'%s'", len ? ", " : "",
				 w);
			nmissing++;
		}
	}
	free(copy);
	if (missing[0])
		pr_warn("%s '%s': this machine has no network interface%s %s, so no track for "
			"%s (valid: %s, comma-separated; unset for all of them)",
			value_source(cli, SC_SET_PROCESS_INTERFACES, src, sizeof(src)), list,
			nmissing > 1 ? "s" : "", missing, nmissing > 1 ? "them" : "it",
			have[0] ? have : "none in /proc/net/dev");
}

bool sc_profiling_cli(struct sc_cli *cli, const struct sc_verb *verb, int argc, char **argv,
		      const char *default_preset, const struct sc_extra_opt *verb_extras)
{
	struct domain_flags df = { 0 };
	const char *list = NULL, *explain = NULL, *export = NULL, *schema = NULL, *force = NULL;
	struct sc_extra_opt extras[] = {
		{ "trace", 'T', false, "",
		  "Add the Perfetto trace to the outputs (as rocprof-sys -T)", &df.trace },
		{ "profile", 'P', false, "",
		  "Add the text and JSON profiles to the outputs (as rocprof-sys -P)",
		  &df.profile },
		{ "wait", 'w', true, "SECONDS", "Start recording samples after SECONDS", &df.wait },
		{ "duration", 'd', true, "SECONDS", "Record samples for SECONDS, then stop",
		  &df.duration },
		{ "list-presets", 0, false, "", "List the presets, by category, and exit", &list },
		{ "explain", 0, true, "NAME", "Describe a preset and every setting it changes",
		  &explain },
		{ "export-config", 0, false, "FILE",
		  "Print (or write to =FILE) the resolved configuration as a preset, and exit",
		  &export },
		{ "preset-schema", 0, false, "", "Print the JSON Schema of preset files, and exit",
		  &schema },
		{ "force", 0, false, "",
		  "Replace files syscope did not write (--export-config=FILE, instrument -o)",
		  &force },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	const char *preset_dir;
	char err[SC_CONFIG_ERR];
	struct sc_preset p;
	const char *name;
	bool preset_sampled = true;

	struct sc_extra_opt flags[64 + 1] = { { 0 } };
	struct sc_extra_opt *common, *all;
	size_t nflags = 0;
	bool answered;

	for (size_t i = 0; i < sc_ncomponents && nflags < 64; i++)
		if (sc_components[i].flag && first_of_flag(i))
			flags[nflags++] = (struct sc_extra_opt){
				sc_components[i].flag,
				0,
				false,
				sc_components[i].flag_metavar,
				sc_components[i].flag_help,
				&df.value[i],
			};
	common = join_extras(flags, extras);
	all = join_extras(common, verb_extras);
	free(common);
	sc_cli_parse(cli, verb, argc, argv, all, true);
	sc_cli_spelling(cli, argc, argv, "wait", 'w', df.wait_typed);
	sc_cli_spelling(cli, argc, argv, "duration", 'd', df.duration_typed);
	answered = sc_cli_answered(cli, all);
	free(all);
	if (answered)
		return false;
	preset_dir = sc_str(&cli->settings, SC_SET_PRESET_DIR);
	if (schema) {
		json_t *doc = sc_preset_schema();

		json_dumpf(doc, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(doc);
		sc_cli_free(cli);
		return false;
	}
	if (list) {
		sc_preset_list(stdout, preset_dir);
		sc_cli_free(cli);
		return false;
	}
	if (explain) {
		if (sc_preset_load(explain, preset_dir, &p, err))
			sc_die(SC_EXIT_USAGE, "%s", err);
		sc_preset_explain(stdout, &p);
		sc_preset_free(&p);
		sc_cli_free(cli);
		return false;
	}
	migrate_environment(cli);
	load_config_files(cli);
	name = sc_is_set(&cli->settings, SC_SET_PRESET) ? sc_str(&cli->settings, SC_SET_PRESET)
							: default_preset;
	if (name) {
		if (sc_preset_load(name, preset_dir, &p, err))
			sc_die(SC_EXIT_USAGE, "%s", err);
		if (sc_preset_apply(&p, &cli->settings, err))
			sc_die(SC_EXIT_USAGE, "%s", err);
		if (sc_settings_set(&cli->settings, SC_SET_PRESET, p.name,
				    cli->settings.v[SC_SET_PRESET].layer == SC_LAYER_DEFAULT
					    ? SC_LAYER_PRESET
					    : cli->settings.v[SC_SET_PRESET].layer,
				    err))
			sc_die(SC_EXIT_FAILURE, "%s", err);
		preset_sampled = sc_bool(&cli->settings, SC_SET_USE_SAMPLING);
		if (json_array_size(p.not_yet)) {
			size_t i;
			json_t *v;
			char what[512] = "";

			json_array_foreach (p.not_yet, i, v)
				snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%s",
					 i ? ", " : "", json_string_value(v));
			pr_info("preset %s: not in this version yet: %s", p.name, what);
		}
		sc_preset_free(&p);
	}
	apply_domains(cli, &df, preset_sampled);
	check_id_lists(cli);
	check_cpus(cli);
	check_interfaces(cli);
	sc_out_force = force != NULL;
	if (export) {
		export_config(cli, export);
		sc_cli_free(cli);
		return false;
	}
	if (!cli->nrest)
		sc_die(SC_EXIT_USAGE, "%s: no program given (usage: %s)", verb->name, verb->usage);
	return true;
}

int sc_profile_program(struct sc_cli *cli)
{
	return sc_profile_program_then(cli, NULL, NULL);
}

int sc_profile_program_then(struct sc_cli *cli,
			    void (*after_launch)(const char *session, void *ctx), void *ctx)
{
	struct sc_launch_result res = { 0 };
	int rc;

	sc_launch(cli, &res);
	if (after_launch)
		after_launch(res.session_dir, ctx);
	if (res.nothing_recorded) { /* the warning before the run said why; nothing to convert */
		free(res.session_dir);
		sc_cli_free(cli);
		return res.exit_code;
	}
	/* An output that could not be written (a full disk, say) fails the run even when the
	 * program succeeded; the program's own failure status wins. */
	rc = sc_convert_after_run(res.session_dir, &cli->settings);
	free(res.session_dir);
	sc_cli_free(cli);
	return res.exit_code ? res.exit_code : rc ? SC_EXIT_FAILURE : 0;
}
