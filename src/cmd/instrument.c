/* SPDX-License-Identifier: MIT */
/*
 * syscope instrument: record every call of the program's functions by patching their entries
 * at start-up (the model is rocprof-sys-instrument, which uses Dyninst). Here the analysis
 * (src/instrument/: symbols, capstone, which functions can be patched and how) runs in the
 * CLI, before the program starts; it writes a patch plan that libsyscope.so applies inside
 * the program before the program's constructors run. Each call becomes a region of category
 * "instrumented" on its thread, and the wall_clock profile gives calls and times per
 * function; the other profiling options (--cpu for sampling too, outputs, presets) apply.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/install.h"
#include "../common/log.h"
#include "../common/strutil.h"
#include "../instrument/instrument.h"
#include "cmd.h"
#include "dlopen_libs.h"

/* Functions with fewer instructions are left out unless -I names them. A probe costs tens
 * of nanoseconds (docs/benchmarks.md); below this size a function's own work is smaller
 * than that and its time would be mostly ours. rocprof-sys's default is 1024. */
#define DEFAULT_MIN_INSTRUCTIONS "8"
/* A function that calls nothing and has no loop runs at most its own instructions a call:
 * below this many, it can never cost much itself, and its probe would cost more than it
 * (Dyninst-based tools skip small functions by the same reasoning). */
#define DEFAULT_MIN_LEAF_INSTRUCTIONS "64"

struct instrument_opts {
	struct sc_selection sel;
	const char *include, *exclude, *restrict_, *min_insns, *min_leaf, *min_range, *simulate;
	const char *print_available, *print_instrumented, *print_excluded, *dump_info, *rewrite;
	const char *module_include, *module_exclude, *module_restrict, *loops;
	char err[256];
	bool bad_regex;
	VEC(struct sc_module_info) mods; /* the program first, then libraries */
	sc_path_vec lib_files;		 /* -MI values that name a library file */
	char **args;			 /* the program's arguments, for the libraries */
	int nargs;			 /* it may dlopen (dlopen_libs.c) */
	sc_path_vec joined_args;	 /* compat_argv's "--print-X=WORD" */
	char *plan;
	char *plan_dir; /* a private folder for it: a fixed name in /tmp could be a planted link */
	bool use_cache; /* --analysis-cache */
};

/* -I, -E, -R (and -MI, -ME, -MR) may be given many times; the parser keeps one value per
 * flag, so once it has found where the program starts, the options before it are read again
 * for these. */
static const struct {
	char short_flag;
	const char *long_flag;
} regex_flags[] = {
	{ 'I', "--function-include" },	{ 'E', "--function-exclude" },
	{ 'R', "--function-restrict" }, { 0, "--module-include" },
	{ 0, "--module-exclude" },	{ 0, "--module-restrict" },
};
#define NREGEX_FLAGS (sizeof(regex_flags) / sizeof(regex_flags[0]))

static sc_regex_vec *regex_list(struct instrument_opts *o, size_t k)
{
	sc_regex_vec *lists[NREGEX_FLAGS] = {
		&o->sel.include,	&o->sel.exclude,	&o->sel.restrict_,
		&o->sel.module_include, &o->sel.module_exclude, &o->sel.module_restrict,
	};

	return lists[k];
}

