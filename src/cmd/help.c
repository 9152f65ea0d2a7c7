/* SPDX-License-Identifier: MIT */
/* --help for every verb, generated from the settings table and the verb's extra options. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cmd.h"

static const struct {
	unsigned cat;
	const char *name, *title;
	const char *aliases; /* other topic names users try, space-separated */
} topics[] = {
	{ SC_CAT_SAMPLING, "sampling", "Sampling", "cpu" },
	{ SC_CAT_OUTPUT, "output", "Output", "tracing profiling" },
	{ SC_CAT_PROCESS, "process", "Processes", "" },
	{ SC_CAT_BUFFER, "buffer", "Recording buffers", "" },
	{ SC_CAT_GPU, "gpu", "GPU tracing", "cuda" },
	{ SC_CAT_HWCOUNTERS, "counters", "CPU counters", "hwcounters pmc papi" },
	{ SC_CAT_GENERAL | SC_CAT_DEBUG, "general", "General", "" },
};

#define TOPIC_LIST                                                                               \
	"sampling (cpu), output (tracing, profiling), process, buffer, gpu, counters, general, " \
	"preset, parallel, all"

/* Topics of things not in this version yet: named, so that --help=X is not a dead end. */
static const struct {
	const char *name, *text;
} pending[] = {
	{ "parallel", "--parallel=mpi traces MPI calls (C and Fortran), --parallel=openmp "
		      "OpenMP constructs (OMPT or libgomp), --parallel=pthread pthread waits, "
		      "creations and joins (--pthread-min-wait), --parallel=nccl NCCL collectives "
		      "and point-to-point calls through NCCL's profiler plugin (--nccl-events)." },
};

static bool topic_is(size_t t, const char *topic)
{
	const char *a = topics[t].aliases;
	size_t n = strlen(topic);

	if (!strcasecmp(topic, topics[t].name))
		return true;
	for (const char *p = strstr(a, topic); p; p = strstr(p + 1, topic))
		if ((p == a || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
	return false;
}

static const char *metavar(const struct sc_setting_def *d)
{
	switch (d->type) {
	case SC_T_BOOL:
		return "";
	case SC_T_INT:
		return "=N";
	case SC_T_DOUBLE:
		return d->flags & SC_SF_HZ ? "=HZ" : d->flags & SC_SF_SECONDS ? "=SECONDS" : "=X";
	case SC_T_ENUM:
		return "=CHOICE";
	case SC_T_LIST:
		return d->flags & SC_SF_PAIR ? " EVENT PERIOD"
		       : d->choices	     ? " FORMAT..."
					     : "=LIST";
	default:
		return d->short_flag == 'o' ? "=PATH" : "=TEXT";
	}
}

static void print_option(const char *shrt, const char *lng, const char *help, const char *extra)
{
	char left[96];

	snprintf(left, sizeof(left), "  %s%s%s", shrt, shrt[0] ? ", " : "    ", lng);
	if (strlen(left) > 34)
		printf("%s\n%36s%s%s\n", left, "", help, extra);
	else
		printf("%-36s%s%s\n", left, help, extra);
}

/* Defaults a verb changes before it runs the program, so that its help says what it does. */
static const struct {
	unsigned verbs;
	int id;
	const char *value;
} verb_defaults[] = {
	{ SC_VERB_INSTRUMENT | SC_VERB_PYTHON, SC_SET_USE_SAMPLING, "false" }, /* unless -S */
	{ SC_VERB_CAUSAL, SC_SET_SAMPLING_FREQ, "1000" },
	{ SC_VERB_CONVERT, SC_SET_OUTPUT_PATH, "the session's folder, or the database's" },
	{ SC_VERB_CONVERT, SC_SET_OUTPUT_FORMAT, "the run's, or pftrace from a database" },
	{ SC_VERB_MERGE, SC_SET_OUTPUT_PATH, "syscope-merged" },
	{ SC_VERB_MERGE, SC_SET_OUTPUT_FORMAT, "rocpd pftrace" },
};

static const char *default_of(const struct sc_verb *verb, int id)
{
	for (size_t i = 0; i < sizeof(verb_defaults) / sizeof(verb_defaults[0]); i++)
		if (verb_defaults[i].id == id && (verb_defaults[i].verbs & verb->mask))
			return verb_defaults[i].value;
	return sc_setting_defs[id].defval;
}

/* `short_taken`: the verb's own option has this setting's short flag (and wins). */
static void print_setting(const struct sc_verb *verb, int id, bool short_taken)
{
	const struct sc_setting_def *d = &sc_setting_defs[id];
	const char *defval = default_of(verb, id);
	char shrt[4] = "", lng[96], extra[256] = "";

	if (d->short_flag && !short_taken)
		snprintf(shrt, sizeof(shrt), "-%c", d->short_flag);
	snprintf(lng, sizeof(lng), "--%s%s", d->long_flag, metavar(d));
	if (d->type == SC_T_ENUM || (d->type == SC_T_LIST && d->choices))
		snprintf(extra, sizeof(extra), " [%s]", d->choices);
	if (defval[0] && d->type != SC_T_BOOL)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), " (default: %s)",
			 defval);
	else if (d->type == SC_T_BOOL && !strcmp(defval, "true"))
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
			 " (on by default; --no-%s)", d->long_flag);
	print_option(shrt, lng, d->help, extra);
}

