/* SPDX-License-Identifier: MIT */
/*
 * Command-line parsing driven by the settings table: every setting whose VERBS column names
 * the verb is a flag (--long-name, -x), typed and validated by the same parser as the
 * environment, with CLI > environment > default precedence. Spellings:
 *
 *   --name=value  --name value  -x value  -xvalue  -vvv (counting)
 *   --flag  --flag=off  --no-flag            (booleans)
 *   --output-format text json  (lists: following arguments that are valid choices)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/strutil.h"
#include "../common/vec.h"
#include "cmd.h"

static void usage_error(const struct sc_verb *verb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), __noreturn__));

static void usage_error(const struct sc_verb *verb, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "syscope %s: %s\n", verb->name, msg);
	fprintf(stderr, "syscope %s: see 'syscope %s --help'\n", verb->name, verb->name);
	exit(SC_EXIT_USAGE);
}

void sc_flag_message(int id, const char *flag, const char *errmsg, char *out, size_t n)
{
	const struct sc_setting_def *d = &sc_setting_defs[id];
	size_t len = strlen(d->name);

	if (!strncmp(errmsg, d->name, len) && errmsg[len] == ' ')
		snprintf(out, n, "%s%s", flag, errmsg + len);
	else
		snprintf(out, n, "%s: %s", flag, errmsg);
}

const char *sc_cli_spelling(const struct sc_cli *cli, int argc, char **argv, const char *long_flag,
			    char short_flag, char buf[SC_SPELLING_MAX])
{
	size_t len = strlen(long_flag);

	snprintf(buf, SC_SPELLING_MAX, "--%s", long_flag);
	for (int i = 1;
	     i < argc && strcmp(argv[i], "--") && (!cli->nrest || argv[i] != cli->rest[0]); i++) {
		const char *a = argv[i];

		if (a[0] != '-')
			continue;
		if (a[1] == '-' && !strncmp(a + 2, long_flag, len) &&
		    (!a[2 + len] || a[2 + len] == '='))
			snprintf(buf, SC_SPELLING_MAX, "--%s", long_flag);
		else if (short_flag && a[1] == short_flag)
			snprintf(buf, SC_SPELLING_MAX, "-%c", short_flag);
	}
	return buf;
}

/* The settings parser's "NAME 'x' is not valid" as the flag the user typed: "-d 'x' ...". */
static void bad_value(const struct sc_verb *verb, int id, const char *flag, const char *errmsg)
{
	char msg[SC_ERRMSG_MAX + SC_SPELLING_MAX];

	sc_flag_message(id, flag, errmsg, msg, sizeof(msg));
	usage_error(verb, "%s", msg);
}

/* `flag`: the spelling typed ("--name", "-x"). */
static void set_or_die(struct sc_cli *cli, int id, const char *value, const char *flag)
{
	char err[SC_ERRMSG_MAX];
	int rc = sc_settings_set(&cli->settings, id, value, SC_LAYER_CLI, err);

	if (rc == -ENOMEM)
		sc_die(70, "out of memory");
	if (rc)
		bad_value(cli->verb, id, flag, err);
}

static void unknown_option(const struct sc_verb *verb, const char *opt,
			   const struct sc_extra_opt *extras)
{
	const char *cands[SC_SETTING_COUNT + 64];
	char buf[SC_SETTING_COUNT + 64][96];
	size_t n = 0;
	const char *near;

	for (int id = 0; id < SC_SETTING_COUNT; id++) {
		const struct sc_setting_def *d = &sc_setting_defs[id];

		if ((d->verbs & verb->mask) && d->long_flag) {
			snprintf(buf[n], sizeof(buf[n]), "--%s", d->long_flag);
			cands[n] = buf[n];
			n++;
		}
	}
	for (size_t i = 0; extras && extras[i].long_flag && n < SC_SETTING_COUNT + 60; i++) {
		snprintf(buf[n], sizeof(buf[n]), "--%s", extras[i].long_flag);
		cands[n] = buf[n];
		n++;
	}
	cands[n++] = "--help";
	cands[n++] = "--version";
	near = sc_nearest(opt, cands, n);
	if (near)
		usage_error(verb, "unknown option '%s' (did you mean %s?)", opt, near);
	usage_error(verb, "unknown option '%s'", opt);
}