/* If argv[*i] is one of the regex flags, take it and its value. */
static void take_regex(struct instrument_opts *o, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *value = NULL;

	for (size_t k = 0; k < NREGEX_FLAGS; k++) {
		size_t len = strlen(regex_flags[k].long_flag);

		if (a[0] == '-' && regex_flags[k].short_flag && a[1] == regex_flags[k].short_flag)
			value = a[2] ? a + 2 : NULL;
		else if (!strncmp(a, regex_flags[k].long_flag, len) && (!a[len] || a[len] == '='))
			value = a[len] ? a + len + 1 : NULL;
		else
			continue;
		if (!value) {
			if (*i + 1 >= argc)
				sc_die(SC_EXIT_USAGE, "instrument: %s needs a regular expression",
				       a);
			value = argv[++*i];
		}
		if (!o->bad_regex &&
		    !sc_selection_add(regex_list(o, k), value, o->err, sizeof(o->err)))
			o->bad_regex = true;
		if (regex_list(o, k) == &o->sel.module_include && strchr(value, '/')) {
			char real[PATH_MAX];

			/* A library the program opens later with dlopen, named by its file. */
			if (realpath(value, real))
				*VEC_PUSH(&o->lib_files) = sc_xstrdup(real);
		}
		return;
	}
}

static void collect_regexes(struct instrument_opts *o, int argc, char **argv, char *program)
{
	for (int i = 1; i < argc && argv[i] != program && strcmp(argv[i], "--"); i++)
		take_regex(o, argc, argv, &i);
}

/* rocprof-sys spellings: -MI/-ME/-MR, and "--print-instrumented functions" (a separate word,
 * which would otherwise be taken for the program); up to "--". */
static char **compat_argv(int argc, char **argv, sc_path_vec *joined)
{
	static const char *const two_letter[][2] = {
		{ "-MI", "--module-include" },
		{ "-ME", "--module-exclude" },
		{ "-MR", "--module-restrict" },
	};
	char **out = sc_xcalloc((size_t)argc + 1, sizeof(char *));
	int n = 0;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			while (i < argc)
				out[n++] = argv[i++];
			break;
		}
		for (size_t k = 0; k < 3; k++)
			if (!strcmp(a, two_letter[k][0]))
				a = two_letter[k][1];
		if (!strncmp(a, "--print-", 8) && !strchr(a, '=') && i + 1 < argc &&
		    (!strcmp(argv[i + 1], "functions") || !strcmp(argv[i + 1], "modules"))) {
			out[n++] = *VEC_PUSH(joined) = sc_xasprintf("%s=%s", a, argv[++i]);
			continue;
		}
		out[n++] = (char *)a;
	}
	return out;
}

static uint32_t parse_count(const char *flag, const char *v, const char *dflt)
{
	char *end;
	unsigned long n;

	if (!v)
		v = dflt;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || end == v || n > UINT32_MAX || *v == '-')
		sc_die(SC_EXIT_USAGE, "--%s %s: expected a count (0 or more)", flag, v);
	return (uint32_t)n;
}

static void print_choice(const struct instrument_opts *o)
{
	for (size_t m = 0; m < o->mods.n; m++) {
		const struct sc_module_info *mod = &o->mods.v[m];
		size_t c[3];

		sc_module_counts(mod, c);
		if (o->print_available) {
			printf("Available functions of %s (%zu):\n", mod->path, c[0] + c[1]);
			sc_print_functions(stdout, mod, SC_FN_INSTRUMENTED, false);
			sc_print_functions(stdout, mod, SC_FN_EXCLUDED, false);
		}
		if (o->print_instrumented) {
			printf("Instrumented functions of %s (%zu):\n", mod->path, c[0]);
			sc_print_functions(stdout, mod, SC_FN_INSTRUMENTED, false);
		}
		if (o->print_excluded) {
			printf("Excluded functions of %s (%zu), and those that cannot be patched "
			       "(%zu):\n",
			       mod->path, c[1], c[2]);
			sc_print_functions(stdout, mod, SC_FN_EXCLUDED, true);
			sc_print_functions(stdout, mod, SC_FN_UNPATCHABLE, true);
		}
	}
}

static void dump_info(const struct instrument_opts *o, const char *path)
{
	size_t len = strlen(path);
	bool text = len > 4 && !strcmp(path + len - 4, ".txt");

	if (sc_dump_info(path, o->mods.v, o->mods.n, !text))
		pr_warn("--dump-info: cannot write %s: %s", path, strerror(errno));
}

