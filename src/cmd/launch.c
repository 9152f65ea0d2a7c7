/* SPDX-License-Identifier: MIT */
/*
 * The launcher shared by the profiling verbs: check the program and the output folder
 * before anything runs, start the program with libsyscope.so preloaded and the settings in
 * its environment, forward the signals a user sends to it (not those sent to its process
 * group, which reach the program by themselves), and wait for the whole process tree
 * (syscope is the child subreaper, so orphaned descendants are reparented to it and waited
 * for too). The program's stdin, stdout, stderr, arguments and exit status are its own.
 */
#define PR_FMT "launch: "
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <elf.h>

#include "../common/hostinfo.h"
#include "../common/install.h"
#include "../common/log.h"
#include "../common/safe_output.h"
#include "../common/strutil.h"
#include "../common/vec.h"
#include "../store/session.h"
#include "../model/model.h"
#include "cmd.h"
#include "components.h"
#include "output_path.h"
#include "cpu_events.h"

extern char **environ;

struct launch {
	struct sc_cli *cli;
	const struct sc_settings *s;
	char *prog;	   /* resolved path of the program */
	char *lib;	   /* absolute path of libsyscope.so */
	char *session;	   /* absolute session folder */
	bool preload;	   /* false for programs the loader cannot preload into */
	bool unprofilable; /* the loader will not preload into it (static, 32-bit, set-ID) */
	struct timespec start, end;
	pid_t child;
	int status;
	json_t *info;
};

static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t main_done;
static volatile sig_atomic_t stop_waiting;
static volatile sig_atomic_t alarm_fired;
static bool forwarding[_NSIG];	   /* signals whose handler we installed */
static bool ignored_before[_NSIG]; /* ...of which whoever started us had ignored these */

static bool is_exec_file(const char *path, int *err)
{
	struct stat st;

	if (stat(path, &st)) {
		*err = errno;
		return false;
	}
	if (S_ISDIR(st.st_mode)) {
		*err = EISDIR;
		return false;
	}
	if (access(path, X_OK)) {
		*err = errno;
		return false;
	}
	return true;
}

/* Find the program as a shell would: a name with a slash as is, else the first match on
 * PATH. Exits 127 (not found) or 126 (found, cannot run), naming it. */
char *sc_find_program(const char *name)
{
	const char *path = getenv("PATH");
	int err = ENOENT, first_err = 0;

	if (!name || !*name)
		sc_die(SC_EXIT_USAGE,
		       "no program to run (usage: syscope sample [options] -- program "
		       "[args...])");
	if (strchr(name, '/')) {
		if (is_exec_file(name, &err))
			return sc_xstrdup(name);
		sc_die(err == ENOENT || err == ENOTDIR ? SC_EXIT_NOTFOUND : SC_EXIT_NOEXEC,
		       "%s: %s", name, strerror(err));
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");
		char *cand = sc_xasprintf("%.*s%s%s", (int)len, len ? path : ".", "/", name);

		if (is_exec_file(cand, &err))
			return cand;
		if (err != ENOENT && err != ENOTDIR && !first_err)
			first_err = err;
		free(cand);
		path += len + (path[len] == ':');
	}
	if (first_err)
		sc_die(SC_EXIT_NOEXEC, "%s: %s", name, strerror(first_err));
	sc_die(SC_EXIT_NOTFOUND, "%s: command not found", name);
}

/* Whether the dynamic segment `ph` of the program open on `fd` names a DT_NEEDED library:
 * one that needs none is left alone by the runtime (lifecycle.c says why). Read from the
 * segment, as the loader does (elf_dynamic.c reads the section, which a file may lack). */
static bool needs_libraries(int fd, const Elf64_Phdr *ph)
{
	for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= ph->p_filesz; off += sizeof(Elf64_Dyn)) {
		Elf64_Dyn d;

		if (pread(fd, &d, sizeof(d), (off_t)(ph->p_offset + off)) != sizeof(d) ||
		    d.d_tag == DT_NULL)
			return false;
		if (d.d_tag == DT_NEEDED)
			return true;
	}
	return false;
}

/* Warn about programs the loader will not preload syscope into, or that syscope leaves
 * alone; they still run. */
