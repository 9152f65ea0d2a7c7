/* SPDX-License-Identifier: MIT */
/*
 * syscope attach -p PID [-p PID...]: profile processes that are already running, then leave
 * them running.
 *
 * The session folder and settings are made as for `sample`; the settings go into a file of
 * the session (the processes' environment cannot be changed). Every process is checked
 * before any is touched. One thread of each is borrowed through ptrace to dlopen
 * libsyscope.so and call its syscope_attach_start (attach_inject.c), all of them first, then
 * their starts are waited for, so that they record from nearly the same moment; each
 * runtime's own thread records from then on (src/runtime/attach.c) and says what it did in
 * <session>/attach-<pid>.state. The end: ENTER on a terminal, SIGINT/SIGTERM, -w + -d
 * seconds, or the end of every process (one that ends or executes meanwhile ends only its
 * own recording). Then <session>/attach.stop tells every runtime to detach, and the session
 * is converted as after `sample` (one raw file per process, as a program with children).
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

/* The most processes one attach takes (-p given again, or a list): a job's ranks on a node. */
#define MAX_TARGETS 256

/* One process of the attach, from its checks to its detach. */
struct target {
	pid_t pid, tid;
	struct sc_remote info;
	json_t *detail;			/* its element of session.json's `attach` */
	struct sc_attach_children kids; /* the children it had at the attach, and made since */
	char failed[SC_ATTACH_ERR];	/* why it records nothing; "" while it records */
	const char *ended_by;		/* its own end (process ended, exec), else NULL */
	double t_end;			/* when that end was seen (mono_s) */
};

struct attach {
	struct sc_cli *cli;
	struct target *t;
	unsigned n;
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

/* Add the process ids of one -p value ("123" or "123,124,125") to the attach; one given
 * twice is refused (it would be injected twice, and the second refused as busy). */
static void add_pids(struct attach *a, const char *text, const char *what)
{
	char *copy = sc_xstrdup(text), *save = NULL;

	if (!text[0] || text[0] == ',' || text[strlen(text) - 1] == ',' || strstr(text, ",,"))
		sc_die(SC_EXIT_USAGE,
		       "attach: %s '%s' is not a process id or a list of them (123 or 123,124)",
		       what, text);
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		pid_t pid = parse_id(w, what);

		for (unsigned i = 0; i < a->n; i++)
			if (a->t[i].pid == pid)
				sc_die(SC_EXIT_USAGE,
				       "attach: process %d is given twice (-p); give each process "
				       "once",
				       (int)pid);
		if (a->n == MAX_TARGETS)
			sc_die(SC_EXIT_USAGE,
			       "attach: more than %d processes given (-p): one attach takes at most "
			       "%d; attach the others with another command",
			       MAX_TARGETS, MAX_TARGETS);
		a->t[a->n].pid = pid;
		a->t[a->n++].tid = pid;
	}
	free(copy);
}

/* Every -p is needed before the options are parsed: the first target's executable is the
 * session's "program" (its name tags the folder). */
static void find_pid_options(struct attach *a, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if ((!strcmp(argv[i], "-p") || !strcmp(argv[i], "--pid")) && i + 1 < argc)
			add_pids(a, argv[++i], "-p");
		else if (!strncmp(argv[i], "--pid=", 6))
			add_pids(a, argv[i] + 6, "--pid");
		else if (!strncmp(argv[i], "-p", 2) && argv[i][2])
			add_pids(a, argv[i] + 2, "-p");
	}
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

/* Run as root on another user's process: the process writes its raw file in the session,
 * which one user can own; processes of other users then cannot write theirs. */
