/* SPDX-License-Identifier: MIT */
/* Closes every descriptor above 2 in every way a daemon does, then uses files and forks: the
 * program's own descriptors must work, and syscope must go on recording. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

NOINLINE static double after_close_work(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}

static int check_files(void)
{
	char path[] = "/tmp/syscope-closefds-XXXXXX", buf[8] = "";
	int fd = mkstemp(path), fd2;

	if (fd < 0 || write(fd, "hello", 5) != 5)
		return 1;
	fd2 = dup2(fd, 500); /* onto a number syscope might use */
	if (fd2 != 500 || pread(500, buf, 5, 0) != 5 || strcmp(buf, "hello"))
		return 1;
	close(fd);
	close(500);
	unlink(path);
	return 0;
}

int main(int argc, char **argv)
{
	double end, x = 1;
	struct rlimit rl;
	int status = 0;
	pid_t pid;

	getrlimit(RLIMIT_NOFILE, &rl);
	for (int fd = 3; fd < (int)rl.rlim_cur && fd < 65536; fd++)
		close(fd);
	closefrom(3);
#ifdef SYS_close_range
	close_range(3, ~0u, 0);
#endif
	if (check_files())
		return 1;
	end = fixture_cpu_now() + fixture_seconds(argc, argv, 1, 0.8);
	pid = fork();
	while (fixture_cpu_left(end))
		x = after_close_work(x);
	fixture_sink = x;
	if (pid == 0)
		_exit(check_files());
	waitpid(pid, &status, 0);
	printf("hostile_closefds: done\n");
	return WEXITSTATUS(status);
}