/*
 * Where -o PATH puts the copy of `in`: PATH, or PATH/<name> for a folder. The name is the
 * library's SONAME when it has one (the name the loader looks for: libsqlite3.so.0, not the
 * libsqlite3.so.0.8.6 its link resolves to), else the name it was given by. Caller frees.
 */
static char *rewrite_target(const char *opt, const char *in, const char *given, const char *soname)
{
	struct stat st;
	const char *base = soname ? soname : sc_base_name(given ? given : in);
	size_t len = strlen(opt);

	if ((len && opt[len - 1] == '/') || (!stat(opt, &st) && S_ISDIR(st.st_mode))) {
		if (mkdir(opt, 0777) && errno != EEXIST)
			sc_die(SC_EXIT_FAILURE, "instrument: cannot create %s: %s", opt,
			       strerror(errno));
		return sc_xasprintf("%s%s%s", opt, len && opt[len - 1] == '/' ? "" : "/", base);
	}
	return sc_xstrdup(opt);
}

/* How to use a rewritten library: the folder it is in on the loader's path. */
static void tell_library_use(const char *target, const char *soname)
{
	char *dir = sc_xstrdup(target), *slash = strrchr(dir, '/');

	if (slash)
		*slash = '\0';
	if (soname && strcmp(sc_base_name(target), soname))
		pr_warn("instrument: the loader looks for this library as %s, not %s: name the "
			"copy %s, or programs will not find it",
			soname, sc_base_name(target), soname);
	fprintf(stderr,
		"syscope: to use it, put its folder first on the loader's path: "
		"LD_LIBRARY_PATH=%s syscope run -- PROGRAM (or install it where the program "
		"looks for %s)\n",
		slash ? dir : ".", soname ? soname : sc_base_name(target));
	free(dir);
}

static bool analyze_module(struct instrument_opts *o, const char *path, bool is_main);

/* More libraries than this not loaded at start, matched by a regex, is a regex too wide
 * (-MI lib) rather than the few a program opens with dlopen: each would be analyzed. */
#define MAX_DLOPEN_LIBS 8

static bool listed_path(const sc_path_vec *v, const char *path)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->v[i], path))
			return true;
	return false;
}

/* -o: analyze `name` (a program or a library), write its instrumented copy, run nothing. */
static int rewrite(struct instrument_opts *o, char **rest, int nrest)
{
	char real[PATH_MAX], out_real[PATH_MAX], *target, *runtime, *soname = NULL;
	const struct sc_module_info *mod;
	size_t c[3];
	char *found = strchr(rest[0], '/') ? sc_xstrdup(rest[0]) : sc_find_program(rest[0]);

	if (!realpath(found, real))
		sc_die(SC_EXIT_NOTFOUND, "instrument: %s: %s", found, strerror(errno));
	free(found);
	if (o->sel.module_include.n || o->sel.module_restrict.n)
		sc_die(SC_EXIT_USAGE,
		       "instrument: -o rewrites one file; rewrite each library on its own "
		       "(syscope instrument -o DIR/ -- libfoo.so) instead of -MI/-MR");
	analyze_module(o, real, true);
	mod = &o->mods.v[0];
	print_choice(o);
	if (o->dump_info)
		dump_info(o, *o->dump_info ? o->dump_info : "instrumentation.json");
	if (mod->is_library)
		soname = sc_elf_soname(real);
	target = rewrite_target(o->rewrite, real, rest[0], soname);
	if (realpath(target, out_real) && !strcmp(out_real, real))
		sc_die(SC_EXIT_USAGE,
		       "instrument: -o %s would overwrite the original; name another "
		       "file",
		       target);
	runtime = sc_install_path("lib/syscope/libsyscope.so");
	if (sc_rewrite_with_plan(real, target, mod, runtime, o->err, sizeof(o->err)))
		sc_die(SC_EXIT_FAILURE, "instrument: %s", o->err);
	free(runtime);
	sc_module_counts(mod, c);
	fprintf(stderr,
		"syscope: wrote %s: %s with %zu functions instrumented (%zu excluded, %zu cannot "
		"be patched); %s\n",
		target, mod->is_library ? "a library" : "a program", c[0], c[1], c[2],
		mod->is_library
			? "programs that load it are instrumented in it under 'syscope run'"
			: "it runs instrumented by itself (outputs in syscope-NAME-output/), "
			  "or under 'syscope run -- PROGRAM' with other options; "
			  "SYSCOPE_ENABLED=false runs it plain");
	if (mod->is_library)
		tell_library_use(target, soname);
	if (nrest > 1)
		pr_warn("instrument: -o rewrites, it does not run the program: its arguments are "
			"not used");
	free(soname);
	free(target);
	return 0;
}

