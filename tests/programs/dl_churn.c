/* SPDX-License-Identifier: MIT */
/*
 * dl_churn LIB ROUNDS [THREADS]: ROUNDS times dlopen LIB, call its lib_hot_work, dlclose
 * it. The loader changes its list of objects all the time while the library's code is hot,
 * so samples land in dlopen, in dlclose and in a library that comes and goes. THREADS more
 * threads meanwhile compute in the program itself, so that their samples walk the list of
 * loaded objects while a library is being unmapped. Prints the rounds and the sum of the
 * results, the same at every run.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

#define MAX_THREADS 8

static atomic_int done;

NOINLINE static double spin_step(double x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 0.9999999 + 0.5;
	return x;
}

static void *spin(void *arg)
{
	double x = 1;

	(void)arg;
	while (!atomic_load(&done))
		x = spin_step(x);
	fixture_sink = x;
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[2]) : 0, nthreads = argc > 3 ? atoi(argv[3]) : 0;
	pthread_t threads[MAX_THREADS];
	double sum = 0;

	if (argc < 3 || argc > 4 || rounds <= 0 || nthreads < 0 || nthreads > MAX_THREADS) {
		fprintf(stderr, "usage: dl_churn LIB ROUNDS [THREADS, at most %d]\n", MAX_THREADS);
		return 2;
	}
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&threads[i], NULL, spin, NULL)) {
			fprintf(stderr, "dl_churn: no thread\n");
			return 1;
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
	atomic_store(&done, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	printf("dl_churn: %d rounds, sum %.6e\n", rounds, sum);
	return 0;
}
