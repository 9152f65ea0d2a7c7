/* SPDX-License-Identifier: MIT */
/* Output files that never clobber what the user has (safe_output.h says the rules). */
#include "safe_output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vec.h"

bool sc_out_force;

#define MAX_PENDING 32
#define MANIFEST_MAX (1 << 20)

/* Named temporaries being written, removed by the signal handler. */
static char *volatile pending[MAX_PENDING];
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP };

/* A child writing outputs of its own (sink_apart.c), ended and waited for first, so that its
 * temporaries are gone too when this process is. */
static volatile pid_t helper = -1;

static void remove_pending(int sig)
{
	if (helper > 0) {
		kill(helper, SIGTERM);
		while (waitpid(helper, NULL, 0) < 0 && errno == EINTR)
			;
	}
	for (int i = 0; i < MAX_PENDING; i++)
		if (pending[i])
			unlink(pending[i]);
	/* SA_RESETHAND put the default back: the signal, raised again, ends us once this
	 * handler returns. */
	raise(sig);
}

/* Install the handler where the signal is at its default (an ignored one stays ignored,
 * and a handler of the launcher's own is left alone). Checked at each temporary: the
 * launcher puts the defaults back after the run. */
static void install_cleanup(void)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = remove_pending;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(cleanup_signals) / sizeof(cleanup_signals[0]); i++)
		if (!sigaction(cleanup_signals[i], NULL, &old) && old.sa_handler == SIG_DFL)
			sigaction(cleanup_signals[i], &sa, NULL);
}

void sc_out_helper(pid_t pid)
{
	if (pid > 0)
		install_cleanup();
	helper = pid;
}

/* The cleanup signals held back (into `old`) while a temporary is created and entered in
 * the table: one arriving between the two would leave the file behind. The converters are
 * single-threaded, so the calling thread's mask is the one that matters. */
static void hold_cleanup_signals(sigset_t *old)
{
	sigset_t set;

	install_cleanup();
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(cleanup_signals) / sizeof(cleanup_signals[0]); i++)
		sigaddset(&set, cleanup_signals[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

static void release_cleanup_signals(const sigset_t *old)
{
	sigprocmask(SIG_SETMASK, old, NULL);
}

static int pending_add(char *path)
{
	for (int i = 0; i < MAX_PENDING; i++)
		if (!pending[i]) {
			pending[i] = path;
			return i;
		}
	return -1;
}

static void pending_drop(int slot)
{
	if (slot >= 0)
		pending[slot] = NULL;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? sc_xstrndup(path, (size_t)(slash - path) + (slash == path))
		     : sc_xstrdup(".");
}

static const char *base_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* A session folder (raw/ inside, or session.json once raw/ was removed) is syscope's: so is
 * everything written into it. */
static bool in_session_folder(const char *dir)
{
	char *raw = sc_xasprintf("%s/raw", dir), *info = sc_xasprintf("%s/session.json", dir);
	struct stat st;
	bool yes = (!lstat(raw, &st) && S_ISDIR(st.st_mode)) ||
		   (!lstat(info, &st) && S_ISREG(st.st_mode));

	free(raw);
	free(info);
	return yes;
}

/* The folder's manifest, read whole (NULL when absent or not a regular file). */
static char *read_manifest(const char *dir)
{
	char *path = sc_xasprintf("%s/" SC_OUT_MANIFEST, dir), *text = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	ssize_t got;

	free(path);
	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size < MANIFEST_MAX) {
		text = sc_xcalloc(1, (size_t)st.st_size + 1);
		got = read(fd, text, (size_t)st.st_size);
		if (got < 0) {
			free(text);
			text = NULL;
		} else {
			text[got] = '\0';
		}
	}
	close(fd);
	return text;
}

static bool manifest_lists(const char *dir, const char *name)
{
	char *text = read_manifest(dir), *save = NULL;
	bool found = false;

	if (!text)
		return false;
	for (char *l = strtok_r(text, "\n", &save); l && !found; l = strtok_r(NULL, "\n", &save))
		found = !strcmp(l, name);
	free(text);
	return found;
}

/* Name a file we wrote in its folder's manifest, so that a later run may replace it. */
static void manifest_add(const char *dest)
{
	char *dir = dir_of(dest), *path;
	const char *name = base_of(dest);
	struct stat st;
	int fd;

	if (in_session_folder(dir) || strchr(name, '\n') || manifest_lists(dir, name)) {
		free(dir);
		return;
	}
	path = sc_xasprintf("%s/" SC_OUT_MANIFEST, dir);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
	if (fd >= 0) {
		char *line = sc_xasprintf("%s\n", name);

		/* Best effort: without it, a later run asks for --force; nothing is lost. */
		if (!fstat(fd, &st) && S_ISREG(st.st_mode) &&
		    write(fd, line, strlen(line)) != (ssize_t)strlen(line))
			(void)0;
		free(line);
		close(fd);
	}
	free(path);
	free(dir);
}

const char *sc_file_kind(mode_t mode)
{
	return S_ISLNK(mode)	? "a symbolic link"
	       : S_ISDIR(mode)	? "a directory"
	       : S_ISFIFO(mode) ? "a FIFO"
	       : S_ISCHR(mode)	? "a character device"
	       : S_ISBLK(mode)	? "a block device"
	       : S_ISSOCK(mode) ? "a socket"
				: "not a regular file";
}

static int may_replace(const char *dest, bool known_ours, char *err, size_t errlen)
{
	struct stat st;
	char *dir;
	bool ours;

	if (lstat(dest, &st)) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot write %s: %s", dest, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen,
			 "%s is %s: syscope writes only regular files, never through links or "
			 "into devices; choose another path",
			 dest, sc_file_kind(st.st_mode));
		return -1;
	}
	if (sc_out_force || known_ours)
		return 0;
	dir = dir_of(dest);
	ours = in_session_folder(dir) || manifest_lists(dir, base_of(dest));
	free(dir);
	if (ours)
		return 0;
	snprintf(err, errlen,
		 "%s exists and was not written by syscope; give --force to replace it, or "
		 "choose another path",
		 dest);
	return -1;
}

