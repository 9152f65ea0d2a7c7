/* SPDX-License-Identifier: MIT */
/* dlopen(argv[1]), work in it, dlclose it, then work in after_close_work. */
#include <dlfcn.h>
#include <stdio.h>

#include "fixture.h"

NOINLINE static double after_close_work(double x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 0.9999999 + 0.5;
	return x;
}

int main(int argc, char **argv)
{
	double seconds = fixture_seconds(argc, argv, 2, 0.6), end, x = 1;
	double (*run)(double);
	void *h;

	if (argc < 2)
		return 2;
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	run = (double (*)(double))dlsym(h, "lib_run");
	fixture_sink = run(seconds);
	dlclose(h);
	end = fixture_cpu_now() + seconds;
	while (fixture_cpu_left(end))
		x = after_close_work(x);
	fixture_sink = x;
	printf("dlopen_main: done\n");
	return 0;
}
