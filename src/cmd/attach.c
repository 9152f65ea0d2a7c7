/* SPDX-License-Identifier: MIT */
/*
 * syscope attach -p PID: profile a process that is already running, then leave it running.
 *
 * The session folder and settings are made as for `sample`; the settings go into a file of
 * the session (the process's environment cannot be changed). One thread of the process is
 * borrowed through ptrace to dlopen libsyscope.so and call its syscope_attach_start
 * (attach_inject.c); the runtime's own thread records from then on (src/runtime/attach.c).
 * The end: ENTER on a terminal, SIGINT/SIGTERM, -w + -d seconds, or the process's end. Then
 * <session>/attach.stop tells the runtime to detach, and the session is converted as after
 * `sample`.
 */
#define PR_FMT "attach: "
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/strutil.h"
#include "../store/session.h"
#include "attach.h"
#include "cmd.h"
#include "cpu_events.h"
#include "output_path.h"

#define POLL_MS 50
#define START_TIMEOUT_MS 30000 /* CUPTI's start in a busy CUDA process takes seconds */
#define DETACH_TIMEOUT_MS 10000

struct attach {
	struct sc_cli *cli;
	pid_t pid, tid;
};

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static json_t *iso_now(void)
{
	struct timespec ts;
	struct tm tm;
	char buf[64];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%06ldZ", ts.tv_nsec / 1000);
	return json_string(buf);
}

static pid_t parse_id(const char *text, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		sc_die(SC_EXIT_USAGE, "attach: %s '%s' is not a process id (a positive number)",
		       what, text);
	return (pid_t)v;
}

/* -p PID is needed before the options are parsed: the target's executable is the session's
 * "program" (its name tags the folder). */
static pid_t find_pid_option(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if ((!strcmp(argv[i], "-p") || !strcmp(argv[i], "--pid")) && i + 1 < argc)
			return parse_id(argv[i + 1], "-p");
		if (!strncmp(argv[i], "--pid=", 6))
			return parse_id(argv[i] + 6, "--pid");
		if (!strncmp(argv[i], "-p", 2) && argv[i][2])
			return parse_id(argv[i] + 2, "-p");
	}
	return 0;
}

/* rocprof-sys-attach spells the Perfetto trace "perfetto". */
static void apply_formats(struct sc_cli *cli, const char *list)
{
	char *copy = sc_xstrdup(list), *save = NULL, out[256] = "", err[SC_ERRMSG_MAX];

	for (char *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save))
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", out[0] ? " " : "",
			 !strcmp(w, "perfetto") ? "pftrace" : w);
	if (sc_settings_set(&cli->settings, SC_SET_OUTPUT_FORMAT, out, SC_LAYER_CLI, err))
		sc_die(SC_EXIT_USAGE, "-F %s: %s", list, err);
	free(copy);
}

/* The runtime settings, as the launcher would put them in a program's environment. */
static char *write_settings(const char *session, const struct sc_settings *s)
{
	char *path = sc_xasprintf("%s/attach.settings", session);
	FILE *f = fopen(path, "we");

	if (!f)
		sc_die(SC_EXIT_FAILURE, "cannot write %s: %s", path, strerror(errno));
	for (int id = 0; id < SC_SETTING_COUNT; id++) {
		const struct sc_setting_def *d = &sc_setting_defs[id];

		if (!(d->flags & SC_SF_RUNTIME) || s->v[id].layer == SC_LAYER_DEFAULT ||
		    id == SC_SET_SESSION_DIR || strchr(s->v[id].text, '\n'))
			continue;
		fprintf(f, SC_SETTING_ENV_PREFIX "%s=%s\n", d->name, s->v[id].text);
	}
	fprintf(f, SC_SETTING_ENV_PREFIX "SESSION_DIR=%s\n", session);
	if (fclose(f))
		sc_die(SC_EXIT_FAILURE, "cannot write %s: %s", path, strerror(errno));
	chmod(path, 0644);
	return path;
}

/* Our pid, for the runtime to detach by itself if we are killed before we ask it to. */
static void write_owner(const char *session)
{
	char *path = sc_xasprintf("%s/attach.owner", session);
	FILE *f = fopen(path, "we");

	if (f) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	free(path);
}