/* Analyze one module and choose its functions; false (with a warning) when it cannot be. */
static bool analyze_module(struct instrument_opts *o, const char *path, bool is_main)
{
	struct sc_module_info mod;
	size_t c[3];

	if (sc_analyze_module_cached(path, is_main, o->use_cache, &mod, o->err, sizeof(o->err))) {
		if (is_main)
			sc_die(SC_EXIT_FAILURE, "instrument: %s", o->err);
		pr_warn("instrument: %s; left uninstrumented", o->err);
		sc_module_info_free(&mod);
		return false;
	}
	if (mod.is_library)
		mod.is_main = false;
	if (mod.is_static)
		sc_die(SC_EXIT_FAILURE,
		       "instrument: %s is a static executable: the dynamic loader never runs, so "
		       "libsyscope.so cannot be loaded into it to patch it; link it dynamically to "
		       "instrument it",
		       path);
	if (!mod.has_symtab && !mod.fns.n)
		pr_warn("instrument: %s is stripped (no .symtab) and exports no function: none of "
			"its code can be instrumented (a build that keeps its symbols has them; "
			"-MI LIBRARY instruments the libraries it calls)",
			path);
	else if (!mod.has_symtab)
		pr_warn("instrument: %s is stripped (no .symtab): only its %zu exported functions "
			"can be found; the others' time goes to their callers",
			path, mod.fns.n);
	sc_select_functions(&mod, &o->sel);
	sc_module_counts(&mod, c);
	pr_info("instrument: %s: %zu functions instrumented, %zu excluded, %zu cannot be "
		"patched (analysis %s%.1f ms)",
		path, c[0], c[1], c[2], mod.from_cache ? "from the cache, " : "",
		mod.decode_ns / 1e6);
	*VEC_PUSH(&o->mods) = mod;
	return true;
}

/* The program's libraries that -MI/-MR choose: those it loads at start, the files -MI names,
 * and those a regex names that it may dlopen later (dlopen_libs.c). */
