/* SPDX-License-Identifier: MIT */
/*
 * `syscope instrument -o`: a copy of a program or library that carries its patch plan, so
 * that every run under syscope patches it at start-up without analyzing it again (the
 * runtime finds the plan in the loaded files: src/runtime/patch/embedded.c).
 *
 * Nothing that is loaded changes: the plan goes after the original bytes, followed by a
 * new section-name table (the old one plus SC_PLAN_SECTION) and a new section header
 * table (the old one plus the plan's header); the ELF header points at them. The loader
 * reads program headers only, so the copy runs exactly as the original, with or without
 * syscope.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "instrument.h"

static char *slurp(const char *path, size_t *size, mode_t *mode)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;

	if (fd < 0 || fstat(fd, &st))
		goto out;
	buf = sc_xrealloc(NULL, (size_t)st.st_size + 1);
	if (read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
		goto out;
	}
	*size = (size_t)st.st_size;
	*mode = st.st_mode & 07777;
out:
	if (fd >= 0)
		close(fd);
	return buf;
}

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

int sc_rewrite_with_plan(const char *in, const char *out, const struct sc_module_info *mod,
			 char *err, size_t errlen)
{
	size_t size = 0, plan_size = 0, names_at, names_size, plan_at, sh_at, total;
	char *file, *plan = NULL, *outbuf = NULL, *tmp = NULL;
	Elf64_Ehdr eh;
	const Elf64_Shdr *sh;
	Elf64_Shdr *nsh;
	mode_t mode = 0755;
	int fd = -1, rc = -1;

	file = slurp(in, &size, &mode);
	if (!file) {
		snprintf(err, errlen, "%s: %s", in, strerror(errno));
		return -1;
	}
	memcpy(&eh, file, size >= sizeof(eh) ? sizeof(eh) : 0);
	if (size < sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    !eh.e_shnum || eh.e_shnum >= SHN_LORESERVE - 1 || eh.e_shstrndx >= eh.e_shnum ||
	    eh.e_shoff > size || (size - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum) {
		snprintf(err, errlen, "%s: not a 64-bit ELF file with section headers", in);
		goto out;
	}
	sh = (const Elf64_Shdr *)(file + eh.e_shoff);
	if (sh[eh.e_shstrndx].sh_offset > size ||
	    sh[eh.e_shstrndx].sh_size > size - sh[eh.e_shstrndx].sh_offset) {
		snprintf(err, errlen, "%s: its section names are outside the file", in);
		goto out;
	}
	for (unsigned i = 0; i < eh.e_shnum; i++)
		if (sh[i].sh_name < sh[eh.e_shstrndx].sh_size &&
		    !strcmp(file + sh[eh.e_shstrndx].sh_offset + sh[i].sh_name, SC_PLAN_SECTION)) {
			snprintf(err, errlen,
				 "%s was written by syscope instrument -o already; instrument the "
				 "original file",
				 in);
			goto out;
		}
	plan = sc_plan_bytes(mod, &plan_size);
	if (!plan) {
		snprintf(err, errlen, "cannot build the patch plan");
		goto out;
	}
	/* Layout: original | plan | names | section headers, each 8-byte aligned. */
	plan_at = align8(size);
	names_at = align8(plan_at + plan_size);
	names_size = sh[eh.e_shstrndx].sh_size + sizeof(SC_PLAN_SECTION);
	sh_at = align8(names_at + names_size);
	total = sh_at + ((size_t)eh.e_shnum + 1) * sizeof(Elf64_Shdr);
	outbuf = sc_xcalloc(1, total);
	memcpy(outbuf, file, size);
	memcpy(outbuf + plan_at, plan, plan_size);
	memcpy(outbuf + names_at, file + sh[eh.e_shstrndx].sh_offset, sh[eh.e_shstrndx].sh_size);
	memcpy(outbuf + names_at + sh[eh.e_shstrndx].sh_size, SC_PLAN_SECTION,
	       sizeof(SC_PLAN_SECTION));
	nsh = (Elf64_Shdr *)(outbuf + sh_at);
	memcpy(nsh, sh, (size_t)eh.e_shnum * sizeof(Elf64_Shdr));
	nsh[eh.e_shstrndx].sh_offset = names_at;
	nsh[eh.e_shstrndx].sh_size = names_size;
	nsh[eh.e_shnum] = (Elf64_Shdr){
		.sh_name = (Elf64_Word)sh[eh.e_shstrndx].sh_size,
		.sh_type = SHT_PROGBITS,
		.sh_offset = plan_at,
		.sh_size = plan_size,
		.sh_addralign = 8,
	};
	eh.e_shoff = sh_at;
	eh.e_shnum++;
	memcpy(outbuf, &eh, sizeof(eh));
	tmp = sc_xasprintf("%s.tmp%d", out, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0 || write(fd, outbuf, total) != (ssize_t)total || fchmod(fd, mode) || close(fd) ||
	    rename(tmp, out)) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno ? errno : EIO));
		if (fd >= 0)
			unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	free(tmp);
	free(outbuf);
	free(plan);
	free(file);
	return rc;
}
