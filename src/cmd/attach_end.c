/* SPDX-License-Identifier: MIT */
/*
 * syscope attach: how a recording ends that the runtime cannot end itself. An exec is ended
 * by the runtime's exec wrappers, which GOT rewriting puts in front of the program's calls
 * (runtime/attach_wrap.c); one they do not see (a raw execve system call, a function pointer
 * the program took before the attach) is seen from here while the new program runs, and its
 * end written into the raw file's header; the fork children that record while attached
 * are waited for; the children the process started that could not be followed (exec'd
 * programs, posix_spawn's) are counted from /proc, and said.
 */
#define PR_FMT "attach: "
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/strutil.h"
#include "../store/format.h"
#include "../store/session.h"
#include "attach.h"

#define DETACH_TIMEOUT_MS 10000

/* The process executed another program: it maps things, and our library no longer (an
 * exiting process, whose maps empty just before it ends, is not taken for one). */
bool sc_attach_executed(pid_t pid)
{
	return sc_attach_maps_has(pid, "-") && !sc_attach_maps_has(pid, "/libsyscope.so") &&
	       !sc_attach_target_ended(pid);
}

static bool read_header(int fd, struct sc_file_header *h)
{
	return pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h) &&
	       !memcmp(h->magic, SC_FILE_MAGIC, sizeof(h->magic));
}

/*
 * An exec that ended the recording without the runtime's knowing (no wrapper of ours saw
 * it): the end goes into the raw file's header here, at the moment the exec was seen
 * (timestamps are CLOCK_MONOTONIC, as ours). A file whose end is set already is left alone.
 */
void sc_attach_mark_exec(const char *path)
{
	struct sc_file_header h;
	struct timespec ts;
	size_t from = offsetof(struct sc_file_header, end_ns);
	size_t len = offsetof(struct sc_file_header, end_status) + sizeof(h.end_status) - from;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (fd >= 0 && read_header(fd, &h) && h.end_reason == SC_END_RUNNING) {
		h.end_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		h.end_reason = SC_END_EXEC;
		h.end_status = 0;
		if (pwrite(fd, (char *)&h + from, len, (off_t)from) != (ssize_t)len)
			pr_warn("cannot write the exec's end into %s: %s", path, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
}

/* Where a file of the session still records: its process is alive and has our library. */
enum file_state {
	FILE_DONE,
	FILE_RECORDING,
	FILE_EXECUTED
};

/* An exec ended it: its wrapper recorded the end, or the process runs another program. */
static enum file_state file_state(const char *path)
{
	struct sc_file_header h;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool read = fd >= 0 && read_header(fd, &h);
	bool done = !read || h.end_reason != SC_END_RUNNING;

	if (fd >= 0)
		close(fd);
	if (read && h.end_reason == SC_END_EXEC)
		return FILE_EXECUTED;
	if (done || sc_attach_target_ended(h.pid))
		return FILE_DONE; /* ended, or gone without a trace (killed, _exit) */
	return sc_attach_executed(h.pid) ? FILE_EXECUTED : FILE_RECORDING;
}

static bool has(const pid_t *list, unsigned n, pid_t pid)
{
	for (unsigned i = 0; i < n; i++)
		if (list[i] == pid)
			return true;
	return false;
}

void sc_attach_children_watch(pid_t pid, struct sc_attach_children *c, bool first)
{
	char path[64];
	DIR *d;
	struct dirent *de;

	if (first)
		c->nbefore = c->nseen = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		char file[320], buf[4096], *p, *end;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "/proc/%d/task/%s/children", (int)pid, de->d_name);
		f = fopen(file, "re");
		if (!f)
			continue;
		buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
		fclose(f);
		for (p = buf;; p = end) {
			pid_t child = (pid_t)strtol(p, &end, 10);

			if (end == p)
				break;
			if (first && c->nbefore < SC_ATTACH_MAX_CHILDREN)
				c->before[c->nbefore++] = child;
			else if (!first && !has(c->before, c->nbefore, child) &&
				 !has(c->seen, c->nseen, child) &&
				 c->nseen < SC_ATTACH_MAX_CHILDREN)
				c->seen[c->nseen++] = child;
		}
	}
	if (d)
		closedir(d);
}

/* The pids that have a raw file in the session (the target's, its fork children's). */
static unsigned recorded_pids(const char *dir, pid_t *out, unsigned max)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned n = 0;

	while (d && n < max && (de = readdir(d))) {
		struct sc_file_header h;
		char *path;
		int fd;

		if (!strstr(de->d_name, SC_RAW_SUFFIX))
			continue;
		path = sc_xasprintf("%s/%s", dir, de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && read_header(fd, &h))
			out[n++] = h.pid;
		if (fd >= 0)
			close(fd);
		free(path);
	}
	if (d)
		closedir(d);
	return n;
}
/*
 * The fork children that recorded while attached (raw/<parent>-fork<n>.sraw) detach by
 * themselves at the stop file: waited for, so that conversion reads whole files. A child
 * that executed another program ends there (end: exec): counted, and said.
 */
void sc_attach_finish_children(const char *session, pid_t target,
			       const struct sc_attach_children *kids)
{
	static pid_t recorded[SC_ATTACH_MAX_CHILDREN + 1];
	unsigned nrecorded, unfollowed = 0;
	char *dir = sc_xasprintf("%s/" SC_SESSION_RAW_DIR, session);
	unsigned executed = 0, waiting = 1;
	char prefix[32];

	/* Only this target's children: the session may hold other attached processes' files. */
	snprintf(prefix, sizeof(prefix), "%d-fork", (int)target);
	for (int waited = 0; waiting && waited <= DETACH_TIMEOUT_MS; waited += 10) {
		DIR *d = opendir(dir);
		struct dirent *de;

		waiting = executed = 0; /* each look counts them all again */
		while (d && (de = readdir(d))) {
			char *path;

			if (strncmp(de->d_name, prefix, strlen(prefix)) ||
			    !strstr(de->d_name, SC_RAW_SUFFIX))
				continue;
			path = sc_xasprintf("%s/%s", dir, de->d_name);
			switch (file_state(path)) {
			case FILE_RECORDING:
				waiting++;
				break;
			case FILE_EXECUTED:
				sc_attach_mark_exec(path);
				executed++;
				break;
			case FILE_DONE:
				break;
			}
			free(path);
		}
		if (d)
			closedir(d);
		if (waiting)
			usleep(10000);
	}
	if (waiting)
		pr_warn("%u child process(es) of %d did not say they detached; their data so far "
			"is kept",
			waiting, (int)target);
	nrecorded = recorded_pids(dir, recorded, SC_ATTACH_MAX_CHILDREN + 1);
	for (unsigned i = 0; i < kids->nseen; i++)
		unfollowed += !has(recorded, nrecorded, kids->seen[i]);
	if (unfollowed)
		pr_warn("%u child process(es) that %d started while attached were not followed "
			"(posix_spawn, vfork: no fork hook runs for them; system() and popen() use "
			"it), besides any that lived less than 50 ms",
			unfollowed, (int)target);
	if (executed)
		pr_warn("%u child process(es) of %d executed other programs while attached: their "
			"recordings end there (end: exec), and those programs are not followed "
			"(syscope attach follows forks, not execs: the new programs run with the "
			"environment they were given)",
			executed, (int)target);
	free(dir);
}
