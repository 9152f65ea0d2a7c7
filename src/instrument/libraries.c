/* SPDX-License-Identifier: MIT */
/*
 * The shared libraries a program loads at start: its dynamic loader run in list mode
 * (`ld.so --list PROGRAM`, what ldd does), which resolves DT_NEEDED, RUNPATH,
 * LD_LIBRARY_PATH and the cache exactly as the run will, and runs none of the program's
 * code. Lines look like "\tlibfoo.so.1 => /usr/lib/libfoo.so.1 (0x...)".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "instrument.h"

extern char **environ;

int sc_program_libraries(const char *program, const char *interp, sc_path_vec *out, char *err,
			 size_t errlen)
{
	char *argv[] = { (char *)interp, (char *)"--list", (char *)program, NULL };
	posix_spawn_file_actions_t fa;
	int pipefd[2], status, rc;
	char line[PATH_MAX + 128];
	pid_t pid;
	FILE *f;

	if (!interp) {
		snprintf(err, errlen, "%s names no dynamic loader", program);
		return -1;
	}
	if (pipe2(pipefd, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	rc = posix_spawn(&pid, interp, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (rc) {
		close(pipefd[0]);
		snprintf(err, errlen, "cannot run %s --list: %s", interp, strerror(rc));
		return -1;
	}
	f = fdopen(pipefd[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *arrow = strstr(line, "=> /"), real[PATH_MAX];

		if (!arrow)
			continue;
		arrow += 3;
		arrow[strcspn(arrow, " \t\n(")] = 0;
		if (realpath(arrow, real))
			*VEC_PUSH(out) = sc_xstrdup(real);
	}
	if (f)
		fclose(f);
	else
		close(pipefd[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(err, errlen, "%s --list %s failed (a library is missing?)", interp,
			 program);
		return -1;
	}
	return 0;
}
