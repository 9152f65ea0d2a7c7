/* SPDX-License-Identifier: MIT */
/*
 * Patch plans carried by the files themselves: `syscope instrument -o` writes a copy of a
 * program or library with its plan in a non-loaded section (SC_PLAN_SECTION), so that a
 * run under syscope patches it at start-up without analyzing it again. Reading the section
 * headers of the loaded files is a few small reads each.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/patch_plan.h"
#include "patch.h"

static bool read_at(int fd, void *buf, size_t n, uint64_t off)
{
	return pread(fd, buf, n, (off_t)off) == (ssize_t)n;
}

char *rt_patch_read_embedded(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL, names;
	char *strtab = NULL, *plan = NULL;

	if (fd < 0)
		return NULL;
	if (!read_at(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    !eh.e_shnum || eh.e_shnum >= SHN_LORESERVE || eh.e_shstrndx >= eh.e_shnum)
		goto out;
	sh = malloc((size_t)eh.e_shnum * sizeof(*sh));
	if (!sh || !read_at(fd, sh, (size_t)eh.e_shnum * sizeof(*sh), eh.e_shoff))
		goto out;
	names = sh[eh.e_shstrndx];
	if (names.sh_size > (1u << 24) || !(strtab = malloc(names.sh_size + 1)) ||
	    !read_at(fd, strtab, names.sh_size, names.sh_offset))
		goto out;
	strtab[names.sh_size] = 0;
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		if (sh[i].sh_name >= names.sh_size ||
		    strcmp(strtab + sh[i].sh_name, SC_PLAN_SECTION) ||
		    sh[i].sh_size < sizeof(struct sc_plan_file) || sh[i].sh_size > (1u << 30))
			continue;
		plan = malloc(sh[i].sh_size);
		if (plan && !read_at(fd, plan, sh[i].sh_size, sh[i].sh_offset)) {
			free(plan);
			plan = NULL;
		}
		if (plan)
			*size = sh[i].sh_size;
		break;
	}
out:
	free(strtab);
	free(sh);
	close(fd);
	return plan;
}
