/* SPDX-License-Identifier: MIT */
/*
 * syscope python: run a Python script (or -m module, -c code) with every Python call traced
 * as a region (function entry and exit with its file and line), as rocprof-sys-python does;
 * the other profiling options are those of sample and run.
 *
 *   syscope python [options] [--] [PYTHON [interpreter options]] script.py|-m MODULE|-c CODE
 *                  [args...]
 *
 * The interpreter is `python3` from PATH unless the first word of the Python part is one
 * (python, python3, python3.12, a path to one) or --interpreter names it. The runtime installs
 * its tracer from a pending call once the interpreter is initialized (src/runtime/python/
 * capi.c); to trace the script from its first line, the interpreter runs a small bootstrap
 * (-c) that waits for that call, then runs the script as Python would: in __main__, with
 * sys.argv and sys.path[0] as `python script.py` sets them (runpy for -m).
 */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/vec.h"
#include "cmd.h"

/* Run by `python -c`: argv[1] is the mode (syscope:file, syscope:module, syscope:code),
 * argv[2] its target. The runtime's pending call, which may run while `site` is still
 * importing, installs the tracer unarmed (the argv says a bootstrap will arm it) and puts
 * the function that arms it in sys._syscope_start; the bootstrap calls it right before the
 * script's code, so neither start-up nor the bootstrap is traced. */
static const char bootstrap[] =
	"def _syscope_boot():\n"
	"    import os, sys, time\n"
	"    mode, target = sys.argv[1], sys.argv[2]\n"
	"    end = time.monotonic() + 10\n"
	"    while not hasattr(sys, '_syscope_start'):\n"
	"        if time.monotonic() > end:\n"
	"            sys.stderr.write('syscope: Python tracing did not start within 10 s; "
	"the script runs untraced\\n')\n"
	"            sys._syscope_start = lambda: None\n"
	"        time.sleep(0.001)\n"
	"    start = sys._syscope_start\n"
	"    del sys._syscope_start\n"
	"    g = globals()\n"
	"    del g['_syscope_boot']\n"
	/* -P, -I, PYTHONSAFEPATH: Python puts nothing before the first real entry */
	"    safe = getattr(sys.flags, 'safe_path', False) or sys.flags.isolated\n"
	"    if mode == 'syscope:module':\n"
	"        sys.argv = [target] + sys.argv[3:]\n"
	"        if not safe:\n"
	"            sys.path[0] = os.getcwd()\n"
	"        import runpy\n"
	"        start()\n"
	"        return runpy._run_module_as_main, [target], [True]\n"
	"    elif mode == 'syscope:code':\n"
	"        sys.argv = ['-c'] + sys.argv[3:]\n"
	"        code = compile(target, '<string>', 'exec')\n"
	"    else:\n"
	"        path = os.path.abspath(target)\n" /* as 3.9+ makes __file__ and co_filename */
	"        try:\n"
	"            with open(path, 'rb') as f:\n"
	"                source = f.read()\n"
	"        except OSError as e:\n"
	"            sys.stderr.write(\"%s: can't open file %r: [Errno %d] %s\\n\"\n"
	"                             % (sys.orig_argv[0], path, e.errno, e.strerror))\n"
	"            sys.exit(2)\n"
	"        sys.argv = sys.argv[2:]\n"
	"        if not safe:\n"
	"            sys.path[0] = os.path.dirname(os.path.realpath(target))\n"
	"        code = compile(source, path, 'exec')\n"
	"        g['__file__'] = path\n"
	"        g['__cached__'] = None\n"
	"        g['__loader__'] = sys.modules['_frozen_importlib_external'].SourceFileLoader(\n"
	"            '__main__', path)\n"
	"    start()\n" /* from here on; the frames that began before are never traced */
	"    return exec, [code], [g]\n"
	/* The script runs from this frame, the bootstrap's last (map calls without a frame of
	 * its own): at its module level inspect.stack() has this one frame more than under
	 * python, none of _syscope_boot's. */
	"try:\n"
	"    next(map(*_syscope_boot()))\n"
	"except (SystemExit, KeyboardInterrupt):\n"
	"    raise\n"
	"except BaseException as _syscope_e:\n" /* its traceback as Python prints it */
	"    _syscope_tb = _syscope_e.__traceback__.tb_next\n"
	"    if _syscope_tb and _syscope_tb.tb_frame.f_code.co_name == '_syscope_boot':\n"
	"        _syscope_tb = None\n" /* the script's SyntaxError: no traceback */
	"    __import__('sys').excepthook(type(_syscope_e), _syscope_e,\n"
	"                                 _syscope_e.with_traceback(_syscope_tb).__traceback__)\n"
	"    __import__('sys').exit(1)\n";