static struct sc_extra_opt *find_extra(struct sc_extra_opt *extras, const char *lng, char shrt)
{
	for (size_t i = 0; extras && extras[i].long_flag; i++)
		if ((lng && !strcmp(extras[i].long_flag, lng)) ||
		    (shrt && extras[i].short_flag == shrt))
			return &extras[i];
	return NULL;
}

/* A LIST setting takes the following arguments that are valid tokens, as a group. */
static int take_list(struct sc_cli *cli, int id, const char *flag, const char *first, char **argv,
		     int i, int argc)
{
	const struct sc_setting_def *d = &sc_setting_defs[id];
	size_t len = strlen(first) + 1;
	char *joined = sc_xstrdup(first);

	if ((d->flags & SC_SF_PAIR) && !strchr(first, ' ') && i + 1 < argc) {
		/* "--sample-overflow EVENT PERIOD": the second word is the flag's, whatever it is. */
		char *two = sc_xasprintf("%s %s", first, argv[++i]);

		set_or_die(cli, id, two, flag);
		free(two);
		free(joined);
		return i;
	}
	while (i + 1 < argc && argv[i + 1][0] != '-' && d->choices) {
		char err[SC_ERRMSG_MAX];
		struct sc_settings probe;

		/* Only words that are themselves valid choices join the list. */
		if (sc_settings_init(&probe))
			break;
		if (sc_settings_set(&probe, id, argv[i + 1], SC_LAYER_CLI, err)) {
			sc_settings_free(&probe);
			break;
		}
		sc_settings_free(&probe);
		len += strlen(argv[i + 1]) + 1;
		joined = sc_xrealloc(joined, len);
		strcat(joined, " ");
		strcat(joined, argv[++i]);
	}
	set_or_die(cli, id, joined, flag);
	free(joined);
	return i;
}

/* Handle "--name[=value]". Returns the index of the last argument consumed. */
static int long_option(struct sc_cli *cli, struct sc_extra_opt *extras, char **argv, int i,
		       int argc)
{
	const char *arg = argv[i] + 2, *eq = strchr(arg, '=');
	char name[128];
	const char *value = eq ? eq + 1 : NULL;
	char typed[SC_SPELLING_MAX];
	struct sc_extra_opt *x;
	bool negated = false;
	int id;

	snprintf(name, sizeof(name), "%.*s", (int)(eq ? (size_t)(eq - arg) : strlen(arg)), arg);
	if (!strcmp(name, "help")) {
		cli->help = true;
		cli->help_topic = value;
		return i;
	}
	if (!strcmp(name, "version")) {
		cli->version = true;
		return i;
	}
	x = find_extra(extras, name, 0);
	if (x) {
		if (x->takes_value && !value) {
			if (i + 1 >= argc)
				usage_error(cli->verb, "--%s needs a value (%s)", name, x->metavar);
			value = argv[++i];
		}
		*x->value = value ? value : "";
		return i;
	}
	id = sc_setting_by_flag(name, cli->verb->mask);
	if (id < 0 && !strncmp(name, "no-", 3)) {
		id = sc_setting_by_flag(name + 3, cli->verb->mask);
		negated = id >= 0 && sc_setting_defs[id].type == SC_T_BOOL;
		if (!negated)
			id = -1;
	}
	if (id < 0)
		unknown_option(cli->verb, argv[i], extras);
	snprintf(typed, sizeof(typed), "--%.60s", name);
	if (negated) {
		if (value)
			usage_error(cli->verb, "--%s takes no value", name);
		set_or_die(cli, id, "false", typed);
		return i;
	}
	if (sc_setting_defs[id].type == SC_T_BOOL) {
		set_or_die(cli, id, value ? value : "true", typed);
		return i;
	}
	if (!value) {
		if (i + 1 >= argc)
			usage_error(cli->verb, "--%s needs a value", name);
		value = argv[++i];
	}
	if (sc_setting_defs[id].type == SC_T_LIST)
		return take_list(cli, id, typed, value, argv, i, argc);
	set_or_die(cli, id, value, typed);
	return i;
}

