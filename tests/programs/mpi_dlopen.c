/* SPDX-License-Identifier: MIT */
/*
 * A program without MPI that loads its MPI part the way Python's mpi4py or a plugin host
 * does: dlopen(RTLD_LOCAL) of libmpi_attach_plugin.so (mpi_attach.c built as a library,
 * linked with libmpi), beside this program, and a call through dlsym to its
 * mpi_attach_main. So the MPI library is in the process, but not in its global scope
 * (test_attach_mpi.py). Once loaded, it prints "loaded pid=PID" and waits for the file
 * STOP_FILE.go (argv[1] + ".go"), so that syscope attaches before MPI_Init, when nothing has
 * made the MPI library global yet (Open MPI's MPI_Init does). Then arguments and output are
 * mpi_attach's.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char path[PATH_MAX], go[PATH_MAX];
	struct timespec pause = { 0, 10000000 };
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 64);
	char *slash;
	void *lib;
	int (*plugin_main)(int, char **);

	if (n <= 0)
		return 2;
	path[n] = '\0';
	slash = strrchr(path, '/');
	strcpy(slash ? slash + 1 : path, "libmpi_attach_plugin.so");
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "mpi_dlopen: %s\n", dlerror());
		return 2;
	}
	*(void **)&plugin_main = dlsym(lib, "mpi_attach_main");
	if (!plugin_main) {
		fprintf(stderr, "mpi_dlopen: %s\n", dlerror());
		return 2;
	}
	printf("loaded pid=%d\n", (int)getpid());
	fflush(stdout);
	snprintf(go, sizeof(go), "%s.go", argc > 1 ? argv[1] : "/nonexistent");
	while (argc > 1 && access(go, F_OK))
		nanosleep(&pause, NULL);
	return plugin_main(argc, argv);
}