static void give_session_to(const struct attach *a, const char *session)
{
	pid_t pid = a->t[0].pid;
	uid_t uid, other;
	gid_t gid;
	char *raw = sc_xasprintf("%s/" SC_SESSION_RAW_DIR, session);

	if (geteuid() != 0 || !sc_attach_owner(pid, &uid, &gid)) {
		free(raw);
		return;
	}
	if (uid != 0 && (chown(session, uid, gid) || chown(raw, uid, gid)))
		pr_warn("cannot give %s to the process's user: %s", raw, strerror(errno));
	for (unsigned i = 1; i < a->n; i++)
		if (sc_attach_owner(a->t[i].pid, &other, &gid) && other != 0 && other != uid)
			pr_warn("process %d belongs to another user (uid %u) than process %d (uid "
				"%u, who owns the session folder): it may not write its raw file "
				"there; attach the processes of each user with a command of its own",
				(int)a->t[i].pid, (unsigned)other, (int)pid, (unsigned)uid);
	free(raw);
}

static char *state_path(const char *session, pid_t pid)
{
	return sc_xasprintf("%s/attach-%d.state", session, (int)pid);
}

/* The last line the runtime of `pid` wrote in its state file, waited for up to `ms`. */
static bool wait_state(pid_t pid, const char *session, const char *const *words, int ms, char *line,
		       size_t cap)
{
	char *path = state_path(session, pid);
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

static bool recording(const struct target *t)
{
	return !t->failed[0] && !t->ended_by;
}

static unsigned count_recorded(const struct attach *a)
{
	unsigned n = 0;

	for (unsigned i = 0; i < a->n; i++)
		n += !a->t[i].failed[0];
	return n;
}

/* An exec ends the recording (the runtime's wrapper ends the file; one it did not see is
 * ended here). */
static void end_by_exec(const char *session, pid_t pid)
{
	char *raw = sc_xasprintf("%s/" SC_SESSION_RAW_DIR "/%d" SC_RAW_SUFFIX, session, (int)pid);

	sc_attach_mark_exec(raw);
	free(raw);
	pr_warn("process %d executed another program: its recording ends there (end: exec); the "
		"new program is not followed (syscope attach follows forks, not execs: it runs "
		"with the environment it was given)",
		(int)pid);
}

/* A process that ended or executed while attached ends its own recording; the others go on
 * (`during`: said at once; at the session's end, its detach line says it). */
static void watch_own_end(struct attach *a, struct target *t, const char *session, bool during)
{
	sc_attach_children_watch(t->pid, &t->kids, false);
	if (target_ended(t->pid))
		t->ended_by = "process ended";
	else if (sc_attach_executed(t->pid))
		t->ended_by = "exec";
	else
		return;
	t->t_end = mono_s();
	json_object_set_new(t->detail, "to", iso_now());
	if (!strcmp(t->ended_by, "exec"))
		end_by_exec(session, t->pid);
	if (a->n > 1 && during)
		fprintf(stderr, "syscope: process %d ended its recording (%s); the others go on\n",
			(int)t->pid, t->ended_by);
}

static bool any_recording(const struct attach *a)
{
	for (unsigned i = 0; i < a->n; i++)
		if (recording(&a->t[i]))
			return true;
	return false;
}

/* Until ENTER, SIGINT/SIGTERM, the deadline (0: none), or the end of every process; the
 * session's end, NULL when every process ended its own. */
static const char *wait_for_end(struct attach *a, const char *session, double deadline)
{
	bool tty = isatty(STDIN_FILENO);

	for (;;) {
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };

		for (unsigned i = 0; i < a->n; i++)
			if (recording(&a->t[i]))
				watch_own_end(a, &a->t[i], session, true);
		if (stop_signal)
			return stop_signal == SIGINT ? "SIGINT" : "SIGTERM";
		if (!any_recording(a))
			return NULL;
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

/* The reason a process refused syscope_attach_start (its negative errno), into t->failed. */
static void say_start_refused(struct target *t, const char *session, long rc)
{
	if (rc == -EACCES)
		snprintf(t->failed, sizeof(t->failed),
			 "it may not read %s/attach.settings; the session folder must be reachable "
			 "by the process's user (choose -o in a folder that user can enter)",
			 session);
	else
		snprintf(t->failed, sizeof(t->failed), "%s",
			 rc == -EBUSY ? "it is being profiled by syscope already (started by "
					"syscope, or another attach is recording it)"
				      : strerror((int)-rc));
	pr_err("cannot attach to process %d: %s", (int)t->pid, t->failed);
}

/* Load the library in `t` and start its runtime (which then starts recording on its own
 * thread); false with t->failed saying why. */
static bool inject(struct target *t, const char *session, const char *lib, const char *settings)
{
	char err[SC_ATTACH_ERR] = "";
	struct sc_remote *info = &t->info;
	long rc = 0;

	t->detail = json_pack("{s:i, s:i, s:o}", "pid", t->pid, "tid", t->tid, "from", iso_now());
	if (sc_attach_call(t->pid, t->tid, lib, "syscope_attach_start", settings, &rc, info, err)) {
		snprintf(t->failed, sizeof(t->failed), "%s", err);
		pr_err("cannot attach to process %d: %s", (int)t->pid, err);
		return false;
	}
	json_object_set_new(t->detail, "held_ms", json_real(info->held_ms));
	json_object_set_new(t->detail, "stops_let_go", json_integer(info->retries));
	json_object_set_new(t->detail, "held_on_cpu_ms", json_real(info->cpu_ms));
	json_object_set_new(t->detail, "held_waiting_for_cpu_ms", json_real(info->wait_cpu_ms));
	json_object_set_new(t->detail, "stopped_in_syscall",
			    info->in_syscall ? json_integer(info->syscall_nr) : json_null());
	rc = (int)rc; /* the entry point returns an int: rax's upper half is not its */
	if (rc) {
		say_start_refused(t, session, rc);
		return false;
	}
	return true;
}

/* The runtime said "started" (it records), else t->failed says what it said. */
static bool await_start(struct target *t, const char *session)
{
	static const char *const started[] = { "started", "error", NULL };
	char line[1024];

	if (wait_state(t->pid, session, started, START_TIMEOUT_MS, line, sizeof(line)) &&
	    !strncmp(line, "started", 7))
		return true;
	snprintf(t->failed, sizeof(t->failed), "it did not start recording%s%.400s",
		 line[0] ? ": " : "", line);
	pr_err("process %d %s", (int)t->pid, t->failed + 3); /* "did not ...", of the process */
	return false;
}

static const struct target *first_recorded(const struct attach *a)
{
	for (unsigned i = 0; i < a->n; i++)
		if (!a->t[i].failed[0])
			return &a->t[i];
	return NULL;
}

/* Always said: the user's cue (and a script's) that recording started. One process keeps
 * the line scripts match. */
static void say_attached(const struct attach *a)
{
	const char *enter = isatty(STDIN_FILENO) ? "; press ENTER to detach" : "";
	const struct target *one = first_recorded(a);
	char pids[2048] = "", held[2048] = "";

	if (count_recorded(a) == 1) {
		fprintf(stderr, "syscope: attached to process %d (thread %d held %.1f ms)%s\n",
			(int)one->pid, (int)one->tid, one->info.held_ms, enter);
		return;
	}
	for (unsigned i = 0; i < a->n; i++) {
		const struct target *t = &a->t[i];

		if (t->failed[0])
			continue;
		snprintf(pids + strlen(pids), sizeof(pids) - strlen(pids), "%s%d",
			 pids[0] ? ", " : "", (int)t->pid);
		snprintf(held + strlen(held), sizeof(held) - strlen(held), "%s%.1f",
			 held[0] ? ", " : "", t->info.held_ms);
	}
	fprintf(stderr, "syscope: attached to processes %s (threads held %s ms)%s\n", pids, held,
		enter);
}

/* The runtime of every process detaches at the stop file (those that ended are gone). */
static void ask_detach(const char *session)
{
	char *stop = sc_xasprintf("%s/attach.stop", session);
	int fd = open(stop, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd >= 0)
		close(fd);
	free(stop);
}

/* After the stop file: `t`'s runtime said it detached (or its process ended), its fork
 * children finished, and its end in its detail. */
static void finish_target(struct target *t, const char *session, const char *why, double t0,
			  double t_stop)
{
	static const char *const ended[] = { "detached", "ended", "error", NULL };
	double since = t->ended_by ? t->t_end : t_stop;
	char line[1024];

	why = t->ended_by ? t->ended_by : why;
	if (strcmp(why, "exec") &&
	    !wait_state(t->pid, session, ended, DETACH_TIMEOUT_MS, line, sizeof(line)) &&
	    !sc_attach_target_ended(t->pid))
		pr_warn("process %d did not say it detached; its data so far is kept", (int)t->pid);
	sc_attach_finish_children(session, t->pid, &t->kids);
	if (!t->ended_by)
		json_object_set_new(t->detail, "to", iso_now());
	/* No thread of the program stops at the detach: this is how long recording went on. */
	json_object_set_new(t->detail, "detach_ms", json_real((mono_s() - since) * 1e3));
	json_object_set_new(t->detail, "duration_s", json_real(since - t0));
	json_object_set_new(t->detail, "ended_by", json_string(why));
	fprintf(stderr, "syscope: detached from process %d (%s)\n", (int)t->pid, why);
}

/* Several processes, some of which failed: which, and why (each was said as it failed). */
static void say_failures(const struct attach *a)
{
	unsigned failed = a->n - count_recorded(a);

	if (a->n == 1 || !failed || failed == a->n)
		return;
	fprintf(stderr, "syscope: recorded %u of %u processes; not recorded:\n", count_recorded(a),
		a->n);
	for (unsigned i = 0; i < a->n; i++)
		if (a->t[i].failed[0])
			fprintf(stderr, "syscope:   process %d: %s\n", (int)a->t[i].pid,
				a->t[i].failed);
}

/* session.json's `attach`: one process's object as it always was, an array for several (a
 * process that did not record has its `error`). */
static json_t *attach_detail(struct attach *a)
{
	json_t *all;

	if (a->n == 1)
		return a->t[0].detail;
	all = json_array();
	for (unsigned i = 0; i < a->n; i++) {
		if (a->t[i].failed[0])
			json_object_set_new(a->t[i].detail, "error", json_string(a->t[i].failed));
		json_array_append_new(all, a->t[i].detail);
	}
	return all;
}

/* Inject every process, then wait for each to start: the processes start recording nearly
 * together, and none waits for another's start. */
static void start_all(struct attach *a, const char *session, const char *lib)
{
	char *settings = write_settings(session, &a->cli->settings);

	give_session_to(a, session);
	for (unsigned i = 0; i < a->n; i++)
		inject(&a->t[i], session, lib, settings);
	free(settings);
	for (unsigned i = 0; i < a->n; i++)
		if (!a->t[i].failed[0] && await_start(&a->t[i], session))
			/* The children that exist already, before the cue: any the user starts
			 * after it is one started while attached. */
			sc_attach_children_watch(a->t[i].pid, &a->t[i].kids, true);
}

static json_t *run_attach(const char *session, const char *lib, void *ctx, int *exit_code)
{
	struct attach *a = ctx;
	const struct sc_settings *s = &a->cli->settings;
	double t0, t_stop, deadline = 0;
	const char *why;

	*exit_code = SC_EXIT_FAILURE;
	write_owner(session);
	install_stop_handlers();
	start_all(a, session, lib);
	if (!count_recorded(a))
		return attach_detail(a);
	say_attached(a);
	t0 = mono_s();
	if (sc_is_set(s, SC_SET_SAMPLING_DURATION))
		deadline = t0 + sc_double(s, SC_SET_SAMPLING_DELAY) +
			   sc_double(s, SC_SET_SAMPLING_DURATION);
	why = wait_for_end(a, session, deadline);
	t_stop = mono_s();
	/* An exec or end just before the stop (between two polls) is the process's own end. */
	for (unsigned i = 0; i < a->n; i++)
		if (recording(&a->t[i]))
			watch_own_end(a, &a->t[i], session, false);
	ask_detach(session);
	for (unsigned i = 0; i < a->n; i++)
		if (!a->t[i].failed[0])
			finish_target(&a->t[i], session, why ? why : "process ended", t0, t_stop);
	say_failures(a);
	*exit_code = 0;
	return attach_detail(a);
}

static void remove_made(const char *path)
{
	if (unlink(path) && errno == EISDIR)
		rmdir(path);
}

/* An attach that recorded nothing leaves no folder behind: only what it made is removed. */
static void remove_session(const char *session, const struct attach *a)
{
	static const char *const made[] = { "attach.settings", "attach.owner", "attach.stop",
					    SC_SESSION_INFO, SC_SESSION_RAW_DIR };

	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		char *path = sc_xasprintf("%s/%s", session, made[i]);

		remove_made(path);
		free(path);
	}
	for (unsigned i = 0; i < a->n; i++) {
		char *path = state_path(session, a->t[i].pid);

		remove_made(path);
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

/* Each process, before any is touched: with several, a bad one is refused as the command
 * line's mistake, and none of the others has been injected. */
static void check_target(const struct target *t, bool several)
{
	int status = several ? SC_EXIT_USAGE : SC_EXIT_FAILURE;
	const char *none = several ? " (nothing was attached: drop it from the -p list)" : "";
	char err[SC_ATTACH_ERR];

	if (!sc_attach_permitted(t->pid, err))
		sc_die(status, "cannot attach to process %d: %s%s", (int)t->pid, err, none);
	if (profiled_by_syscope(t->pid))
		sc_die(status,
		       "cannot attach to process %d: it was started by syscope (sample, run) and "
		       "is being profiled already%s",
		       (int)t->pid, none);
}

/* --tid names a thread of one process. */
static void apply_tid(struct attach *a, const char *tid_text)
{
	char path[64];
	pid_t pid = a->t[0].pid, tid;

	if (!tid_text)
		return;
	if (a->n > 1)
		sc_die(SC_EXIT_USAGE,
		       "attach: --tid is for one process (a thread of it), and %u are given with "
		       "-p; attach that process on its own with --tid, or drop --tid (each "
		       "process's main thread is borrowed)",
		       a->n);
	tid = parse_id(tid_text, "--tid");
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	if (access(path, F_OK))
		sc_die(SC_EXIT_USAGE,
		       "--tid %d is not a thread of process %d (its threads are in "
		       "/proc/%d/task)",
		       (int)tid, (int)pid, (int)pid);
	a->t[0].tid = tid;
}

/* One session for all the processes: a placeholder that differs between them cannot name
 * it (%size% is the job's, the same for its ranks). */
static void check_output_path(const struct attach *a)
{
	const char *out = sc_str(&a->cli->settings, SC_SET_OUTPUT_PATH);

	if (a->n > 1 && strstr(out, "%rank%"))
		sc_die(SC_EXIT_USAGE,
		       "-o %s: one session for all %u processes: %%rank%% cannot name it; drop "
		       "%%rank%%, or attach each rank on its own",
		       out, a->n);
}

/* The settings an attached process can record with: CPU-time sampling of user time. */
static void adjust_settings(struct sc_cli *cli, const char *formats)
{
	char serr[SC_ERRMSG_MAX];

	if (sc_settings_set(&cli->settings, SC_SET_USE_SAMPLING, "true", SC_LAYER_CLI, serr))
		sc_die(SC_EXIT_FAILURE, "%s", serr);
	if (sc_bool(&cli->settings, SC_SET_SAMPLING_REALTIME))
		pr_warn("wall-clock sampling is not available in an attached process (its timer "
			"would interrupt the program's blocking calls); sampling CPU time");
	sc_settings_set(&cli->settings, SC_SET_SAMPLING_REALTIME, "false", SC_LAYER_CLI, serr);
	sc_settings_set(&cli->settings, SC_SET_SAMPLING_CPUTIME, "true", SC_LAYER_CLI, serr);
	if (sc_str(&cli->settings, SC_SET_CPU_EVENTS)[0])
		sc_cpu_events_prepare(&cli->settings); /* names resolved and tried, as for sample */
	/* A hardware counter's overflow can be signalled after its thread entered the kernel
	 * (skid): the signal would then interrupt a blocking call, which no wrapper restarts. */
	if (sc_str(&cli->settings, SC_SET_SAMPLING_OVERFLOW)[0]) {
		pr_warn("--sample-overflow is not available with attach: a counter's overflow may "
			"be signalled inside a system call, which would return EINTR in a program "
			"syscope did not start; sampling CPU time only");
		sc_settings_set(&cli->settings, SC_SET_SAMPLING_OVERFLOW, "", SC_LAYER_CLI, serr);
	}
	if (formats)
		apply_formats(cli, formats);
}

/* The first process's executable: the session's "program", which names its folder. */
static void program_of(pid_t pid, char exe[PATH_MAX])
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = pid > 0 ? readlink(link, exe, PATH_MAX - 1) : -1;
	if (n > 0)
		exe[n] = '\0';
	else
		snprintf(exe, PATH_MAX, "process-%d", (int)pid);
}

int cmd_attach(int argc, char **argv)
{
	const struct sc_verb *verb = sc_verb_find("attach");
	const char *pid_text = NULL, *tid_text = NULL, *formats = NULL;
	struct sc_extra_opt extras[] = {
		{ "pid", 'p', true, "PID",
		  "A running process to attach to (required); may be given more than once, or as "
		  "a comma-separated list (-p 123,124): one session, one raw file per process, "
		  "all detached together",
		  &pid_text },
		{ "tid", 0, true, "TID",
		  "The thread of it borrowed for the moment of loading syscope (default: its main "
		  "thread); the others never stop. Only with one -p",
		  &tid_text },
		{ "formats", 'F', true, "LIST",
		  "Output formats, comma-separated, as rocprof-sys-attach spells them "
		  "(perfetto,rocpd)",
		  &formats },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	static struct target targets[MAX_TARGETS];
	struct attach a = { .t = targets };
	char exe[PATH_MAX] = "";
	char **args = calloc((size_t)argc + 3, sizeof(*args));
	struct sc_launch_result res = { 0 };
	struct sc_cli cli;
	int rc;

	if (!args)
		sc_die(SC_EXIT_FAILURE, "out of memory");
	find_pid_options(&a, argc, argv);
	program_of(a.n ? a.t[0].pid : 0, exe);
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
	if (!a.n)
		sc_die(SC_EXIT_USAGE, "attach: -p PID is required (usage: %s)", verb->usage);
	a.cli = &cli;
	adjust_settings(&cli, formats);
	check_output_path(&a);
	for (unsigned i = 0; i < a.n; i++)
		check_target(&a.t[i], a.n > 1);
	apply_tid(&a, tid_text);
	sc_output_path_job_of(a.t[0].pid); /* -o's %rank% and %size%: the process's job */
	sc_launch_attached(&cli, run_attach, &a, &res);
	free(args);
	if (res.nothing_recorded) {
		remove_session(res.session_dir, &a);
		free(res.session_dir);
		sc_cli_free(&cli);
		return res.exit_code ? res.exit_code : SC_EXIT_FAILURE;
	}
	rc = sc_convert_after_run(res.session_dir, &cli.settings);
	free(res.session_dir);
	sc_cli_free(&cli);
	return res.exit_code ? res.exit_code : rc;
}