/* Run as root on another user's process: the process writes its raw file in the session. */
static void give_session_to(pid_t pid, const char *session)
{
	uid_t uid;
	gid_t gid;
	char *raw = sc_xasprintf("%s/" SC_SESSION_RAW_DIR, session);

	if (geteuid() == 0 && sc_attach_owner(pid, &uid, &gid) && uid != 0 &&
	    (chown(session, uid, gid) || chown(raw, uid, gid)))
		pr_warn("cannot give %s to the process's user: %s", raw, strerror(errno));
	free(raw);
}

/* The last line the runtime wrote in <session>/attach.state, waited for up to `ms`. */
static bool wait_state(pid_t pid, const char *session, const char *const *words, int ms, char *line,
		       size_t cap)
{
	char *path = sc_xasprintf("%s/attach.state", session);
	bool found = false;

	line[0] = '\0';
	for (int waited = 0; !found && waited <= ms; waited += 10) {
		FILE *f = fopen(path, "re");
		char buf[1024];

		while (f && fgets(buf, sizeof(buf), f)) {
			buf[strcspn(buf, "\n")] = '\0';
			snprintf(line, cap, "%s", buf);
		}
		if (f)
			fclose(f);
		for (const char *const *w = words; *w && !found; w++)
			found = !strncmp(line, *w, strlen(*w));
		if (!found && sc_attach_target_ended(pid))
			break;
		if (!found)
			usleep(10000);
	}
	free(path);
	return found;
}

/* Ended for good: during an exec from a thread other than the main one, the main thread is
 * a zombie for a moment, and the process looks ended. */
static bool target_ended(pid_t pid)
{
	for (int i = 0; i < 10; i++) {
		if (!sc_attach_target_ended(pid))
			return false;
		usleep(10000);
	}
	return true;
}

/* Until ENTER, SIGINT/SIGTERM, the deadline (0: none), the process's end or exec; why. */
static const char *wait_for_end(pid_t pid, double deadline, struct sc_attach_children *kids)
{
	bool tty = isatty(STDIN_FILENO);

	for (;;) {
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };

		sc_attach_children_watch(pid, kids, false);
		if (stop_signal)
			return stop_signal == SIGINT ? "SIGINT" : "SIGTERM";
		if (target_ended(pid))
			return "process ended";
		if (sc_attach_executed(pid))
			return "exec";
		if (deadline > 0 && mono_s() >= deadline)
			return "duration";
		if (tty && poll(&p, 1, POLL_MS) > 0) {
			char buf[256];

			if (read(STDIN_FILENO, buf, sizeof(buf)) >= 0)
				return "ENTER";
		} else if (!tty) {
			usleep(POLL_MS * 1000);
		}
	}
}