static void check_binary(struct launch *l)
{
	unsigned char ident[EI_NIDENT];
	Elf64_Ehdr eh;
	struct stat st;
	int fd = open(l->prog, O_RDONLY | O_CLOEXEC);
	bool has_interp = false, needs = false;

	l->preload = true;
	if (fd < 0)
		return;
	if (read(fd, ident, sizeof(ident)) != sizeof(ident) || memcmp(ident, ELFMAG, SELFMAG)) {
		close(fd); /* a script: its interpreter is what gets profiled */
		return;
	}
	if (ident[EI_CLASS] != ELFCLASS64) {
		pr_warn("%s is a 32-bit program; syscope profiles 64-bit programs only, so it "
			"runs unprofiled (64-bit programs it starts are still profiled)",
			l->prog);
		l->preload = false;
		l->unprofilable = true;
		close(fd);
		return;
	}
	if (pread(fd, &eh, sizeof(eh), 0) == sizeof(eh)) {
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;

			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * eh.e_phentsize)) !=
			    sizeof(ph))
				break;
			if (ph.p_type == PT_INTERP)
				has_interp = true;
			if (ph.p_type == PT_DYNAMIC)
				needs = needs_libraries(fd, &ph);
		}
		if (has_interp && !needs) {
			pr_warn("%s needs no shared library (a Go program built without cgo): it makes "
				"its own system calls and installs its own signal handlers, where "
				"syscope's samplers would end it, so it runs unprofiled and nothing of "
				"it is recorded (programs it starts are profiled)",
				l->prog);
			l->unprofilable = true;
		}
		if (!has_interp) {
			pr_warn("%s is statically linked: the loader cannot preload syscope into it, so "
				"it runs unprofiled and nothing of it is recorded (dynamically linked "
				"programs it starts are profiled)",
				l->prog);
			l->unprofilable = true;
		}
	}
	if (!fstat(fd, &st) && (st.st_mode & (S_ISUID | S_ISGID)) && geteuid()) {
		pr_warn("%s is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD for it, so "
			"it runs unprofiled",
			l->prog);
		l->unprofilable = true;
	}
	close(fd);
}

static char *find_library(void)
{
	char *lib = sc_install_path("lib/syscope/libsyscope.so"), *real;

	if (!lib)
		sc_die(SC_EXIT_FAILURE, "cannot find where syscope is installed: %s",
		       strerror(errno));
	if (access(lib, R_OK))
		sc_die(SC_EXIT_FAILURE,
		       "cannot find the runtime library %s (%s); reinstall syscope", lib,
		       strerror(errno));
	real = realpath(lib, NULL);
	free(lib);
	return real;
}

static int mkdir_p(const char *path)
{
	char *copy = sc_xstrdup(path);

	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0755) && errno != EEXIST) {
			free(copy);
			return -errno;
		}
		*p = '/';
	}
	free(copy);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Create the session folder and its raw/ folder; refuse to reuse one that holds data. */
static void make_session(struct launch *l)
{
	const struct sc_settings *s = l->s;
	const char *base = strrchr(l->cli->rest[0], '/');
	char stamp[128], *dir, *raw;
	int rc;

	sc_output_path_stamp(s, stamp, sizeof(stamp));
	dir = sc_output_path_expand(sc_str(s, SC_SET_OUTPUT_PATH),
				    base ? base + 1 : l->cli->rest[0], stamp);
	if (sc_bool(s, SC_SET_TIME_OUTPUT)) {
		char *parent = dir;

		dir = sc_xasprintf("%s/%s", parent, stamp);
		rc = mkdir_p(parent);
		if (rc)
			sc_die(SC_EXIT_FAILURE, "cannot create output folder %s: %s", parent,
			       strerror(-rc));
		/* Two runs in the same second get distinct folders. */
		for (int n = 2; mkdir(dir, 0755) && errno == EEXIST; n++) {
			free(dir);
			dir = sc_xasprintf("%s/%s-%d", parent, stamp, n);
		}
		free(parent);
	}
	rc = mkdir_p(dir);
	if (rc)
		sc_die(SC_EXIT_FAILURE, "cannot create output folder %s: %s", dir, strerror(-rc));
	raw = sc_xasprintf("%s/" SC_SESSION_RAW_DIR, dir);
	/* A converted session keeps session.json and its outputs, not raw/. */
	if (sc_session_is_dir(dir) || mkdir(raw, 0755)) {
		int err = errno;

		if (sc_session_is_dir(dir)) {
			int ranks = sc_output_path_job_size();

			if (ranks > 1)
				sc_die(SC_EXIT_FAILURE,
				       "output folder %s already holds a session: another rank of "
				       "this job of %d made it; put %%rank%% in -o so that each rank "
				       "has its own (e.g. -o 'out-%%rank%%'), or keep --time-output on",
				       dir, ranks);
			sc_die(SC_EXIT_FAILURE,
			       "output folder %s already holds a session; choose another with -o, or "
			       "keep --time-output on",
			       dir);
		}
		sc_die(SC_EXIT_FAILURE, "cannot create %s: %s", raw, strerror(err));
	}
	if (access(raw, W_OK))
		sc_die(SC_EXIT_FAILURE, "output folder %s is not writable: %s", dir,
		       strerror(errno));
	free(raw);
	l->session = realpath(dir, NULL);
	free(dir);
	if (!l->session)
		sc_die(SC_EXIT_FAILURE, "output folder: %s", strerror(errno));
}

