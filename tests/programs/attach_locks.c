/* SPDX-License-Identifier: MIT */
/*
 * For test_attach_wrap.py: a program started without syscope whose threads contend for
 * mutexes, to be attached with --parallel=pthread. Prints "pid=N", then answers lines:
 *
 *   contend N   two threads made now take the_lock N times each, holding it 3 ms each time
 *               (so the other waits), then are joined: "contend lock=0xADDR creator=TID
 *               tids=A,B"
 *   got         where call entries lead: the program's PLT entry of pthread_create, its GOT
 *               entry of pthread_mutex_lock (it takes its address), the library's PLT entry
 *               of pthread_mutex_lock once loaded: "got exe_plt=MODULE@0xVALUE exe_got=...
 *               lib_plt=..." (MODULE: the object the value points into; "none" where the
 *               object has no such entry)
 *   load PATH   dlopen of PATH (attach_locklib): "loaded"
 *   libcontend N  the library's own contention (its mutex, its threads): "libcontend
 *               lock=0xADDR"
 *   _exit N     _exit(N) at once
 *   quit        exit(0)
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t the_lock = PTHREAD_MUTEX_INITIALIZER;
static int rounds;
static void *lib;

static void hold_3ms(void)
{
	struct timespec ts = { 0, 3000000 };

	nanosleep(&ts, NULL);
}

static void *contender(void *arg)
{
	for (int i = 0; i < rounds; i++) {
		pthread_mutex_lock(&the_lock);
		hold_3ms();
		pthread_mutex_unlock(&the_lock);
	}
	*(long *)arg = syscall(SYS_gettid);
	return NULL;
}

static void contend(int n)
{
	pthread_t th[2];
	long tids[2] = { 0, 0 };

	rounds = n;
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, contender, &tids[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("contend lock=%p creator=%ld tids=%ld,%ld\n", (void *)&the_lock,
	       (long)syscall(SYS_gettid), tids[0], tids[1]);
}

/* An object's JUMP_SLOT entry of `name` (its PLT's), read from its dynamic section. */
static void **plt_entry(const struct link_map *map, const char *name)
{
	const Elf64_Sym *symtab = NULL;
	const char *strtab = NULL;
	const Elf64_Rela *rel = NULL;
	size_t size = 0;
	uintptr_t base = map->l_addr;

	for (const Elf64_Dyn *d = (const Elf64_Dyn *)map->l_ld; d->d_tag != DT_NULL; d++) {
		uintptr_t p = d->d_un.d_ptr < base ? d->d_un.d_ptr + base : d->d_un.d_ptr;

		if (d->d_tag == DT_SYMTAB)
			symtab = (const Elf64_Sym *)p;
		else if (d->d_tag == DT_STRTAB)
			strtab = (const char *)p;
		else if (d->d_tag == DT_JMPREL)
			rel = (const Elf64_Rela *)p;
		else if (d->d_tag == DT_PLTRELSZ)
			size = d->d_un.d_val;
	}
	for (size_t i = 0; rel && i < size / sizeof(*rel); i++)
		if (ELF64_R_TYPE(rel[i].r_info) == R_X86_64_JUMP_SLOT &&
		    !strcmp(strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name, name))
			return (void **)(base + rel[i].r_offset);
	return NULL;
}

static void print_where(const char *label, const void *value)
{
	Dl_info di;
	const char *module = "unknown";

	if (dladdr(value, &di) && di.dli_fname) {
		module = strrchr(di.dli_fname, '/');
		module = module ? module + 1 : di.dli_fname;
		if (!*module)
			module = "program";
	}
	printf(" %s=%s@%p", label, module, value);
}

/* Its address, as the program's code takes it: through its GLOB_DAT entry. */
static void *(*volatile address_of_lock)(void);
static void *lock_address(void)
{
	return (void *)&pthread_mutex_lock;
}

static void print_plt(const char *label, const struct link_map *map, const char *name)
{
	void **entry = plt_entry(map, name);

	if (entry)
		print_where(label, *entry);
	else
		printf(" %s=none", label);
}

static void report_entries(void)
{
	printf("got");
	print_plt("exe_plt", dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD), "pthread_create");
	print_where("exe_got", address_of_lock());
	if (lib)
		print_plt("lib_plt", lib, "pthread_mutex_lock");
	printf("\n");
}

int main(void)
{
	char line[4200];

	address_of_lock = lock_address;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("pid=%d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "contend ", 8)) {
			contend(atoi(line + 8));
		} else if (!strcmp(line, "got")) {
			report_entries();
		} else if (!strncmp(line, "load ", 5)) {
			lib = dlopen(line + 5, RTLD_NOW);
			if (lib)
				printf("loaded\n");
			else
				printf("load failed: %s\n", dlerror());
		} else if (!strncmp(line, "libcontend ", 11) && lib) {
			void *(*fn)(int) = (void *(*)(int))dlsym(lib, "locklib_contend");

			printf("libcontend lock=%p\n", fn(atoi(line + 11)));
		} else if (!strncmp(line, "_exit ", 6)) {
			_exit(atoi(line + 6));
		} else if (!strcmp(line, "quit")) {
			break;
		}
	}
	return 0;
}
