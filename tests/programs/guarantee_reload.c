/* SPDX-License-Identifier: MIT */
/*
 * A library opened, called and closed again, N times (argv[2], 100 by default): each round
 * dlopen(argv[1]) (libpatch_lib.so), lib_outer(round) through dlsym, dlclose. Prints
 * "reload ok N" when every round found the function.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static volatile long sink;

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[2]) : 100, done = 0;

	if (argc < 2)
		return 2;
	for (int i = 0; i < rounds; i++) {
		void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
		long (*outer)(long) = h ? (long (*)(long))dlsym(h, "lib_outer") : NULL;

		if (!outer) {
			fprintf(stderr, "reload: %s\n", dlerror());
			return 1;
		}
		sink += outer(i);
		done++;
		dlclose(h);
	}
	printf("reload ok %d\n", done);
	return 0;
}