static json_t *iso(const struct timespec *ts)
{
	struct tm tm;
	char buf[64];

	gmtime_r(&ts->tv_sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%06ldZ", ts->tv_nsec / 1000);
	return json_string(buf);
}

static json_t *settings_json(const struct sc_settings *s)
{
	json_t *arr = json_array();
	char cats[128];

	for (int id = 0; id < SC_SETTING_COUNT; id++) {
		const struct sc_setting_def *d = &sc_setting_defs[id];

		if (d->flags & SC_SF_HIDDEN)
			continue;
		json_array_append_new(
			arr, json_pack("{s:s, s:s+, s:s, s:s, s:s, s:s, s:s, s:s}", "name", d->name,
				       "env", SC_SETTING_ENV_PREFIX, d->name, "value",
				       s->v[id].text, "default", d->defval, "source",
				       sc_setting_layer_name(s->v[id].layer), "type",
				       sc_setting_type_name(d->type), "categories",
				       sc_setting_categories(d->categories, cats, sizeof(cats)),
				       "description", d->help));
	}
	return arr;
}

/* syscope's own command line, as the kernel has it. */
static json_t *own_command(void)
{
	json_t *cmd = json_array();
	char buf[65536];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
		buf[n] = '\0';
		json_array_append_new(cmd, json_string(buf + i));
	}
	return cmd;
}

static void session_info_start(struct launch *l)
{
	struct sc_hostinfo h;
	json_t *cmd = own_command(), *prog = json_array();
	char cwd[PATH_MAX] = "";

	for (int i = 0; i < l->cli->nrest; i++)
		json_array_append_new(prog, json_string(l->cli->rest[i]));
	sc_hostinfo_get(&h);
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = '\0';
	l->info = json_pack("{s:s, s:s, s:o, s:o, s:s, s:s, s:o, s:{s:s, s:s, s:s, s:s, s:I, s:I, "
			    "s:i}, s:o}",
			    "syscope_version", SYSCOPE_VERSION, "verb", l->cli->verb->name,
			    "syscope_command", cmd, "program", prog, "executable", l->prog, "cwd",
			    cwd, "settings", settings_json(l->s), "host", "hostname", h.hostname,
			    "kernel", h.kernel, "machine", h.machine, "cpu_model", h.cpu_model,
			    "cpus", (json_int_t)h.cpus_online, "memory_bytes",
			    (json_int_t)h.memory_bytes, "perf_event_paranoid",
			    h.perf_event_paranoid, "start_time", iso(&l->start));
}

static void session_info_write(struct launch *l)
{
	char *path = sc_xasprintf("%s/" SC_SESSION_INFO, l->session), err[512];
	char *text = json_dumps(l->info, JSON_INDENT(1));

	if (!text || sc_out_write_file(path, text, strlen(text), 0644, 0, err, sizeof(err)))
		pr_warn("%s", text ? err : "cannot write the session information: out of memory");
	free(path);
	free(text);
}