/* Named temporaries of `base` left by a syscope that was killed (SIGKILL cannot be caught):
 * ".BASE.PID.XXXXXX", regular, ours, of a process that is gone. */
static void remove_stale(const char *dir, const char *base)
{
	size_t n = strlen(base);
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		const char *p = de->d_name;
		char *end, *path;
		long pid;
		struct stat st;

		if (p[0] != '.' || strncmp(p + 1, base, n) || p[n + 1] != '.')
			continue;
		pid = strtol(p + n + 2, &end, 10);
		if (pid <= 0 || *end != '.' || strlen(end) != 7 || pid == getpid() ||
		    !kill((pid_t)pid, 0) || errno != ESRCH)
			continue;
		path = sc_xasprintf("%s/%s", dir, p);
		if (!lstat(path, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid())
			unlink(path);
		free(path);
	}
	if (d)
		closedir(d);
}

int sc_out_may_replace(const char *dest, char *err, size_t errlen)
{
	return may_replace(dest, false, err, errlen);
}

static mode_t current_umask(void)
{
	mode_t m = umask(022);

	umask(m);
	return m;
}

/* An unnamed temporary in `dir`, or -1 where the filesystem (or /proc, needed to give it a
 * name later) does not allow one. */
static int unnamed_temporary(const char *dir, mode_t mode)
{
	if (access("/proc/self/fd", X_OK))
		return -1;
	return open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
}

