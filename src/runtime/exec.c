/* SPDX-License-Identifier: MIT */
/*
 * Following programs across exec: every exec and posix_spawn entry point that takes an
 * environment gets one with libsyscope.so in LD_PRELOAD and the SYSCOPE_* settings this
 * process started with, whatever environment the program passes (or, with
 * FOLLOW_CHILDREN off, one with them removed). The old image records an EXEC event first.
 *
 * The variables data sources set in the program (SYSCOPE_CARRIED_ENV names them: the CUDA
 * driver's injection path...) are carried the same way, so a program that execs with an
 * environment of its own keeps its child traced.
 *
 * Only an exec that can happen ends the image (may_exec): the tries of a PATH search that
 * find no program there end nothing.
 *
 * These wrappers may run in a vfork() child, which shares the parent's memory: they allocate
 * nothing (the new environment lives on the stack) and record only when getpid() says we
 * are the process the runtime was started in.
 *
 * In a process syscope attach started recording in, the same wrappers are put in front of
 * the program's calls by GOT rewriting (attach_wrap.c): an exec then ends the image's file as
 * here, and the new program gets the environment the program gave it, untouched.
 *
 * Programs named in FOLLOW_EXCLUDE (--follow-exclude: compilers and linkers a GPU job starts
 * by the hundred) get the environment of FOLLOW_CHILDREN off. A process that execs one
 * itself notes it at once (it is gone afterwards); spawns and vfork children count into
 * the parent's table (a vfork child shares its memory), noted once when the parent ends.
 */
#include "rt.h"
#include "func_table.h"
#include "sources/source.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_CARRIED 128
#define PRELOAD_MAX 8192

extern char **environ;

/* "NAME=value", captured at start: SYSCOPE_* first, then those SYSCOPE_CARRIED_ENV names. */
static char *carried[MAX_CARRIED];
static int ncarried, nsettings;

/* The variables named in the colon-separated `names`, as this process started with them. */
static void carry_named(const char *names)
{
	while (names && *names && ncarried < MAX_CARRIED) {
		size_t len = strcspn(names, ":");

		for (char **e = environ; e && *e; e++)
			if (len && !strncmp(*e, names, len) && (*e)[len] == '=' &&
			    ncarried < MAX_CARRIED) {
				carried[ncarried++] = strdup(*e);
				break;
			}
		names += len;
		names += *names == ':';
	}
}

void rt_exec_env_init(void)
{
	ncarried = 0;
	for (char **e = environ; e && *e && ncarried < MAX_CARRIED; e++)
		if (!strncmp(*e, SC_SETTING_ENV_PREFIX, strlen(SC_SETTING_ENV_PREFIX)))
			carried[ncarried++] = strdup(*e);
	nsettings = ncarried;
	carry_named(getenv(SC_SETTING_ENV_PREFIX "CARRIED_ENV"));
}

/* A variable a data source set, with the value it set: removed when not following. */
static bool ours(const char *var)
{
	for (int i = nsettings; i < ncarried; i++)
		if (carried[i] && !strcmp(carried[i], var))
			return true;
	return false;
}

/* An attached process (attach.c) does not follow what it executes: syscope did not start
 * it, and a detach could not reach the new program. */
static bool follow(void)
{
	return rt_proc.self_path[0] && !rt_proc.attached &&
	       sc_bool(&rt_proc.settings, SC_SET_FOLLOW_CHILDREN);
}

/* ---- --follow-exclude ---- */

#define MAX_EXCLUDED 32

static atomic_uint excluded_count[MAX_EXCLUDED];

/* The index in FOLLOW_EXCLUDE of the program `path` runs (by its last component), or -1. */
static int excluded_index(const char *path)
{
	const char *list = sc_str(&rt_proc.settings, SC_SET_FOLLOW_EXCLUDE);
	const char *base = path ? strrchr(path, '/') : NULL;
	size_t blen;

	base = base ? base + 1 : path;
	if (!base || !*base || !list)
		return -1;
	blen = strlen(base);
	for (int i = 0; *list && i < MAX_EXCLUDED; i++) {
		size_t len = strcspn(list, ", ");

		if (len == blen && !strncmp(list, base, len))
			return i;
		list += len;
		list += strspn(list, ", ");
	}
	return -1;
}

