/* An application that loads libpython with dlopen, runs Python code, finalizes the
 * interpreter, unloads the library and goes on working (tests/integration/
 * test_python_frames.py): the samples after the unload must not read the interpreter's
 * memory. Usage: py_unload LIBPYTHON CODE */
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

static double spin(double seconds)
{
	struct timespec a, b;
	double x = 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 10000; i++)
			x += i * 0.5;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9 < seconds);
	return x;
}

int main(int argc, char **argv)
{
	void (*initialize)(void);
	int (*run)(const char *);
	int (*finalize)(void);
	void *lib;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: py_unload LIBPYTHON CODE\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "py_unload: %s\n", dlerror());
		return 2;
	}
	initialize = (void (*)(void))dlsym(lib, "Py_Initialize");
	run = (int (*)(const char *))dlsym(lib, "PyRun_SimpleString");
	finalize = (int (*)(void))dlsym(lib, "Py_FinalizeEx");
	if (!initialize || !run || !finalize) {
		fprintf(stderr, "py_unload: not a libpython: %s\n", argv[1]);
		return 2;
	}
	initialize();
	rc = run(argv[2]);
	finalize();
	dlclose(lib);
	/* Unloaded or not (a library may stay), samples go on reading this thread. */
	printf("py_unload: %d %s\n", rc,
	       dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD) ? "loaded" : "unloaded");
	printf("py_unload: %.0f\n", spin(0.4) > 0 ? 1.0 : 0.0);
	return rc ? 1 : 0;
}
