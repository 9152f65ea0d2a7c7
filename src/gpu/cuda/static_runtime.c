/* SPDX-License-Identifier: MIT */
/*
 * A program built as nvcc builds by default has the CUDA runtime linked into it (issue 17
 * items 5 and 9): no libcudart is loaded, and the runtime reaches cuInit from the program's own
 * text, whose symbols are not exported. Told apart from a driver-API program by the object
 * that called cuInit: nvcc's output carries its kernels as fat binaries (the .nv_fatbin and
 * .nvFatBinSegment sections), which the runtime registers; a driver-API program loads its
 * modules itself. Then only the driver calls that start GPU work or allocate are recorded,
 * as with the shared runtime, instead of every driver call the runtime makes (one more record
 * per launch: cuKernelGetName before each, besides device attributes at start).
 */
#include "static_runtime.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SECTION_NAMES_MAX (1u << 20)
#define HEADERS_AT_ONCE 256u

static bool read_at(int fd, void *buf, size_t len, off_t off)
{
	return pread(fd, buf, len, off) == (ssize_t)len;
}

/* The section count and the section-name table's index of a 64-bit ELF file. Past 65 279
 * sections (SHN_LORESERVE) e_shnum is 0 and the count is section 0's sh_size; an index
 * that does not fit is SHN_XINDEX in e_shstrndx and section 0's sh_link (elf(5)). */
static bool section_counts(int fd, const Elf64_Ehdr *eh, uint64_t *count, uint64_t *strndx)
{
	Elf64_Shdr sh0;

	*count = eh->e_shnum;
	*strndx = eh->e_shstrndx;
	if (eh->e_shoff && (!eh->e_shnum || eh->e_shstrndx == SHN_XINDEX)) {
		if (!read_at(fd, &sh0, sizeof(sh0), (off_t)eh->e_shoff))
			return false;
		if (!eh->e_shnum)
			*count = sh0.sh_size;
		if (eh->e_shstrndx == SHN_XINDEX)
			*strndx = sh0.sh_link;
	}
	return true;
}

/* The section header string table of a 64-bit ELF file, NUL-terminated; NULL if none. */
static char *section_names(int fd, const Elf64_Ehdr *eh, uint64_t count, uint64_t strndx,
			   size_t *len)
{
	Elf64_Shdr sh;
	char *names;

	if (strndx == SHN_UNDEF || strndx >= count ||
	    !read_at(fd, &sh, sizeof(sh), (off_t)(eh->e_shoff + strndx * sizeof(sh))) ||
	    !sh.sh_size || sh.sh_size > SECTION_NAMES_MAX)
		return NULL;
	names = malloc(sh.sh_size + 1);
	if (!names)
		return NULL;
	if (!read_at(fd, names, sh.sh_size, (off_t)sh.sh_offset)) {
		free(names);
		return NULL;
	}
	names[sh.sh_size] = '\0';
	*len = sh.sh_size;
	return names;
}

/* Whether one of the `count` section headers is named `name`, read a block at a time. */
static bool find_section(int fd, const Elf64_Ehdr *eh, uint64_t count, const char *names,
			 size_t len, const char *name)
{
	Elf64_Shdr sh[HEADERS_AT_ONCE];

	for (uint64_t i = 0; i < count; i += HEADERS_AT_ONCE) {
		uint64_t k = count - i < HEADERS_AT_ONCE ? count - i : HEADERS_AT_ONCE;

		if (!read_at(fd, sh, k * sizeof(sh[0]), (off_t)(eh->e_shoff + i * sizeof(sh[0]))))
			return false;
		for (uint64_t j = 0; j < k; j++)
			if (sh[j].sh_name < len && !strcmp(names + sh[j].sh_name, name))
				return true;
	}
	return false;
}

bool cuda_elf_has_section(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t count = 0, strndx = 0;
	Elf64_Ehdr eh;
	char *names = NULL;
	size_t len = 0;
	bool found;

	if (fd < 0)
		return false;
	if (read_at(fd, &eh, sizeof(eh), 0) && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_shentsize == sizeof(Elf64_Shdr) &&
	    section_counts(fd, &eh, &count, &strndx))
		names = section_names(fd, &eh, count, strndx, &len);
	found = names && find_section(fd, &eh, count, names, len, name);
	free(names);
	close(fd);
	return found;
}

/* Objects whose frames lie between the runtime and cuInit's call of InitializeInjection. */
static bool tools_object(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libcuda.so", 10) || !strncmp(base, "libcupti", 8) ||
	       !strncmp(base, "libsyscope", 10);
}

/* The file of an object: the main program's link map names none (dladdr gives argv[0]). */
static const char *object_file(const struct link_map *map)
{
	return map->l_name && map->l_name[0] ? map->l_name : "/proc/self/exe";
}

static bool carries_fat_binaries(const char *file)
{
	return cuda_elf_has_section(file, ".nvFatBinSegment") ||
	       cuda_elf_has_section(file, ".nv_fatbin");
}

/* Any object on the way to cuInit besides the driver's and the tools' (the C library's
 * frames may lie between): the runtime's start when one carries fat binaries. */
bool cuda_static_runtime_starts(void *const *pcs, int n, char *file, size_t cap)
{
	const struct link_map *seen = NULL;

	for (int i = 0; i < n; i++) {
		struct link_map *map = NULL;
		Dl_info di;
		const char *path;
		ssize_t len;

		if (!dladdr1(pcs[i], &di, (void **)&map, RTLD_DL_LINKMAP) || !map || map == seen)
			continue;
		seen = map;
		path = object_file(map);
		if ((map->l_name && tools_object(map->l_name)) || !carries_fat_binaries(path))
			continue;
		len = strcmp(path, "/proc/self/exe") ? -1 : readlink(path, file, cap - 1);
		if (len < 0)
			snprintf(file, cap, "%s", path);
		else
			file[len] = '\0';
		return true;
	}
	return false;
}
