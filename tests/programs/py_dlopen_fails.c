/* Opens a library that looks like libpython and fails to load (py_badlib.c), then goes on
 * working and starts a thread (tests/integration/test_python_frames.py): neither the
 * samples nor the thread's start may read the tables of the library that went away.
 * Usage: py_dlopen_fails LIBRARY */
#include <dlfcn.h>
#include <pthread.h>
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

static void *worker(void *arg)
{
	(void)arg;
	spin(0.1);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc != 2) {
		fprintf(stderr, "usage: py_dlopen_fails LIBRARY\n");
		return 2;
	}
	if (dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) {
		fprintf(stderr, "py_dlopen_fails: %s loaded\n", argv[1]);
		return 2;
	}
	printf("py_dlopen_fails: %s\n", dlerror() ? "failed" : "?");
	spin(0.2);
	if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, NULL))
		return 2;
	printf("py_dlopen_fails: %.0f\n", spin(0.2) > 0 ? 1.0 : 0.0);
	return 0;
}
