/* An application that embeds CPython the way plugins do: libpython loaded with
 * dlopen(RTLD_LOCAL), so that its symbols are in no global scope, then Python code run in it
 * (tests/integration/test_python_frames.py). Usage: py_embed LIBPYTHON CODE */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void (*initialize)(void);
	int (*run)(const char *);
	int (*finalize)(void);
	void *lib;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: py_embed LIBPYTHON CODE\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "py_embed: %s\n", dlerror());
		return 2;
	}
	initialize = (void (*)(void))dlsym(lib, "Py_Initialize");
	run = (int (*)(const char *))dlsym(lib, "PyRun_SimpleString");
	finalize = (int (*)(void))dlsym(lib, "Py_FinalizeEx");
	if (!initialize || !run || !finalize) {
		fprintf(stderr, "py_embed: not a libpython: %s\n", argv[1]);
		return 2;
	}
	initialize();
	rc = run(argv[2]);
	finalize();
	printf("py_embed: %d\n", rc);
	return rc ? 1 : 0;
}