struct python_cmd {
	const char *interpreter;
	VEC(char *) interp_opts;
	const char *mode; /* "syscope:file", "syscope:module", "syscope:code" */
	const char *target;
	char **args;
	int nargs;
};

/* python, python3, python3.12, python3.12d: what a Python interpreter's file is called. */
static bool python_name(const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	if (strncmp(base, "python", 6))
		return false;
	base += 6;
	base += strspn(base, "0123456789.");
	return !*base || !strcmp(base, "d") || !strcmp(base, "m");
}

static bool is_elf(const char *path)
{
	char magic[4];
	FILE *f = fopen(path, "rb");
	bool elf = f && fread(magic, 1, 4, f) == 4 && !memcmp(magic, "\177ELF", 4);

	if (f)
		fclose(f);
	return elf;
}

/* Whether `name` (no slash) is a program on PATH. */
static bool on_path(const char *name)
{
	const char *path = getenv("PATH");
	char *dirs, *dir, *save = NULL;
	bool found = false;

	if (!path || strchr(name, '/'))
		return false;
	dirs = sc_xstrdup(path);
	for (dir = strtok_r(dirs, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		char *file = sc_xasprintf("%s/%s", *dir ? dir : ".", name);

		found = access(file, X_OK) == 0;
		free(file);
	}
	free(dirs);
	return found;
}

/* The script named `path`: exits naming the problem when it cannot be one. */
static void check_script(const char *path)
{
	struct stat st;

	if (stat(path, &st) && on_path(path))
		sc_die(SC_EXIT_NOEXEC,
		       "python: '%s' is a program, not a Python script or "
		       "interpreter; to profile it: syscope run -- %s",
		       path, path);
	if (stat(path, &st))
		sc_die(SC_EXIT_NOTFOUND,
		       "python: cannot open the script '%s': %s (usage: syscope "
		       "python [options] [--] script.py|-m MODULE|-c CODE [args...])",
		       path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		sc_die(SC_EXIT_NOEXEC, "python: '%s' is a folder, not a Python script", path);
	if (is_elf(path))
		sc_die(SC_EXIT_NOEXEC,
		       "python: '%s' is a program, not a Python script or "
		       "interpreter; to profile it: syscope run -- %s",
		       path, path);
}

/* Parse the Python part of the command line: [PYTHON [options]] script|-m M|-c C [args]. */
static void parse_python_part(struct python_cmd *pc, char **p, int n)
{
	int i = 0;

	if (n && python_name(p[0]))
		pc->interpreter = p[i++];
	/* The interpreter's own options pass through (-X and -W take a value). */
	while (i < n && p[i][0] == '-' && p[i][1] && strcmp(p[i], "-m") && strcmp(p[i], "-c")) {
		bool with_value = !strcmp(p[i], "-X") || !strcmp(p[i], "-W");

		if (!strcmp(p[i], "-"))
			break;
		*VEC_PUSH(&pc->interp_opts) = p[i];
		if (with_value && i + 1 < n)
			*VEC_PUSH(&pc->interp_opts) = p[++i];
		i++;
	}
	if (i >= n)
		sc_die(SC_EXIT_USAGE, "python: no script, -m MODULE or -c CODE given (usage: "
				      "syscope python [options] [--] script.py|-m MODULE|-c CODE "
				      "[args...])");
	if (!strcmp(p[i], "-m") || !strcmp(p[i], "-c")) {
		if (i + 1 >= n)
			sc_die(SC_EXIT_USAGE, "python: %s needs a %s", p[i],
			       p[i][1] == 'm' ? "module name" : "string of code");
		pc->mode = p[i][1] == 'm' ? "syscope:module" : "syscope:code";
		pc->target = p[i + 1];
		i += 2;
	} else {
		pc->mode = "syscope:file";
		pc->target = p[i++];
		check_script(pc->target);
	}
	pc->args = p + i;
	pc->nargs = n - i;
}

/* Whether option argv[i] takes the next argument as its value (for the scan below). */
static bool takes_next(const char *a, const struct sc_extra_opt *extras)
{
	int id;

	if (a[1] == '-') {
		if (strchr(a, '='))
			return false;
		for (const struct sc_extra_opt *x = extras; x->long_flag; x++)
			if (!strcmp(a + 2, x->long_flag))
				return x->takes_value;
		id = sc_setting_by_flag(a + 2, SC_VERB_PYTHON);
	} else {
		if (a[2])
			return false; /* -xVALUE, or a cluster of flags */
		id = sc_setting_by_short(a[1], SC_VERB_PYTHON);
	}
	return id >= 0 && id != SC_SET_VERBOSE && sc_setting_defs[id].type != SC_T_BOOL;
}

/*
 * syscope's options end where the Python part begins: at "--", at the first word that is
 * not an option, or at -m/-c (Python's, not syscope's -c CONFIG: write --config). A "--" is
 * put there, so that options of the module or code are never taken for syscope's, and
 * -MI/-ME become --module-include/--module-exclude.
 */
static char **split_argv(int argc, char **argv, const struct sc_extra_opt *extras, int *nargc)
{
	char **out = sc_xcalloc((size_t)argc + 2, sizeof(char *));
	int i, n = 0;

	out[n++] = argv[0];
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--") || a[0] != '-' || !a[1] || !strcmp(a, "-m") ||
		    !strcmp(a, "-c"))
			break;
		if (!strcmp(a, "-MI") || !strcmp(a, "-ME"))
			a = a[2] == 'I' ? "--module-include" : "--module-exclude";
		out[n++] = (char *)a;
		if (takes_next(a, extras) && i + 1 < argc)
			out[n++] = argv[++i];
	}
	if (i < argc && strcmp(argv[i], "--"))
		out[n++] = "--";
	for (; i < argc; i++)
		out[n++] = argv[i];
	*nargc = n;
	return out;
}