void sc_cli_help(const struct sc_verb *verb, const struct sc_extra_opt *extras, const char *topic)
{
	bool all = !topic || !*topic || !strcasecmp(topic, "all");
	bool matched = all;

	printf("Usage: %s\n\n%s\n", verb->usage, verb->summary);
	for (size_t t = 0; t < sizeof(topics) / sizeof(topics[0]); t++) {
		bool header = false;

		if (!all && !topic_is(t, topic))
			continue;
		matched = true;
		for (int id = 0; id < SC_SETTING_COUNT; id++) {
			const struct sc_setting_def *d = &sc_setting_defs[id];
			unsigned first_cat = d->categories & -d->categories;

			bool extra = false, short_taken = false;

			for (size_t i = 0; extras && extras[i].long_flag && d->long_flag; i++) {
				extra = extra || !strcmp(extras[i].long_flag, d->long_flag);
				short_taken =
					short_taken ||
					(d->short_flag && extras[i].short_flag == d->short_flag);
			}
			if (!(d->verbs & verb->mask) || !d->long_flag ||
			    !(first_cat & topics[t].cat) || extra)
				continue;
			if (!header) {
				printf("\n%s:\n", topics[t].title);
				header = true;
			}
			print_setting(verb, id, short_taken);
		}
	}
	for (size_t i = 0; !all && i < sizeof(pending) / sizeof(pending[0]); i++)
		if (!strcasecmp(topic, pending[i].name)) {
			printf("\n%s\n", pending[i].text);
			matched = true;
		}
	if (all || !strcasecmp(topic, "preset")) {
		matched = true;
		printf("\n%s options:\n", verb->name);
		for (size_t i = 0; extras && extras[i].long_flag; i++) {
			char shrt[4] = "", lng[96];

			if (extras[i].short_flag)
				snprintf(shrt, sizeof(shrt), "-%c", extras[i].short_flag);
			const char *mv = extras[i].metavar ? extras[i].metavar : "";

			snprintf(lng, sizeof(lng), "--%s%s%s%s", extras[i].long_flag,
				 extras[i].takes_value ? "="
				 : *mv		       ? "[="
						       : "",
				 mv, !extras[i].takes_value && *mv ? "]" : "");
			print_option(shrt, lng, extras[i].help, "");
		}
		print_option("-h", "--help[=TOPIC]", "This help, or one topic: " TOPIC_LIST, "");
		print_option("", "--version", "Print the version and exit", "");
		printf("\nEvery option is also an environment variable SYSCOPE_<NAME>, e.g.\n"
		       "SYSCOPE_SAMPLING_FREQ=1000; the command line wins over the environment.\n"
		       "Booleans take on/off, yes/no, true/false, 1/0; --no-NAME turns one off.\n");
	}
	if (!matched)
		printf("\nNo help topic '%s'; topics: " TOPIC_LIST "\n", topic);
}