/* In the child: the settings the runtime reads, and libsyscope.so in LD_PRELOAD. */
static void child_environment(struct launch *l)
{
	const char *old;

	for (int id = 0; id < SC_SETTING_COUNT; id++) {
		const struct sc_setting_def *d = &sc_setting_defs[id];
		char name[160];

		if (!(d->flags & SC_SF_RUNTIME) || l->s->v[id].layer == SC_LAYER_DEFAULT)
			continue;
		snprintf(name, sizeof(name), SC_SETTING_ENV_PREFIX "%s", d->name);
		setenv(name, l->s->v[id].text, 1);
	}
	setenv(SC_SETTING_ENV_PREFIX "SESSION_DIR", l->session, 1);
	if (l->preload) {
		struct sc_launch_env e = { .libdir = sc_dir_of(l->lib), .program = l->prog };

		sc_components_environment(l->s, &e);
		free((char *)e.libdir);
	}
	old = getenv("LD_PRELOAD"); /* with what the components added */
	if (l->preload) {
		char *v = old && *old ? sc_xasprintf("%s:%s", l->lib, old) : sc_xstrdup(l->lib);

		setenv("LD_PRELOAD", v, 1);
	}
}

/*
 * A signal sent to our whole process group (kill -TERM -PGID, `timeout`'s kill(0), a service
 * manager stopping everything) reaches the program as well as us: forwarded too, the program
 * would get it twice (a Python program's cleanup after KeyboardInterrupt cut short by a second
 * one; `make -j`, interrupted again in its handler, dying before it reported each job). A
 * terminal's (SI_KERNEL) is one such; others carry no sign of where they were sent. So a watcher process of ours sits in the group, made after us, with these signals
 * blocked: the kernel signals a group's members newest first, so when one reaches us,
 * the watcher has it pending already if it was sent to the group. Then it is not forwarded,
 * and the watcher is asked (a byte on a pipe) to take what it has pending and answer.
 * Everything here runs in our signal handler: open, read, write, poll, kill, nanosleep,
 * sigtimedwait.
 */
static volatile sig_atomic_t watcher_pid;
static int watcher_cmd = -1, watcher_ack = -1; /* our ends of its two pipes */
static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

static void forwarded_set(sigset_t *set)
{
	sigemptyset(set);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(set, forwarded[i]);
}

/* The watcher: takes what is pending of `set` each time it reads a byte, and answers. */
static _Noreturn void watcher_main(pid_t parent, int cmd, int ack)
{
	const struct timespec zero = { 0, 0 };
	sigset_t set;
	char c;
	int null = open("/dev/null", O_RDWR);

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	prctl(PR_SET_NAME, "syscope-signals", 0, 0, 0);
	for (int fd = 0; fd < 3; fd++) /* the program's terminal and pipes are not ours */
		dup2(null, fd);
	cmd = fcntl(cmd, F_DUPFD, 10); /* out of the way of 3 and 4 */
	ack = fcntl(ack, F_DUPFD, 10);
	if (cmd < 0 || ack < 0 || dup2(cmd, 3) < 0 || dup2(ack, 4) < 0)
		_exit(0);
	close_range(5, ~0u, 0);
	forwarded_set(&set);
	while (read(3, &c, 1) == 1) {
		while (sigtimedwait(&set, NULL, &zero) > 0)
			;
		if (write(4, &c, 1) != 1)
			break;
	}
	_exit(0);
}