static void install_stop_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static json_t *run_attach(const char *session, const char *lib, void *ctx, int *exit_code)
{
	struct attach *a = ctx;
	const struct sc_settings *s = &a->cli->settings;
	char err[SC_ATTACH_ERR] = "", line[1024];
	static const char *const started[] = { "started", "error", NULL };
	static const char *const ended[] = { "detached", "ended", "error", NULL };
	static struct sc_attach_children kids;
	struct sc_remote info;
	char *settings = write_settings(session, s), *stop;
	double t0, t_stop, deadline = 0;
	const char *why;
	json_t *detail;
	long rc = 0;
	int fd;

	*exit_code = SC_EXIT_FAILURE;
	write_owner(session);
	give_session_to(a->pid, session);
	install_stop_handlers();
	detail = json_pack("{s:i, s:i, s:o}", "pid", a->pid, "tid", a->tid, "from", iso_now());
	if (sc_attach_call(a->pid, a->tid, lib, "syscope_attach_start", settings, &rc, &info,
			   err)) {
		pr_err("cannot attach to process %d: %s", a->pid, err);
		free(settings);
		return detail;
	}
	json_object_set_new(detail, "held_ms", json_real(info.held_ms));
	json_object_set_new(detail, "stops_let_go", json_integer(info.retries));
	json_object_set_new(detail, "held_on_cpu_ms", json_real(info.cpu_ms));
	json_object_set_new(detail, "held_waiting_for_cpu_ms", json_real(info.wait_cpu_ms));
	json_object_set_new(detail, "stopped_in_syscall",
			    info.in_syscall ? json_integer(info.syscall_nr) : json_null());
	free(settings);
	rc = (int)rc; /* the entry point returns an int: rax's upper half is not its */
	if (rc) {
		if (rc == -EACCES)
			pr_err("cannot attach to process %d: it may not read %s/attach.settings; "
			       "the session folder must be reachable by the process's user (choose "
			       "-o in a folder that user can enter)",
			       a->pid, session);
		else
			pr_err("cannot attach to process %d: %s", a->pid,
			       rc == -EBUSY ? "it is being profiled by syscope already (started "
					      "by syscope, or another attach is recording it)"
					    : strerror((int)-rc));
		return detail;
	}
	if (!wait_state(a->pid, session, started, START_TIMEOUT_MS, line, sizeof(line)) ||
	    strncmp(line, "started", 7)) {
		pr_err("process %d did not start recording%s%s", a->pid, line[0] ? ": " : "", line);
		return detail;
	}
	/* The children that exist already, before the cue: any the user starts after it is one
	 * started while attached. */
	sc_attach_children_watch(a->pid, &kids, true);
	/* Always said: the user's cue (and a script's) that recording started. */
	fprintf(stderr, "syscope: attached to process %d (thread %d held %.1f ms)%s\n", a->pid,
		a->tid, info.held_ms, isatty(STDIN_FILENO) ? "; press ENTER to detach" : "");
	t0 = mono_s();
	if (sc_is_set(s, SC_SET_SAMPLING_DURATION))
		deadline = t0 + sc_double(s, SC_SET_SAMPLING_DELAY) +
			   sc_double(s, SC_SET_SAMPLING_DURATION);
	why = wait_for_end(a->pid, deadline, &kids);
	t_stop = mono_s();
	if (!strcmp(why, "exec")) {
		char *raw = sc_xasprintf("%s/" SC_SESSION_RAW_DIR "/%d" SC_RAW_SUFFIX, session,
					 (int)a->pid);

		sc_attach_mark_exec(raw);
		free(raw);
		pr_warn("process %d executed another program: its recording ends there (end: "
			"exec); the new program is not followed (syscope cannot add itself to the "
			"environment of a process it did not start)",
			a->pid);
	}
	stop = sc_xasprintf("%s/attach.stop", session);
	fd = open(stop, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	free(stop);
	if (strcmp(why, "exec") &&
	    !wait_state(a->pid, session, ended, DETACH_TIMEOUT_MS, line, sizeof(line)) &&
	    !sc_attach_target_ended(a->pid))
		pr_warn("process %d did not say it detached; its data so far is kept", a->pid);
	sc_attach_finish_children(session, a->pid, &kids);
	/* No thread of the program stops at the detach: this is how long recording went on. */
	json_object_set_new(detail, "detach_ms", json_real((mono_s() - t_stop) * 1e3));
	json_object_set_new(detail, "to", iso_now());
	json_object_set_new(detail, "duration_s", json_real(mono_s() - t0));
	json_object_set_new(detail, "ended_by", json_string(why));
	fprintf(stderr, "syscope: detached from process %d (%s)\n", a->pid, why);
	*exit_code = 0;
	return detail;
}

/* An attach that recorded nothing leaves no folder behind: only what it made is removed. */
static void remove_session(const char *session)
{
	static const char *const made[] = {
		"attach.settings", "attach.owner",  "attach.state",
		"attach.stop",	   SC_SESSION_INFO, SC_SESSION_RAW_DIR
	};

	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		char *path = sc_xasprintf("%s/%s", session, made[i]);

		if (unlink(path) && errno == EISDIR)
			rmdir(path);
		free(path);
	}
	/* rmdir fails, and the folder stays, when anything else is in it; the timestamped
	 * folder's parent (--time-output) goes too when it is left empty. */
	if (!rmdir(session)) {
		char *parent = sc_xstrdup(session), *slash = strrchr(parent, '/');

		if (slash && slash != parent) {
			*slash = '\0';
			rmdir(parent);
		}
		free(parent);
	}
}

/* A process started by syscope sample/run carries the session in its environment. */
static bool profiled_by_syscope(pid_t pid)
{
	char path[64], buf[65536];
	int fd;
	ssize_t n;

	if (!sc_attach_maps_has(pid, "/libsyscope.so"))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
		buf[n] = '\0';
		if (!strncmp(buf + i, SC_SETTING_ENV_PREFIX "SESSION_DIR=", 20) && buf[i + 20])
			return true;
	}
	return false;
}