static void check_regex(const struct sc_settings *s, enum sc_setting_id id)
{
	const char *pattern = sc_str(s, id);
	char why[256];
	regex_t re;
	int rc;

	if (!pattern || !*pattern)
		return;
	rc = regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB);
	if (!rc) {
		regfree(&re);
		return;
	}
	regerror(rc, &re, why, sizeof(why));
	sc_die(SC_EXIT_USAGE, "python: --%s '%s' is not an extended regular expression (%s)",
	       sc_setting_defs[id].long_flag, pattern, why);
}

static void set_or_die(struct sc_cli *cli, enum sc_setting_id id, const char *value)
{
	char err[SC_ERRMSG_MAX];

	if (sc_settings_set(&cli->settings, id, value, SC_LAYER_CLI, err))
		sc_die(SC_EXIT_FAILURE, "%s", err);
}

/* The program syscope runs: PYTHON [options] -c BOOTSTRAP MODE TARGET args... */
static void build_command(struct sc_cli *cli, const struct python_cmd *pc)
{
	char **cmd = sc_xcalloc(pc->interp_opts.n + (size_t)pc->nargs + 7, sizeof(char *));
	size_t n = 0;

	cmd[n++] = (char *)pc->interpreter;
	for (size_t i = 0; i < pc->interp_opts.n; i++)
		cmd[n++] = pc->interp_opts.v[i];
	cmd[n++] = "-c";
	cmd[n++] = (char *)bootstrap;
	cmd[n++] = (char *)pc->mode;
	cmd[n++] = (char *)pc->target;
	for (int i = 0; i < pc->nargs; i++)
		cmd[n++] = pc->args[i];
	cmd[n] = NULL;
	free(cli->rest);
	cli->rest = cmd;
	cli->nrest = (int)n;
}

int cmd_python(int argc, char **argv)
{
	const char *interpreter = NULL;
	struct sc_extra_opt extras[] = {
		{ "interpreter", 0, true, "PYTHON",
		  "The Python interpreter to run (default: the first word after -- when it is "
		  "python*, else python3 from PATH)",
		  &interpreter },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	struct python_cmd pc = { .interpreter = "python3" };
	struct sc_cli cli;
	char **args;
	int nargs, rc;

	args = split_argv(argc, argv, extras, &nargs);
	if (!sc_profiling_cli(&cli, sc_verb_find("python"), nargs, args, NULL, extras)) {
		free(args);
		return 0;
	}
	if (!sc_bool(&cli.settings, SC_SET_PYTHON))
		sc_die(SC_EXIT_USAGE,
		       "python: --no-python leaves Python alone; syscope python "
		       "needs it (use syscope run or sample for native frames only)");
	parse_python_part(&pc, cli.rest, cli.nrest);
	if (interpreter)
		pc.interpreter = interpreter;
	check_regex(&cli.settings, SC_SET_PYTHON_FUNCTION_INCLUDE);
	check_regex(&cli.settings, SC_SET_PYTHON_FUNCTION_EXCLUDE);
	check_regex(&cli.settings, SC_SET_PYTHON_MODULE_INCLUDE);
	check_regex(&cli.settings, SC_SET_PYTHON_MODULE_EXCLUDE);
	set_or_die(&cli, SC_SET_PYTHON_TRACE, "true");
	/* Tracing alone unless sampling was asked for (-S, or the environment). */
	if (cli.settings.v[SC_SET_USE_SAMPLING].layer < SC_LAYER_ENV)
		set_or_die(&cli, SC_SET_USE_SAMPLING, "false");
	build_command(&cli, &pc);
	rc = sc_profile_program(&cli); /* frees `cli` (and the command line built above) */
	VEC_FREE(&pc.interp_opts);
	free(args);
	return rc;
}