/* The name at `index` of FOLLOW_EXCLUDE, into buf. */
static const char *excluded_name(int index, char *buf, size_t n)
{
	const char *list = sc_str(&rt_proc.settings, SC_SET_FOLLOW_EXCLUDE);

	for (int i = 0; *list; i++) {
		size_t len = strcspn(list, ", ");

		if (i == index) {
			snprintf(buf, n, "%.*s", (int)len, list);
			return buf;
		}
		list += len;
		list += strspn(list, ", ");
	}
	return "?";
}

/* Whether the child that runs `path` is profiled; counts or notes one that is not, unless
 * the exec cannot happen (`runs` false: a PATH search's try). */
static bool follow_program(const char *path, bool spawned, bool runs)
{
	int i;

	if (!follow())
		return false;
	i = excluded_index(path);
	if (i < 0)
		return true;
	if (!runs)
		return false;
	if (!spawned && rt_active() && getpid() == rt_proc.pid) {
		char name[64];

		rt_note(SC_NOTE_INFO, "a child running %s was not profiled (--follow-exclude)",
			excluded_name(i, name, sizeof(name)));
	} else {
		atomic_fetch_add(&excluded_count[i], 1);
	}
	return false;
}

void rt_exec_report(void)
{
	char text[400], name[64];
	size_t len = 0;
	unsigned total = 0;

	for (int i = 0; i < MAX_EXCLUDED; i++) {
		unsigned n = atomic_exchange(&excluded_count[i], 0);

		if (!n)
			continue;
		total += n;
		if (len < sizeof(text))
			len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s x%u",
						len ? ", " : "",
						excluded_name(i, name, sizeof(name)), n);
	}
	if (total)
		rt_note(SC_NOTE_INFO, "%u %s not profiled (--follow-exclude): %s", total,
			total == 1 ? "child was" : "children were", text);
}

static bool same_name(const char *a, const char *b)
{
	while (*a && *a != '=' && *a == *b) {
		a++;
		b++;
	}
	return *a == '=' && *b == '=';
}

static bool env_has_n(char *const *env, size_t n, const char *var)
{
	for (size_t i = 0; i < n; i++)
		if (same_name(env[i], var))
			return true;
	return false;
}

/* Copy LD_PRELOAD's list into out, with our library first (or removed), into buf. */
static const char *merge_preload(const char *value, char *buf, size_t n, bool add)
{
	size_t len = (size_t)snprintf(buf, n, "LD_PRELOAD=%s", add ? rt_proc.self_path : "");
	const char *p = value;

	while (p && *p) {
		size_t tl = strcspn(p, ": ");

		if (tl &&
		    !(tl == strlen(rt_proc.self_path) && !strncmp(p, rt_proc.self_path, tl)) &&
		    len + tl + 2 < n) {
			if (len > strlen("LD_PRELOAD="))
				buf[len++] = ':';
			memcpy(buf + len, p, tl);
			len += tl;
			buf[len] = '\0';
		}
		p += tl;
		while (*p == ':' || *p == ' ')
			p++;
	}
	return buf;
}

static size_t env_count(char *const *env)
{
	size_t n = 0;

	while (env && env[n])
		n++;
	return n;
}

/* Fill `out` (room for env_count(env) + ncarried + 2) with the child's environment; in an
 * attached process, the program's own, untouched. */