static void analyze_libraries(struct instrument_opts *o, const char *program, const char *interp)
{
	sc_path_vec libs = { 0 }, later = { 0 };
	size_t at_start;
	bool any = false;

	if (!o->sel.module_include.n && !o->sel.module_restrict.n)
		return;
	if (sc_program_libraries(program, interp, &libs, o->err, sizeof(o->err)))
		pr_warn("instrument: cannot list the libraries of %s (%s)", program, o->err);
	at_start = libs.n;
	for (size_t i = 0; i < o->lib_files.n; i++)
		if (!listed_path(&libs, o->lib_files.v[i]))
			*VEC_PUSH(&libs) = sc_xstrdup(o->lib_files.v[i]);
	sc_dlopen_libraries(&o->sel, program, o->args, o->nargs, &libs, &later);
	if (later.n > MAX_DLOPEN_LIBS) {
		pr_warn("instrument: --module-include matches %zu libraries the program does not "
			"load at start (%s, %s...); none of them is instrumented: name the ones it "
			"opens with dlopen more narrowly (-MI 'libfoo\\.so' or -MI /path/libfoo.so)",
			later.n, later.v[0], later.v[1]);
	} else {
		for (size_t i = 0; i < later.n; i++) {
			pr_info("instrument: %s, not loaded at start, is patched if the program opens "
				"it",
				later.v[i]);
			*VEC_PUSH(&libs) = sc_xstrdup(later.v[i]);
		}
	}
	for (size_t i = 0; i < later.n; i++)
		free(later.v[i]);
	for (size_t i = 0; i < libs.n; i++) {
		const char *why;

		if (sc_select_module(&o->sel, libs.v[i], false, &why))
			any |= analyze_module(o, libs.v[i], false);
		else if (why && strcmp(why, "not matched by --module-restrict"))
			pr_info("instrument: %s: %s", libs.v[i], why);
		free(libs.v[i]);
	}
	if (!any && later.n <= MAX_DLOPEN_LIBS)
		pr_warn("instrument: no library matches --module-include or --module-restrict: "
			"none of the %zu libraries %s loads at start, and none it could dlopen from "
			"its arguments' folders, its own, LD_LIBRARY_PATH or the system's (name one "
			"elsewhere by its file: -MI /path/to/libfoo.so)",
			at_start, program);
	VEC_FREE(&later);
	VEC_FREE(&libs);
}

/* Analyze the program (and chosen libraries); exits on what cannot be instrumented. */
static void analyze(struct instrument_opts *o, const char *program)
{
	char *found = sc_find_program(program), real[PATH_MAX];
	const char *why;
	size_t total[3] = { 0 };

	if (!realpath(found, real))
		sc_die(SC_EXIT_NOTFOUND, "%s: %s", found, strerror(errno));
	free(found);
	analyze_module(o, real, true);
	analyze_libraries(o, real, o->mods.v[0].interp);
	if (!sc_select_module(&o->sel, real, true, &why)) {
		/* Analyzed all the same: --print-* and --dump-info show it. */
		for (size_t i = 0; i < o->mods.v[0].fns.n; i++)
			if (o->mods.v[0].fns.v[i].state == SC_FN_INSTRUMENTED) {
				o->mods.v[0].fns.v[i].state = SC_FN_EXCLUDED;
				o->mods.v[0].fns.v[i].reason = why;
			}
	}
	if (o->sel.include.n && !o->sel.matched_include)
		pr_warn("instrument: no function matches --function-include");
	if (o->sel.restrict_.n && !o->sel.matched_restrict)
		pr_warn("instrument: no function matches --function-restrict");
	for (size_t m = 0; m < o->mods.n; m++) {
		size_t c[3];

		sc_module_counts(&o->mods.v[m], c);
		for (int k = 0; k < 3; k++)
			total[k] += c[k];
	}
	if (!total[0])
		pr_warn("instrument: no function will be instrumented (%zu excluded, %zu cannot be "
			"patched: --print-excluded says why)",
			total[1], total[2]);
}

/* After the run: the analysis and the plan go into the session folder. */
static void keep_with_session(const char *session, void *ctx)
{
	struct instrument_opts *o = ctx;
	char *info = sc_xasprintf("%s/instrumentation.json", session);
	char *plan = sc_xasprintf("%s/raw/instrument-plan.bin", session);

	if (sc_dump_info(info, o->mods.v, o->mods.n, true))
		pr_warn("cannot write %s: %s", info, strerror(errno));
	rename(o->plan, plan); /* what cannot be moved, remove_plan removes */
	free(info);
	free(plan);
}

/* The plan's private folder, whatever is left in it (nothing once keep_with_session moved
 * the plan into the session). */
static void remove_plan(struct instrument_opts *o)
{
	if (o->plan)
		unlink(o->plan);
	if (o->plan_dir)
		rmdir(o->plan_dir);
	free(o->plan);
	free(o->plan_dir);
	o->plan = o->plan_dir = NULL;
}

