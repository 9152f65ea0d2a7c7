/* SPDX-License-Identifier: MIT */
/*
 * One sink written by a child process while this one builds the region profiles and writes
 * the other outputs (issue 20, goal 3: both cores). The rocpd database of a session of
 * millions of regions is SQLite's work for most of a conversion, and no other output needs
 * it; forked after the model is built, the child reads its own copy of the model (no locks,
 * nothing shared but the progress counter) and hands back, through a pipe, the names of the
 * files it wrote and its errors, which join this process's lists as if written here.
 *
 * The child builds the sample profiles again (per distinct stack: small), never the region
 * profiles. It dies with its parent (PR_SET_PDEATHSIG: SIGTERM, whose handler removes its
 * temporary file, as a SIGINT of the terminal does for both).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/progress.h"
#include "sink_apart.h"

static void send_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Each name as 'W' or 'E', its text and a NUL. */
static void send_list(int fd, char kind, char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		send_all(fd, &kind, 1);
		send_all(fd, v[i], strlen(v[i]) + 1);
	}
}

static _Noreturn void run_child(const struct sc_output *parent, const struct sc_sink *sink,
				pid_t parent_pid, int fd)
{
	struct sc_output out = { .model = parent->model,
				 .settings = parent->settings,
				 .dir = parent->dir,
				 .from_database = parent->from_database,
				 .merged_trace = parent->merged_trace };
	struct sc_profile_set profiles;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent_pid) /* the parent ended before the line above */
		_exit(1);
	sc_progress_helper();
	sc_profiles_build(&profiles, out.model, false);
	out.profiles = &profiles;
	rc = sink->write(&out);
	send_list(fd, 'W', out.written.v, out.written.n);
	send_list(fd, 'E', out.errors.v, out.errors.n);
	close(fd);
	/* _exit: nothing of the parent's (stdio buffers, atexit handlers) runs twice. */
	_exit(rc ? 1 : 0);
}

bool sc_sink_apart_start(struct sc_sink_apart *a, const struct sc_sink *sink, struct sc_output *out)
{
	pid_t self = getpid();
	int fds[2];

	memset(a, 0, sizeof(*a));
	a->pid = -1;
	a->fd = -1;
	if (pipe(fds))
		return false;
	sc_progress_share();
	fflush(NULL);
	a->pid = fork();
	if (a->pid < 0) {
		close(fds[0]);
		close(fds[1]);
		sc_progress_unshare();
		return false;
	}
	if (!a->pid) {
		sc_out_helper(-1); /* its own: none */
		close(fds[0]);
		run_child(out, sink, self, fds[1]);
	}
	close(fds[1]);
	sc_out_helper(a->pid); /* a SIGINT here ends it first, and waits */
	a->fd = fds[0];
	a->sink = sink;
	out->apart = a;
	return true;
}

/* Everything the child sent, until it closed the pipe; NUL-terminated. */
static char *receive_all(int fd, size_t *len)
{
	VEC(char) buf = { 0 };
	char chunk[4096];

	for (;;) {
		ssize_t r = read(fd, chunk, sizeof(chunk));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		VEC_RESERVE(&buf, buf.n + (size_t)r + 1);
		memcpy(buf.v + buf.n, chunk, (size_t)r);
		buf.n += (size_t)r;
	}
	VEC_RESERVE(&buf, buf.n + 1);
	buf.v[buf.n] = '\0';
	*len = buf.n;
	return buf.v;
}

/* The child's files first, in its order, as when its sink came first in the table. */
static void take_lists(struct sc_output *out, const char *buf, size_t len, size_t *nerrors)
{
	VEC(char *) written = { 0 };

	for (const char *p = buf; p + 1 < buf + len;) {
		const char *text = p + 1;

		if (*p == 'W')
			*VEC_PUSH(&written) = sc_xstrdup(text);
		else {
			*VEC_PUSH(&out->errors) = sc_xstrdup(text);
			++*nerrors;
		}
		p = text + strlen(text) + 1;
	}
	for (size_t i = 0; i < out->written.n; i++)
		*VEC_PUSH(&written) = out->written.v[i];
	VEC_FREE(&out->written);
	out->written.v = written.v;
	out->written.n = written.n;
	out->written.cap = written.cap;
}

int sc_sink_apart_finish(struct sc_sink_apart *a, struct sc_output *out)
{
	size_t len = 0, nerrors = 0;
	pid_t pid = a->pid;
	char *buf;
	int status = 0;

	if (pid <= 0)
		return 0;
	buf = receive_all(a->fd, &len);
	close(a->fd);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	sc_out_helper(-1);
	a->pid = -1; /* waited for: a second call does nothing */
	sc_progress_unshare();
	take_lists(out, buf, len, &nerrors);
	free(buf);
	out->apart = NULL;
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	if (!nerrors) /* it died without saying why */
		*VEC_PUSH(&out->errors) =
			WIFSIGNALED(status)
				? sc_xasprintf("the %s writer (process %d) was killed by signal %d "
					       "(%s): its files were not written",
					       a->sink->token, (int)pid, WTERMSIG(status),
					       strsignal(WTERMSIG(status)))
				: sc_xasprintf("the %s writer (process %d) failed with status %d",
					       a->sink->token, (int)pid, WEXITSTATUS(status));
	return 1;
}
