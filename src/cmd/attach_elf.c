/* SPDX-License-Identifier: MIT */
/*
 * syscope attach: where things are in the target. /proc/PID/maps for the objects it has
 * loaded and their addresses; their files' dynamic symbols (libelf) for a function's offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"

/* Start of the mapping at file offset 0 of the first object whose path ends with `suffix`,
 * and that path. */
static uint64_t find_mapping(pid_t pid, const char *suffix, char *path, size_t cap)
{
	char maps[64], line[4096 + 128];
	FILE *f;
	uint64_t base = 0;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "re");
	if (!f)
		return 0;
	while (!base && fgets(line, sizeof(line), f)) {
		unsigned long long lo, off;
		char *file = strchr(line, '/');
		size_t len;

		if (!file || sscanf(line, "%llx-%*x %*s %llx", &lo, &off) != 2 || off)
			continue;
		file[strcspn(file, "\n")] = '\0';
		len = strlen(file);
		if (len >= strlen(suffix) && !strcmp(file + len - strlen(suffix), suffix)) {
			base = lo;
			snprintf(path, cap, "%.*s", (int)cap - 1, file);
		}
	}
	fclose(f);
	return base;
}

int sc_attach_code_ranges(pid_t pid, const char *suffix, struct sc_code_range *out, int max)
{
	char maps[64], line[4096 + 128];
	FILE *f;
	int n = 0;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "re");
	while (f && n < max && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		char perms[8], *file = strchr(line, '/');
		size_t len;

		if (!file || sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3 || perms[2] != 'x')
			continue;
		file[strcspn(file, "\n")] = '\0';
		len = strlen(file);
		if (len >= strlen(suffix) && !strcmp(file + len - strlen(suffix), suffix))
			out[n++] = (struct sc_code_range){ lo, hi };
	}
	if (f)
		fclose(f);
	return n;
}

bool sc_attach_maps_has(pid_t pid, const char *needle)
{
	char maps[64], line[4096 + 128];
	FILE *f;
	bool found = false;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "re");
	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* The offset of defined function `symbol` from the object's load address: its value less
 * the lowest PT_LOAD's page-aligned address. 0 when absent. */
static uint64_t symbol_offset(Elf *elf, const char *symbol)
{
	GElf_Ehdr eh;
	uint64_t first_load = UINT64_MAX, value = 0;
	Elf_Scn *scn = NULL;

	if (!gelf_getehdr(elf, &eh))
		return 0;
	for (size_t i = 0; i < eh.e_phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_vaddr < first_load)
			first_load = ph.p_vaddr & ~(uint64_t)0xfff;
	}
	while (!value && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && !value; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (name && !strcmp(name, symbol))
				value = sym.st_value;
		}
	}
	return value && first_load != UINT64_MAX ? value - first_load : 0;
}

uint64_t sc_attach_symbol(pid_t pid, const char *path_suffix, const char *symbol,
			  char err[SC_ATTACH_ERR])
{
	char path[4096], in_target[4200];
	uint64_t base = find_mapping(pid, path_suffix, path, sizeof(path)), off = 0;
	Elf *elf;
	int fd;

	if (!base) {
		snprintf(err, SC_ATTACH_ERR, "process %d has no %s loaded", (int)pid, path_suffix);
		return 0;
	}
	/* The file as the target sees it (another mount namespace: a container). */
	snprintf(in_target, sizeof(in_target), "/proc/%d/root%s", (int)pid, path);
	fd = open(in_target, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, SC_ATTACH_ERR, "cannot read %.400s: %s", path, strerror(errno));
		return 0;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf)
		off = symbol_offset(elf, symbol);
	if (elf)
		elf_end(elf);
	close(fd);
	if (!off) {
		snprintf(err, SC_ATTACH_ERR, "%.400s has no function %.64s", path, symbol);
		return 0;
	}
	return base + off;
}

uint64_t sc_attach_file_symbol(const char *path, const char *symbol, char err[SC_ATTACH_ERR])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t value = 0;
	Elf *elf;

	if (fd < 0) {
		snprintf(err, SC_ATTACH_ERR, "cannot read %.400s: %s", path, strerror(errno));
		return 0;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf) {
		/* A shared library's first PT_LOAD is at 0: the offset is the value. */
		value = symbol_offset(elf, symbol);
		elf_end(elf);
	}
	close(fd);
	if (!value)
		snprintf(err, SC_ATTACH_ERR, "%.400s has no function %.64s", path, symbol);
	return value;
}