static void free_opts(struct instrument_opts *o)
{
	for (size_t m = 0; m < o->mods.n; m++)
		sc_module_info_free(&o->mods.v[m]);
	VEC_FREE(&o->mods);
	for (size_t i = 0; i < o->lib_files.n; i++)
		free(o->lib_files.v[i]);
	VEC_FREE(&o->lib_files);
	for (size_t i = 0; i < o->joined_args.n; i++)
		free(o->joined_args.v[i]);
	VEC_FREE(&o->joined_args);
	sc_selection_free(&o->sel);
}

/* One exit: every path leaves through `out` (through `out_cli` first while `cli` is ours),
 * which removes the plan's folder and frees what the options hold. */
int cmd_instrument(int argc, char **argv)
{
	static struct instrument_opts o;
	struct sc_extra_opt extras[] = {
		/* The parser keeps the last of each; collect_regexes reads them all. */
		{ "function-include", 'I', true, "REGEX",
		  "Instrument the functions that match, despite the size heuristics (repeatable)",
		  &o.include },
		{ "function-exclude", 'E', true, "REGEX",
		  "Never instrument the functions that match (repeatable)", &o.exclude },
		{ "function-restrict", 'R', true, "REGEX",
		  "Only the functions that match are candidates (repeatable)", &o.restrict_ },
		{ "min-instructions", 'i', true, "N",
		  "Leave out functions of fewer than N instructions (default " DEFAULT_MIN_INSTRUCTIONS
		  "; rocprof-sys: 1024)",
		  &o.min_insns },
		{ "min-leaf-instructions", 0, true, "N",
		  "Leave out functions that call nothing and have no loop when they have fewer "
		  "than N instructions (default " DEFAULT_MIN_LEAF_INSTRUCTIONS
		  ", or -i's N when -i is given)",
		  &o.min_leaf },
		{ "instrument-loops", 'l', false, "",
		  "Also record the loops of instrumented functions, each instance a region "
		  "'[loop] FUNCTION:LINE' from entering the loop to leaving it",
		  &o.loops },
		{ "min-address-range", 'r', true, "BYTES",
		  "Leave out functions smaller than BYTES (default 0)", &o.min_range },
		{ "module-include", 0, true, "REGEX",
		  "-MI: also instrument the shared libraries the program loads at start whose path "
		  "or name matches, and those it may open later with dlopen (found in its "
		  "arguments' folders, its own, LD_LIBRARY_PATH and the system's, or named by "
		  "their file: -MI /path/libfoo.so), patched when loaded (repeatable)",
		  &o.module_include },
		{ "module-exclude", 0, true, "REGEX",
		  "-ME: never instrument these modules (repeatable)", &o.module_exclude },
		{ "module-restrict", 0, true, "REGEX",
		  "-MR: only the modules that match, the program too (repeatable)",
		  &o.module_restrict },
		{ "output", 'o', true, "PATH",
		  "Rewrite instead of running: write a copy of the program or library (to PATH, or "
		  "into the folder PATH/) that carries its instrumentation; the program then runs "
		  "instrumented by itself or under 'syscope run', without analysis. (The session "
		  "folder of a run: SYSCOPE_OUTPUT_PATH.)",
		  &o.rewrite },
		{ "simulate", 0, false, "",
		  "Analyze and report what would be instrumented; do not run the program",
		  &o.simulate },
		{ "print-available", 0, false, "functions",
		  "Print the functions that could be instrumented", &o.print_available },
		{ "print-instrumented", 0, false, "functions",
		  "Print the functions that are instrumented", &o.print_instrumented },
		{ "print-excluded", 0, false, "functions",
		  "Print the functions left out, and why (selection, or cannot be patched)",
		  &o.print_excluded },
		{ "dump-info", 0, false, "FILE",
		  "Write every function with its state and reason to FILE (=F.json or =F.txt; "
		  "default instrumentation.json)",
		  &o.dump_info },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	const struct sc_verb *verb = sc_verb_find("instrument");
	char **args = compat_argv(argc, argv, &o.joined_args), err[SC_ERRMSG_MAX], *plan_dir;
	struct sc_cli cli;
	int rc = 0;

	if (!sc_profiling_cli(&cli, verb, argc, args, NULL, extras))
		goto out; /* answered, and `cli` freed */
	collect_regexes(&o, argc, args, cli.rest[0]);
	if (o.bad_regex) {
		pr_err("instrument: %s", o.err);
		rc = SC_EXIT_USAGE;
		goto out_cli;
	}
	o.sel.min_instructions =
		parse_count("min-instructions", o.min_insns, DEFAULT_MIN_INSTRUCTIONS);
	/* -i alone sets both: `-i 0` asks for every function. */
	o.sel.min_leaf_instructions =
		parse_count("min-leaf-instructions", o.min_leaf ? o.min_leaf : o.min_insns,
			    DEFAULT_MIN_LEAF_INSTRUCTIONS);
	o.sel.min_address_range = parse_count("min-address-range", o.min_range, "0");
	o.sel.loops = o.loops != NULL;
	o.use_cache = sc_bool(&cli.settings, SC_SET_ANALYSIS_CACHE);
	if (!strcmp(sc_str(&cli.settings, SC_SET_INSTRUMENT_MODE), "sampling") && !o.rewrite) {
		/* rocprof-sys's sampling mode: nothing patched, every thread sampled. */
		if (sc_settings_set(&cli.settings, SC_SET_USE_SAMPLING, "true", SC_LAYER_CLI, err))
			goto settings_failed;
		rc = sc_profile_program(&cli); /* frees `cli` */
		goto out;
	}
	if (o.rewrite) {
		rc = rewrite(&o, cli.rest, cli.nrest);
		goto out_cli;
	}
	o.args = cli.rest + 1;
	o.nargs = cli.nrest - 1;
	analyze(&o, cli.rest[0]);
	print_choice(&o);
	if (o.dump_info)
		dump_info(&o, *o.dump_info ? o.dump_info : "instrumentation.json");
	if (o.simulate)
		goto out_cli;
	plan_dir = sc_xasprintf("%s/syscope-plan-XXXXXX",
				getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(plan_dir)) {
		pr_err("instrument: cannot create a folder for the patch plan: %s",
		       strerror(errno));
		free(plan_dir);
		rc = SC_EXIT_FAILURE;
		goto out_cli;
	}
	o.plan_dir = plan_dir; /* ours from now on: `out` removes it */
	o.plan = sc_xasprintf("%s/plan.bin", o.plan_dir);
	if (sc_plan_write(o.plan, o.mods.v, o.mods.n, o.err, sizeof(o.err)) < 0) {
		pr_err("instrument: cannot write the patch plan: %s", o.err);
		rc = SC_EXIT_FAILURE;
		goto out_cli;
	}
	if (sc_settings_set(&cli.settings, SC_SET_INSTRUMENT_PLAN, o.plan, SC_LAYER_CLI, err))
		goto settings_failed;
	/* Instrumentation alone unless sampling was asked for (--cpu: both, as rocprof-sys's
	 * combined mode). */
	if (cli.settings.v[SC_SET_USE_SAMPLING].layer < SC_LAYER_ENV &&
	    sc_settings_set(&cli.settings, SC_SET_USE_SAMPLING, "false", SC_LAYER_CLI, err))
		goto settings_failed;
	/* Frees `cli`; keep_with_session moves the plan into the session. */
	rc = sc_profile_program_then(&cli, keep_with_session, &o);
	goto out;

settings_failed:
	pr_err("%s", err);
	rc = SC_EXIT_FAILURE;
out_cli:
	sc_cli_free(&cli);
out:
	remove_plan(&o);
	free_opts(&o);
	free(args);
	return rc;
}