static char **child_env(char *const *env, char **out, char *preload_buf, bool add)
{
	size_t n = 0;
	const char *preload = NULL;

	if (rt_proc.attached)
		return (char **)env;

	for (; env && *env; env++) {
		if (!strncmp(*env, "LD_PRELOAD=", 11)) {
			preload = *env + 11;
			continue;
		}
		if (!add && (!strncmp(*env, SC_SETTING_ENV_PREFIX, strlen(SC_SETTING_ENV_PREFIX)) ||
			     ours(*env)))
			continue;
		out[n++] = *env;
	}
	if (add)
		for (int i = 0; i < ncarried; i++)
			if (carried[i] && !env_has_n(out, n, carried[i]))
				out[n++] = carried[i]; /* the program's own value wins */
	merge_preload(preload, preload_buf, PRELOAD_MAX, add);
	if (preload_buf[strlen("LD_PRELOAD=")])
		out[n++] = preload_buf;
	out[n] = NULL;
	return out;
}

static bool in_own_process(void)
{
	return rt_active() && getpid() == rt_proc.pid;
}

/*
 * Whether an exec of `path` can get as far as replacing the program: a regular file this
 * process may execute. A shell searching PATH (dash, busybox) calls execve on every folder's
 * candidate, which fails (ENOENT, EACCES) before anything of the program is replaced; such a
 * try must end nothing (no EXEC record, no end of the file, no end of the calls in progress).
 * A try that passes this and fails all the same (ENOEXEC, E2BIG...) is undone afterwards.
 * Stack-only: vfork-safe.
 */
static bool may_exec(const char *path)
{
	struct stat st;

	return path && *path && !stat(path, &st) && S_ISREG(st.st_mode) &&
	       !faccessat(AT_FDCWD, path, X_OK, AT_EACCESS);
}

/* The same for execvp's search: `file` itself when it names a folder, else the first of
 * PATH's folders (the C library's default when PATH is unset) that holds it. */
static bool may_exec_search(const char *file)
{
	const char *dirs = getenv("PATH");
	char path[PATH_MAX];

	if (!file || !*file)
		return false;
	if (strchr(file, '/'))
		return may_exec(file);
	if (!dirs)
		dirs = "/bin:/usr/bin";
	for (;;) {
		size_t len = strcspn(dirs, ":");

		/* An empty entry is the current folder. */
		if (len + strlen(file) + 2 <= sizeof(path) &&
		    snprintf(path, sizeof(path), "%.*s%s%s", (int)len, len ? dirs : ".", "/",
			     file) > 0 &&
		    may_exec(path))
			return true;
		if (!dirs[len])
			return false;
		dirs += len + 1;
	}
}

/* This thread's exec paused the samples (before_exec): given back if it fails. */
static RT_TLS bool exec_paused;

static void before_exec(const char *path)
{
	struct sc_rec_exec rec = { .ts = rt_now_ns() };

	if (!in_own_process())
		return;
	rt_attach_before_exec(); /* syscope attach's thread held between two rounds */
	rec.path_len = (uint32_t)strlen(path) + 1;
	rt_record(SC_REC_EXEC, 0, &rec.ts, sizeof(rec) - sizeof(rec.hdr), path, rec.path_len);
	rt_func_end_image();	  /* they go on in the new image's file no more */
	rt_sources_before_exec(); /* their threads' records in the file before the end */
	/* No thread records a sample after the EXEC, and those in progress finish before the
	 * last flush (a sample after it was lost, counted as a failed write). */
	atomic_fetch_add(&rt_proc.paused, 1);
	exec_paused = true;
	rt_sampling_quiesce();
	rt_set_end(SC_END_EXEC, 0);
	rt_sampling_before_exec();
}

static void exec_failed(void)
{
	int saved_errno = errno;

	if (exec_paused) {
		exec_paused = false;
		atomic_fetch_sub(&rt_proc.paused, 1);
	}
	if (in_own_process()) {
		rt_set_end(SC_END_RUNNING, 0);
		rt_sampling_exec_failed();
		rt_sources_exec_failed();
		rt_attach_exec_failed();
	}
	errno = saved_errno;
}