/* Handle "-x[value]" and clusters like "-vv". Returns the last argument consumed. */
static int short_options(struct sc_cli *cli, struct sc_extra_opt *extras, char **argv, int i,
			 int argc)
{
	for (const char *p = argv[i] + 1; *p; p++) {
		struct sc_extra_opt *x = find_extra(extras, NULL, *p);
		const char *value = p[1] ? p + 1 : NULL;
		char typed[3] = { '-', *p, 0 };
		int id;

		if (*p == 'h') {
			cli->help = true;
			continue;
		}
		if (x) {
			if (x->takes_value) {
				if (!value && i + 1 >= argc)
					usage_error(cli->verb, "-%c needs a value (%s)", *p,
						    x->metavar);
				*x->value = value ? value : argv[++i];
				return i;
			}
			*x->value = "";
			continue;
		}
		id = sc_setting_by_short(*p, cli->verb->mask);
		if (id < 0)
			unknown_option(cli->verb, typed, extras);
		if (id == SC_SET_VERBOSE && !value) {
			char buf[32];

			snprintf(buf, sizeof(buf), "%ld",
				 cli->settings.v[id].layer == SC_LAYER_CLI
					 ? sc_int(&cli->settings, id) + 1
					 : 1);
			set_or_die(cli, id, buf, typed);
			continue;
		}
		if (sc_setting_defs[id].type == SC_T_BOOL) {
			set_or_die(cli, id, "true", typed);
			continue;
		}
		if (!value) {
			if (i + 1 >= argc)
				usage_error(cli->verb, "-%c needs a value", *p);
			value = argv[++i];
		}
		if (sc_setting_defs[id].type == SC_T_LIST)
			return take_list(cli, id, typed, value, argv, i, argc);
		set_or_die(cli, id, value, typed);
		return i;
	}
	return i;
}

extern char **environ;

/* A SYSCOPE_ variable close to a setting's name but naming none is a typo that would
 * otherwise be ignored in silence (other tools' SYSCOPE_ variables, far from every name,
 * are left alone). */
static void warn_misspelled_env(void)
{
	const size_t plen = strlen(SC_SETTING_ENV_PREFIX);

	for (char **e = environ; *e; e++) {
		const char *eq = strchr(*e, '=');
		const char *meant;
		char name[128];

		if (strncmp(*e, SC_SETTING_ENV_PREFIX, plen) || !eq ||
		    (size_t)(eq - *e) - plen >= sizeof(name))
			continue;
		memcpy(name, *e + plen, (size_t)(eq - *e) - plen);
		name[eq - *e - plen] = '\0';
		meant = sc_setting_misspelled(name);
		if (meant)
			pr_warn("environment: %s%s is not a setting and is ignored; did you mean "
				"%s%s?",
				SC_SETTING_ENV_PREFIX, name, SC_SETTING_ENV_PREFIX, meant);
	}
}

void sc_cli_parse(struct sc_cli *cli, const struct sc_verb *verb, int argc, char **argv,
		  struct sc_extra_opt *extras, bool program_follows)
{
	char err[SC_ERRMSG_MAX];
	int i;

	memset(cli, 0, sizeof(*cli));
	cli->verb = verb;
	if (sc_settings_init(&cli->settings))
		sc_die(70, "out of memory");
	if (sc_settings_load_env(&cli->settings, NULL, err))
		sc_die(SC_EXIT_USAGE, "environment: %s%s", SC_SETTING_ENV_PREFIX, err);
	warn_misspelled_env();
	cli->rest = sc_xcalloc((size_t)argc + 1, sizeof(char *));
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1]) {
			if (program_follows)
				break;
			cli->rest[cli->nrest++] = argv[i];
			continue;
		}
		i = a[1] == '-' ? long_option(cli, extras, argv, i, argc)
				: short_options(cli, extras, argv, i, argc);
	}
	for (; i < argc; i++)
		cli->rest[cli->nrest++] = argv[i];
	cli->rest[cli->nrest] = NULL;
	sc_log_verbosity = (int)sc_int(&cli->settings, SC_SET_VERBOSE);
}

void sc_cli_free(struct sc_cli *cli)
{
	sc_settings_free(&cli->settings);
	free(cli->rest);
	cli->rest = NULL;
}

bool sc_cli_answered(struct sc_cli *cli, const struct sc_extra_opt *extras)
{
	if (cli->help)
		sc_cli_help(cli->verb, extras, cli->help_topic);
	else if (cli->version)
		printf("syscope %s\n", SYSCOPE_VERSION);
	else
		return false;
	sc_cli_free(cli);
	return true;
}
