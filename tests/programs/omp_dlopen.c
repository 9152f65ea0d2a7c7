/* SPDX-License-Identifier: MIT */
/*
 * A program without OpenMP that loads a library using it RTLD_LOCAL, as Python loads its
 * extensions (PyTorch brings libgomp so): libgomp is then in no global scope, and the
 * library's GOMP_parallel calls still reach syscope's wrapper first.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
	int (*members)(void) = h ? (int (*)(void))dlsym(h, "omp_lib_members") : NULL;

	if (!members) {
		fprintf(stderr, "omp_dlopen: %s\n", dlerror());
		return 1;
	}
	printf("members %d %d\n", members(), members());
	return 0;
}