int cmd_attach(int argc, char **argv)
{
	const struct sc_verb *verb = sc_verb_find("attach");
	const char *pid_text = NULL, *tid_text = NULL, *formats = NULL;
	struct sc_extra_opt extras[] = {
		{ "pid", 'p', true, "PID", "The running process to attach to (required)",
		  &pid_text },
		{ "tid", 0, true, "TID",
		  "The thread of it borrowed for the moment of loading syscope (default: its main "
		  "thread); the others never stop",
		  &tid_text },
		{ "formats", 'F', true, "LIST",
		  "Output formats, comma-separated, as rocprof-sys-attach spells them "
		  "(perfetto,rocpd)",
		  &formats },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	pid_t pid = find_pid_option(argc, argv);
	char exe[PATH_MAX] = "", link[64], err[SC_ATTACH_ERR], serr[SC_ERRMSG_MAX];
	char **args = calloc((size_t)argc + 3, sizeof(*args));
	struct attach a = { 0 };
	struct sc_launch_result res = { 0 };
	struct sc_cli cli;
	ssize_t n;
	int rc;

	if (!args)
		sc_die(SC_EXIT_FAILURE, "out of memory");
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = pid > 0 ? readlink(link, exe, sizeof(exe) - 1) : -1;
	if (n > 0)
		exe[n] = '\0';
	else
		snprintf(exe, sizeof(exe), "process-%d", (int)pid);
	memcpy(args, argv, (size_t)argc * sizeof(*args));
	args[argc] = "--";
	args[argc + 1] = exe;
	if (!sc_profiling_cli(&cli, verb, argc + 2, args, NULL, extras)) {
		free(args);
		return 0;
	}
	if (cli.nrest != 1)
		sc_die(SC_EXIT_USAGE, "attach takes no program, only -p PID (usage: %s)",
		       verb->usage);
	if (!pid)
		sc_die(SC_EXIT_USAGE, "attach: -p PID is required (usage: %s)", verb->usage);
	if (sc_settings_set(&cli.settings, SC_SET_USE_SAMPLING, "true", SC_LAYER_CLI, serr))
		sc_die(SC_EXIT_FAILURE, "%s", serr);
	if (sc_bool(&cli.settings, SC_SET_SAMPLING_REALTIME))
		pr_warn("wall-clock sampling is not available in an attached process (its timer "
			"would interrupt the program's blocking calls); sampling CPU time");
	sc_settings_set(&cli.settings, SC_SET_SAMPLING_REALTIME, "false", SC_LAYER_CLI, serr);
	sc_settings_set(&cli.settings, SC_SET_SAMPLING_CPUTIME, "true", SC_LAYER_CLI, serr);
	if (sc_str(&cli.settings, SC_SET_CPU_EVENTS)[0])
		sc_cpu_events_prepare(&cli.settings); /* names resolved and tried, as for sample */
	/* A hardware counter's overflow can be signalled after its thread entered the kernel
	 * (skid): the signal would then interrupt a blocking call, which no wrapper restarts. */
	if (sc_str(&cli.settings, SC_SET_SAMPLING_OVERFLOW)[0]) {
		pr_warn("--sample-overflow is not available with attach: a counter's overflow may "
			"be signalled inside a system call, which would return EINTR in a program "
			"syscope did not start; sampling CPU time only");
		sc_settings_set(&cli.settings, SC_SET_SAMPLING_OVERFLOW, "", SC_LAYER_CLI, serr);
	}
	if (formats)
		apply_formats(&cli, formats);
	a.cli = &cli;
	a.pid = pid;
	a.tid = tid_text ? parse_id(tid_text, "--tid") : pid;
	if (!sc_attach_permitted(pid, err))
		sc_die(SC_EXIT_FAILURE, "cannot attach to process %d: %s", (int)pid, err);
	if (profiled_by_syscope(pid))
		sc_die(SC_EXIT_FAILURE,
		       "cannot attach to process %d: it was started by syscope (sample, run) and "
		       "is being profiled already",
		       (int)pid);
	snprintf(link, sizeof(link), "/proc/%d/task/%d", (int)pid, (int)a.tid);
	if (access(link, F_OK))
		sc_die(SC_EXIT_USAGE,
		       "--tid %d is not a thread of process %d (its threads are in "
		       "/proc/%d/task)",
		       (int)a.tid, (int)pid, (int)pid);
	sc_output_path_job_of(pid); /* -o's %rank% and %size%: the process's job */
	sc_launch_attached(&cli, run_attach, &a, &res);
	free(args);
	if (res.nothing_recorded) {
		remove_session(res.session_dir);
		free(res.session_dir);
		sc_cli_free(&cli);
		return res.exit_code ? res.exit_code : SC_EXIT_FAILURE;
	}
	rc = sc_convert_after_run(res.session_dir, &cli.settings);
	free(res.session_dir);
	sc_cli_free(&cli);
	return res.exit_code ? res.exit_code : rc;
}