int sc_out_begin(struct sc_out_file *o, const char *dest, mode_t mode, unsigned flags, char *err,
		 size_t errlen)
{
	char *dir;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->slot = -1;
	o->flags = flags;
	if (may_replace(dest, flags & SC_OUT_OURS, err, errlen))
		return -1;
	dir = dir_of(dest);
	if (!(flags & SC_OUT_NAMED))
		o->fd = unnamed_temporary(dir, mode);
	if (o->fd < 0) {
		remove_stale(dir, base_of(dest));
		sigset_t old;

		o->tmp = sc_xasprintf("%s/.%s.%d.XXXXXX", dir, base_of(dest), (int)getpid());
		hold_cleanup_signals(&old);
		o->fd = mkostemp(o->tmp, O_CLOEXEC); /* O_EXCL: a planted link is never followed */
		if (o->fd >= 0)
			o->slot = pending_add(o->tmp);
		release_cleanup_signals(&old);
		if (o->fd < 0 || fchmod(o->fd, mode & ~current_umask())) {
			snprintf(err, errlen, "cannot write %s: %s", dest, strerror(errno));
			if (o->fd >= 0) {
				close(o->fd);
				unlink(o->tmp);
				pending_drop(o->slot);
			}
			free(o->tmp);
			free(dir);
			memset(o, 0, sizeof(*o));
			o->fd = -1;
			return -1;
		}
	}
	free(dir);
	o->dest = sc_xstrdup(dest);
	return 0;
}

/* Give the unnamed temporary a name beside the destination (exclusively: linkat never
 * replaces anything). */
static int name_unnamed(struct sc_out_file *o)
{
	char proc[64], *dir = dir_of(o->dest);
	struct timespec ts;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	for (unsigned attempt = 0; attempt < 100; attempt++) {
		char *name =
			sc_xasprintf("%s/.%s.%x%04x", dir, base_of(o->dest), (unsigned)getpid(),
				     (unsigned)((uint64_t)ts.tv_nsec + attempt * 7919u) & 0xffff);
		sigset_t old;
		int linked;

		hold_cleanup_signals(&old);
		linked = !linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW);
		if (linked)
			o->slot = pending_add(name);
		release_cleanup_signals(&old);
		if (linked) {
			o->tmp = name;
			free(dir);
			return 0;
		}
		free(name);
		if (errno != EEXIST)
			break;
	}
	free(dir);
	return -1;
}

int sc_out_commit(struct sc_out_file *o, FILE *f, char *err, size_t errlen)
{
	int rc = 0, e = 0;

	if (f && (fflush(f) || ferror(f)))
		e = errno ? errno : EIO;
	if (!e && !o->tmp && name_unnamed(o))
		e = errno ? errno : EIO;
	if (f ? fclose(f) : close(o->fd))
		e = e ? e : (errno ? errno : EIO);
	o->fd = -1;
	if (e) {
		snprintf(err, errlen, "cannot write %s: %s", o->dest, strerror(e));
		rc = -1;
	} else if (may_replace(o->dest, o->flags & SC_OUT_OURS, err, errlen)) {
		/* something came meanwhile */
		rc = -1;
	} else if (rename(o->tmp, o->dest)) {
		snprintf(err, errlen, "cannot write %s: %s", o->dest, strerror(errno));
		rc = -1;
	}
	if (rc && o->tmp)
		unlink(o->tmp);
	pending_drop(o->slot);
	if (!rc && !(o->flags & SC_OUT_NO_MANIFEST))
		manifest_add(o->dest);
	free(o->tmp);
	free(o->dest);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	return rc;
}

void sc_out_abort(struct sc_out_file *o, FILE *f)
{
	if (f)
		fclose(f);
	else if (o->fd >= 0)
		close(o->fd);
	if (o->tmp)
		unlink(o->tmp);
	pending_drop(o->slot);
	free(o->tmp);
	free(o->dest);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}

int sc_out_write_file(const char *dest, const void *data, size_t len, mode_t mode, unsigned flags,
		      char *err, size_t errlen)
{
	struct sc_out_file o;
	const char *p = data;

	if (sc_out_begin(&o, dest, mode, flags, err, errlen))
		return -1;
	while (len) {
		ssize_t n = write(o.fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "cannot write %s: %s", dest,
				 strerror(n < 0 ? errno : EIO));
			sc_out_abort(&o, NULL);
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return sc_out_commit(&o, NULL, err, errlen);
}