/* Start the watcher (see above); without one, every signal sent to us is forwarded. */
static void start_watcher(void)
{
	int cmd[2], ack[2];
	sigset_t set, old;
	pid_t pid, parent = getpid();

	if (pipe2(cmd, O_CLOEXEC))
		return;
	if (pipe2(ack, O_CLOEXEC | O_NONBLOCK)) {
		close(cmd[0]);
		close(cmd[1]);
		return;
	}
	forwarded_set(&set);
	sigprocmask(SIG_BLOCK, &set, &old); /* the watcher is born with them blocked */
	pid = fork();
	if (pid == 0)
		watcher_main(parent, cmd[0], ack[1]);
	close(cmd[0]);
	close(ack[1]);
	if (pid < 0) {
		close(cmd[1]);
		close(ack[0]);
	} else {
		watcher_cmd = cmd[1];
		watcher_ack = ack[0];
		watcher_pid = pid;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static void stop_watcher(void)
{
	pid_t pid = watcher_pid;

	watcher_pid = 0;
	if (pid > 0)
		kill(pid, SIGKILL); /* wait_tree reaps it */
}

/* Whether `sig` is pending in the watcher's shared set ("ShdPnd:" of its status, in hex). */
static bool watcher_has(pid_t pid, int sig)
{
	char path[64], buf[4096];
	const char *p;
	ssize_t n;
	int fd;
	unsigned long long mask = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strstr(buf, "\nShdPnd:");
	if (!p)
		return false;
	for (p += strlen("\nShdPnd:"); *p == ' ' || *p == '\t'; p++)
		;
	for (; *p; p++) {
		int d = *p >= '0' && *p <= '9'	 ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
						 : -1;

		if (d < 0)
			break;
		mask = mask << 4 | (unsigned)d;
	}
	return sig <= 64 && (mask >> (sig - 1) & 1);
}

/* Ask the watcher to take what it has pending; wait a little for its answer (a watcher
 * stopped with the job by Ctrl-Z answers once it runs again: stale answers are drained). */
static void watcher_clear(void)
{
	struct pollfd pfd = { .fd = watcher_ack, .events = POLLIN };
	char c = 'c';

	while (read(watcher_ack, &c, 1) == 1)
		;
	if (write(watcher_cmd, &c, 1) == 1 && poll(&pfd, 1, 200) == 1)
		while (read(watcher_ack, &c, 1) == 1)
			;
}

/* Our own copy of a group signal comes just after the watcher's (the kernel signals newest
 * first): taken here, where it is blocked, it is not seen as another one. When it came before
 * the one being handled, the kernel merged them: then none comes. */
static void take_own_copy(int sig)
{
	const struct timespec ms20 = { 0, 20000000 };
	sigset_t one;

	sigemptyset(&one);
	sigaddset(&one, sig);
	sigtimedwait(&one, NULL, &ms20);
}

/* True when `sig` was sent to our process group, which the program is in: it has its own. */
static bool sent_to_group(int sig, const siginfo_t *si)
{
	const struct timespec ms = { 0, 1000000 };
	pid_t watcher = watcher_pid;
	bool group, in_group_sender;

	if (watcher <= 0)
		return si->si_code == SI_KERNEL;
	group = si->si_code == SI_KERNEL || watcher_has(watcher, sig);
	/* A sender in our group may send to us, then to the group (`timeout` does, one call
	 * after the other: the program, alone, would have the two as one). Its group signal is
	 * waited for a moment; a lone one is forwarded when none comes. */
	in_group_sender =
		si->si_code == SI_USER && si->si_pid > 0 && getpgid(si->si_pid) == getpgrp();
	for (int i = 0; !group && in_group_sender && i < 200; i++) {
		nanosleep(&ms, NULL);
		group = watcher_has(watcher, sig);
	}
	if (group) {
		watcher_clear();
		take_own_copy(sig);
	}
	/* A terminal's goes to its foreground group only: a program that left ours does not
	 * get it, without syscope either. */
	return si->si_code == SI_KERNEL || (group && getpgid(child_pid) == getpgrp());
}

static void on_forwarded_signal(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;

	(void)uc;
	if (main_done) {
		if (sig == SIGINT || sig == SIGTERM)
			stop_waiting = 1;
		return;
	}
	if (child_pid > 0 && !sent_to_group(sig, si))
		kill(child_pid, sig);
	errno = saved_errno;
}

static void on_alarm(int sig)
{
	(void)sig;
	alarm_fired = 1;
}

static void install_handlers(void)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_forwarded_signal;
	sa.sa_flags = SA_SIGINFO;
	forwarded_set(&sa.sa_mask); /* one at a time: each asks the watcher in turn */
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
		/* Forwarded even when ignored by whoever started us (a shell's background job
		 * ignores SIGINT): the program is given the same ignored disposition
		 * (restore_ignored) and decides, by installing a handler or not. */
		ignored_before[forwarded[i]] =
			!sigaction(forwarded[i], NULL, &old) && old.sa_handler == SIG_IGN;
		forwarding[forwarded[i]] = !sigaction(forwarded[i], &sa, NULL);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
}

/* In the child, and after the run: signals ignored when we started are ignored again, the
 * others back at their default. */
static void restore_dispositions(void)
{
	for (int sig = 1; sig < _NSIG; sig++)
		if (forwarding[sig])
			signal(sig, ignored_before[sig] ? SIG_IGN : SIG_DFL);
}

static void list_children(char *buf, size_t n)
{
	char path[64];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
	f = fopen(path, "r");
	if (f) {
		if (!fgets(buf, (int)n, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
}

/* Wait for the program and every descendant reparented to us. */
static void wait_tree(struct launch *l)
{
	for (;;) {
		int status;
		pid_t w = waitpid(-1, &status, 0);

		if (w == l->child) {
			l->status = status;
			main_done = 1;
			stop_watcher();
			clock_gettime(CLOCK_REALTIME, &l->end);
			alarm(2);
			continue;
		}
		if (w > 0) {
			if (w == watcher_pid) /* gone early: every signal is forwarded again */
				watcher_pid = 0;
			continue;
		}
		if (errno == ECHILD)
			break;
		if (errno != EINTR)
			break;
		if (stop_waiting) {
			pr_warn("stopped waiting for the program's remaining processes; their data "
				"so far is included");
			break;
		}
		if (alarm_fired && main_done) {
			char kids[512];

			alarm_fired = 0;
			list_children(kids, sizeof(kids));
			fprintf(stderr,
				"syscope: %s exited; waiting for processes it left running (%s) to end; "
				"Ctrl-C stops waiting and writes the profile now\n",
				l->cli->rest[0], kids[0] ? kids : "pids unknown");
		}
	}
	alarm(0);
}

/* Whether the program or anything it started left a raw file. */
static bool raw_files_in(const char *session)
{
	char *raw = sc_xasprintf("%s/" SC_SESSION_RAW_DIR, session);
	DIR *d = opendir(raw);
	struct dirent *de;
	bool any = false;

	while (d && !any && (de = readdir(d)))
		any = sc_ends_with(de->d_name, ".sraw");
	if (d)
		closedir(d);
	free(raw);
	return any;
}

static int exit_code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return SC_EXIT_FAILURE;
}

static void session_info_end(struct launch *l)
{
	double dur = (double)(l->end.tv_sec - l->start.tv_sec) +
		     (double)(l->end.tv_nsec - l->start.tv_nsec) * 1e-9;

	json_object_set_new(l->info, "end_time", iso(&l->end));
	json_object_set_new(l->info, "duration_s", json_real(dur));
	json_object_set_new(l->info, "pid", json_integer(l->child));
	json_object_set_new(
		l->info, "exit",
		json_pack("{s:i, s:o, s:o}", "code", exit_code_of(l->status), "status",
			  WIFEXITED(l->status) ? json_integer(WEXITSTATUS(l->status)) : json_null(),
			  "signal",
			  WIFSIGNALED(l->status) ? json_integer(WTERMSIG(l->status))
						 : json_null()));
}

/*
 * A file the kernel does not know how to run (a script without "#!") is run by the shell,
 * as execvp and shells do: /bin/sh FILE ARGS... In the child; returns errno if that fails.
 */
static int exec_with_shell(const char *prog, char *const *argv)
{
	size_t n = 0;
	char **sh_argv;

	while (argv[n])
		n++;
	sh_argv = calloc(n + 2, sizeof(*sh_argv));
	if (!sh_argv)
		return ENOEXEC;
	sh_argv[0] = (char *)"/bin/sh";
	sh_argv[1] = (char *)prog;
	for (size_t i = 1; i < n; i++)
		sh_argv[i + 1] = argv[i];
	execve("/bin/sh", sh_argv, environ);
	free(sh_argv);
	return ENOEXEC;
}

/* Start the program; an exec failure in the child comes back through a close-on-exec pipe. */
static void start_program(struct launch *l)
{
	int pipefd[2], err = 0;
	ssize_t n;

	if (pipe2(pipefd, O_CLOEXEC))
		sc_die(SC_EXIT_FAILURE, "pipe: %s", strerror(errno));
	fflush(NULL);
	l->child = fork();
	if (l->child < 0)
		sc_die(SC_EXIT_FAILURE, "cannot start %s: fork: %s", l->prog, strerror(errno));
	if (l->child == 0) {
		close(pipefd[0]);
		restore_dispositions();
		child_environment(l);
		execve(l->prog, l->cli->rest, environ);
		err = errno;
		if (err == ENOEXEC)
			err = exec_with_shell(l->prog, l->cli->rest);
		if (write(pipefd[1], &err, sizeof(err)) < 0)
			_exit(SC_EXIT_NOEXEC);
		_exit(err == ENOENT ? SC_EXIT_NOTFOUND : SC_EXIT_NOEXEC);
	}
	child_pid = l->child;
	close(pipefd[1]);
	do
		n = read(pipefd[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == sizeof(err)) {
		waitpid(l->child, NULL, 0);
		sc_die(err == ENOENT ? SC_EXIT_NOTFOUND : SC_EXIT_NOEXEC, "%s: %s", l->prog,
		       strerror(err));
	}
}

/* The function filters apply when the outputs are written: a bad regex is found now, before
 * the program runs, not after. */
static void check_function_filters(const struct sc_settings *s)
{
	struct sc_func_view probe;
	char err[512];

	if (sc_func_view_init(&probe, sc_str(s, SC_SET_FUNCTION_INCLUDE),
			      sc_str(s, SC_SET_FUNCTION_EXCLUDE), err, sizeof(err)))
		sc_die(SC_EXIT_USAGE, "%s", err);
	sc_func_view_free(&probe);
}

int sc_launch(struct sc_cli *cli, struct sc_launch_result *res)
{
	struct launch l = { .cli = cli, .s = &cli->settings };

	l.prog = sc_find_program(cli->rest[0]);
	check_binary(&l);
	check_function_filters(&cli->settings);
	sc_components_check(&cli->settings);
	l.lib = find_library();
	make_session(&l);
	clock_gettime(CLOCK_REALTIME, &l.start);
	session_info_start(&l);
	session_info_write(&l);
	pr_info("session folder %s", l.session);

	/* Orphans of the program are reparented to us, so we can wait for all of them. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1))
		pr_dbg("PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
	install_handlers();
	start_watcher(); /* before the program can be sent anything */
	start_program(&l);
	wait_tree(&l);
	if (!main_done)
		clock_gettime(CLOCK_REALTIME, &l.end);
	/* From here on, Ctrl-C interrupts the conversion (outputs are written to temporary
	 * names and renamed, so none is left half-written; `syscope convert` can redo it). */
	restore_dispositions();
	session_info_end(&l);
	session_info_write(&l);
	json_decref(l.info);

	res->session_dir = l.session;
	res->nothing_recorded = l.unprofilable && !raw_files_in(l.session);
	res->exit_code = exit_code_of(l.status);
	free(l.prog);
	free(l.lib);
	return 0;
}

/* `pid` (the first process's) and `pids` (with several) beside the `attach` detail. */
static void set_attach_info(json_t *info, json_t *detail)
{
	json_t *first = json_is_array(detail) ? json_array_get(detail, 0) : detail;

	json_object_set(info, "pid", json_object_get(first, "pid"));
	if (json_is_array(detail)) {
		json_t *pids = json_array();
		size_t i;
		json_t *d;

		json_array_foreach (detail, i, d)
			json_array_append(pids, json_object_get(d, "pid"));
		json_object_set_new(info, "pids", pids);
	}
	json_object_set_new(info, "attach", detail);
}

/* syscope attach: the session folder, its information and settings as for a launched
 * program, then `run` (which attaches, records and detaches) instead of a child. */
int sc_launch_attached(struct sc_cli *cli, sc_attach_fn run, void *ctx,
		       struct sc_launch_result *res)
{
	struct launch l = { .cli = cli, .s = &cli->settings };
	json_t *detail;

	l.prog = sc_xstrdup(cli->rest[0]);
	check_function_filters(&cli->settings);
	l.lib = find_library();
	make_session(&l);
	clock_gettime(CLOCK_REALTIME, &l.start);
	session_info_start(&l);
	session_info_write(&l);
	pr_info("session folder %s", l.session);
	detail = run(l.session, l.lib, ctx, &res->exit_code);
	clock_gettime(CLOCK_REALTIME, &l.end);
	json_object_set_new(l.info, "end_time", iso(&l.end));
	json_object_set_new(l.info, "duration_s",
			    json_real((double)(l.end.tv_sec - l.start.tv_sec) +
				      (double)(l.end.tv_nsec - l.start.tv_nsec) * 1e-9));
	if (detail)
		set_attach_info(l.info, detail);
	session_info_write(&l);
	json_decref(l.info);
	res->session_dir = l.session;
	res->nothing_recorded = !raw_files_in(l.session);
	free(l.prog);
	free(l.lib);
	return 0;
}
