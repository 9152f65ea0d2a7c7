/* SPDX-License-Identifier: MIT */
/*
 * dl_churn LIB ROUNDS: ROUNDS times dlopen LIB, call its lib_hot_work, dlclose it. The loader
 * changes its list of objects all the time while the library's code is hot, so samples land
 * in dlopen, in dlclose and in a library that comes and goes. Prints the rounds and the sum
 * of the results, the same at every run.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[2]) : 0;
	double sum = 0;

	if (argc != 3 || rounds <= 0) {
		fprintf(stderr, "usage: dl_churn LIB ROUNDS\n");
		return 2;
	}
	for (int i = 0; i < rounds; i++) {
		void *h = dlopen(argv[1], RTLD_NOW);
		double (*work)(double, long);

		if (!h) {
			fprintf(stderr, "dl_churn: %s\n", dlerror());
			return 1;
		}
		*(void **)&work = dlsym(h, "lib_hot_work");
		if (!work) {
			fprintf(stderr, "dl_churn: no lib_hot_work in %s\n", argv[1]);
			return 1;
		}
		sum += work(1.0, 40000);
		dlclose(h);
	}
	printf("dl_churn: %d rounds, sum %.6e\n", rounds, sum);
	return 0;
}