static void record_spawn(int rc, const pid_t *pid)
{
	struct sc_rec_fork rec = { .ts = rt_now_ns() };

	if (rc || !pid || !in_own_process())
		return;
	rec.child_pid = *pid;
	rt_record(SC_REC_FORK, 0, &rec.ts, sizeof(rec) - sizeof(rec.hdr), NULL, 0);
}

#define WITH_CHILD_ENV(env, newenv, path, spawned, runs)               \
	char *newenv##_arr[env_count(env) + (size_t)ncarried + 2];     \
	char newenv##_preload[PRELOAD_MAX];                            \
	char **newenv = child_env(env, newenv##_arr, newenv##_preload, \
				  follow_program(path, spawned, runs))

/*
 * execve and execvpe as the other entry points reach them: by this file's own functions, not
 * their exported symbols, which a call from here would bind to the C library's when
 * libsyscope.so was loaded by syscope attach's dlopen (not first in the global scope).
 */
static int exec_path(const char *path, char *const argv[], char *const envp[])
{
	bool may = may_exec(path);
	WITH_CHILD_ENV(envp, env, path, false, may);

	if (may)
		before_exec(path);
	RT_REAL(execve)(path, argv, env);
	if (may)
		exec_failed();
	return -1;
}

static int exec_search(const char *file, char *const argv[], char *const envp[])
{
	bool may = may_exec_search(file);
	WITH_CHILD_ENV(envp, env, file, false, may);

	if (may)
		before_exec(file);
	RT_REAL(execvpe)(file, argv, env);
	if (may)
		exec_failed();
	return -1;
}

RT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_path(path, argv, envp);
}

RT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_search(file, argv, envp);
}

RT_EXPORT int execv(const char *path, char *const argv[])
{
	return exec_path(path, argv, environ);
}

RT_EXPORT int execvp(const char *file, char *const argv[])
{
	return exec_search(file, argv, environ);
}

RT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	WITH_CHILD_ENV(envp, env, NULL, false, true);
	before_exec("(fexecve)");
	RT_REAL(fexecve)(fd, argv, env);
	exec_failed();
	return -1;
}

/* Collect execl-style arguments into an argv on the caller's stack. */
#define COLLECT_ARGS(arg0, argv, last_out)      \
	size_t argc_ = 1;                       \
	va_list ap_;                            \
	va_start(ap_, arg0);                    \
	while (va_arg(ap_, const char *))       \
		argc_++;                        \
	va_end(ap_);                            \
	char *argv[argc_ + 1];                  \
	argv[0] = (char *)arg0;                 \
	va_start(ap_, arg0);                    \
	for (size_t i_ = 1; i_ <= argc_; i_++)  \
		argv[i_] = va_arg(ap_, char *); \
	last_out = va_arg(ap_, char *const *);  \
	va_end(ap_)

RT_EXPORT int execl(const char *path, const char *arg, ...)
{
	char *const *unused;

	COLLECT_ARGS(arg, argv, unused);
	(void)unused;
	return exec_path(path, argv, environ);
}

RT_EXPORT int execlp(const char *file, const char *arg, ...)
{
	char *const *unused;

	COLLECT_ARGS(arg, argv, unused);
	(void)unused;
	return exec_search(file, argv, environ);
}

RT_EXPORT int execle(const char *path, const char *arg, ...)
{
	char *const *envp;

	COLLECT_ARGS(arg, argv, envp);
	return exec_path(path, argv, envp);
}

RT_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	WITH_CHILD_ENV(envp, env, path, true, true);
	int rc = RT_REAL(posix_spawn)(pid, path, fa, attr, argv, env);

	record_spawn(rc, pid);
	return rc;
}

RT_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	WITH_CHILD_ENV(envp, env, file, true, true);
	int rc = RT_REAL(posix_spawnp)(pid, file, fa, attr, argv, env);

	record_spawn(rc, pid);
	return rc;
}

RT_EXPORT pid_t fork(void)
{
	pid_t pid = RT_REAL(fork)();

	record_spawn(pid > 0 ? 0 : -1, &pid);
	return pid;
}
