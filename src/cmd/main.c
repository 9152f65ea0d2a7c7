/* SPDX-License-Identifier: MIT */
/*
 * syscope: one executable, one verb per subcommand. `syscope VERB ...` and a link named
 * `syscope-VERB` run the same code; an unknown verb gets the nearest valid spelling.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/strutil.h"
#include "cmd.h"

const struct sc_verb sc_verbs[] = {
	{ "sample", cmd_sample, SC_VERB_SAMPLE,
	  "Profile a program by sampling the call stacks of all its threads and processes.",
	  "syscope sample [options] [--] program [args...]" },
	{ "run", cmd_run, SC_VERB_RUN,
	  "Profile a program with a preset ('balanced' by default) refined by domain flags: "
	  "sampling, CUDA tracing, outputs.",
	  "syscope run [--preset=NAME|FILE] [--cuda[=...]] [--cpu[=HZ]] [options] [--] program "
	  "[args...]" },
	{ "attach", cmd_attach, SC_VERB_SAMPLE, /* sample's options */
	  "Profile a process that is already running (CPU-time sampling of all its threads), "
	  "then detach and leave it running.",
	  "syscope attach -p PID[,PID...] [-p PID...] [--tid TID] [-d SECONDS] [-w SECONDS] [-F perfetto,rocpd] "
	  "[options]" },
	{ "instrument", cmd_instrument, SC_VERB_INSTRUMENT,
	  "Record every call of the program's functions: their entries are patched at start-up "
	  "(no rebuild, no debug information needed).",
	  "syscope instrument [-I REGEX] [-E REGEX] [-R REGEX] [--min-instructions N] "
	  "[--simulate] [--print-instrumented] [--print-excluded] [--dump-info[=FILE]] "
	  "[options] [--] program [args...]" },
	{ "python", cmd_python, SC_VERB_PYTHON,
	  "Run a Python script with every Python call traced as a region (exact counts, "
	  "mean, min, max), thread names and worker roles; sampling with -S.",
	  "syscope python [-I REGEX] [-E REGEX] [-MI REGEX] [-ME REGEX] [options] [--] "
	  "[PYTHON [interpreter options]] script.py|-m MODULE|-c CODE [args...]" },
	{ "causal", cmd_causal, SC_VERB_CAUSAL,
	  "Causal profiling: how much faster the program would be if a function or line were "
	  "faster, by virtual speedups (Coz's method; profile.coz, causal.txt/json/svg).",
	  "syscope causal [-F REGEX] [-l FILE:LINE,...] [--binary REGEX] [-S 0,10,...] [-n RUNS] "
	  "[-e] [--mode function|line] [--selection random|fixed] [--progress FUNC|FILE:LINE] "
	  "[options] [--] program [args...]" },
	{ "avail", cmd_avail, SC_VERB_AVAIL,
	  "What this syscope can do here: settings, data sources, CPU events, domains, presets; "
	  "write a configuration file.",
	  "syscope avail [-S] [-C] [-H [-c CPU|GPU]] [--list-domains] [--list-presets] "
	  "[-r REGEX] [-d] [--format table|csv|json|md] [-G FILE]" },
	{ "convert", cmd_convert, SC_VERB_CONVERT,
	  "Build outputs from a session folder (e.g. one left by a killed program) or from rocpd "
	  "databases.",
	  "syscope convert [-f FORMAT...] [-o PATH] SESSION-FOLDER | FILE.db..." },
	{ "summary", cmd_summary, SC_VERB_SUMMARY,
	  "Print the top functions, regions, kernels, copies and GPU busy time of sessions or "
	  "rocpd databases.",
	  "syscope summary [--format table|csv|json|md] [--top N] SESSION|FILE.db..." },
	{ "report", cmd_report, SC_VERB_CONVERT,
	  "Write one self-contained HTML page of sessions or rocpd databases: summary, flame "
	  "graph, threads over time, counters, GPU work, regions.",
	  "syscope report [-o FILE.html|FOLDER] SESSION|FOLDER|FILE.db..." },
	{ "merge", cmd_merge, SC_VERB_MERGE,
	  "Merge processes, MPI ranks or nodes into one rocpd database and one Perfetto trace.",
	  "syscope merge [-o OUT[.db] (default syscope-merged/)] [-f FORMAT...] "
	  "SESSION|FILE.db|FOLDER..." },
};
const unsigned sc_nverbs = sizeof(sc_verbs) / sizeof(sc_verbs[0]);

static void usage(FILE *f)
{
	fprintf(f, "Usage: syscope VERB [options] [--] [program [args...]]\n\n"
		   "syscope is a system-level profiler for Linux programs on CPU and GPU.\n\n"
		   "Verbs:\n");
	for (unsigned i = 0; i < sc_nverbs; i++)
		fprintf(f, "  %-10s %s\n", sc_verbs[i].name, sc_verbs[i].summary);
	fprintf(f, "\n'syscope VERB --help' describes a verb's options.\n"
		   "Examples: syscope sample -f 1000 -- ./app arg1 arg2\n"
		   "          syscope run --preset=trace-gpu -- python3 train.py\n");
}

const struct sc_verb *sc_verb_find(const char *name)
{
	for (unsigned i = 0; i < sc_nverbs; i++)
		if (!strcmp(sc_verbs[i].name, name))
			return &sc_verbs[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const char *self = strrchr(argv[0], '/');
	const struct sc_verb *verb;

	self = self ? self + 1 : argv[0];
	if (!strncmp(self, "syscope-", 8) && (verb = sc_verb_find(self + 8)))
		return verb->fn(argc, argv);
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? SC_EXIT_USAGE : 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("syscope %s\n", SYSCOPE_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "help") && argc > 2 && (verb = sc_verb_find(argv[2]))) {
		char *args[] = { argv[2], "--help", NULL };

		return verb->fn(2, args);
	}
	verb = sc_verb_find(argv[1]);
	if (!verb) {
		const char *names[16];
		const char *near;

		for (unsigned i = 0; i < sc_nverbs; i++)
			names[i] = sc_verbs[i].name;
		near = sc_nearest(argv[1], names, sc_nverbs);
		if (near)
			fprintf(stderr, "syscope: unknown verb '%s' (did you mean '%s'?)\n",
				argv[1], near);
		else
			fprintf(stderr, "syscope: unknown verb '%s'\n", argv[1]);
		usage(stderr);
		return SC_EXIT_USAGE;
	}
	return verb->fn(argc - 1, argv + 1);
}
