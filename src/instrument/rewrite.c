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

#include "../common/safe_output.h"
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

#define PAGE 4096u

/* The file offset of virtual address `va` through the PT_LOAD that maps it, or 0. */
static uint64_t file_offset(const Elf64_Phdr *ph, unsigned n, uint64_t va, uint64_t len)
{
	for (unsigned i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && va >= ph[i].p_vaddr &&
		    va + len <= ph[i].p_vaddr + ph[i].p_filesz)
			return ph[i].p_offset + (va - ph[i].p_vaddr);
	return 0;
}

char *sc_elf_soname(const char *path)
{
	size_t size = 0;
	mode_t mode;
	char *buf = slurp(path, &size, &mode), *name = NULL;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;
	const Elf64_Phdr *ph;
	const Elf64_Dyn *dyn = NULL;
	uint64_t strtab = 0, strsz = 0, soname = UINT64_MAX, n = 0, off;

	if (!buf || size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    eh->e_phoff > size || (size - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum)
		goto out;
	ph = (const Elf64_Phdr *)(buf + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC && ph[i].p_offset + ph[i].p_filesz <= size) {
			dyn = (const Elf64_Dyn *)(buf + ph[i].p_offset);
			n = ph[i].p_filesz / sizeof(Elf64_Dyn);
		}
	for (uint64_t i = 0; dyn && i < n && dyn[i].d_tag != DT_NULL; i++) {
		if (dyn[i].d_tag == DT_STRTAB)
			strtab = dyn[i].d_un.d_ptr;
		else if (dyn[i].d_tag == DT_STRSZ)
			strsz = dyn[i].d_un.d_val;
		else if (dyn[i].d_tag == DT_SONAME)
			soname = dyn[i].d_un.d_val;
	}
	off = strtab && strsz ? file_offset(ph, eh->e_phnum, strtab, strsz) : 0;
	if (off && soname < strsz && off + strsz <= size &&
	    memchr(buf + off + soname, '\0', strsz - soname) && buf[off + soname] &&
	    !strchr(buf + off + soname, '/'))
		name = sc_xstrdup(buf + off + soname);
out:
	free(buf);
	return name;
}

/*
 * Make a program load `runtime` by itself: a new loaded segment holds a copy of its dynamic
 * string table with the runtime's path added, and a copy of its dynamic section with a
 * DT_NEEDED for it first (loaded right after the program, its functions come before the C
 * library's, as with LD_PRELOAD). The segment takes the program header of a PT_NOTE the
 * loader does not need (the one PT_GNU_PROPERTY repeats, else the last), moved behind the
 * last PT_LOAD; PT_DYNAMIC points at the new dynamic section. The old tables stay where
 * they are, unused. `*buf` (the file, `*size` bytes) grows. Returns false with `err` set
 * when the program has no such room (the copy then runs instrumented under syscope run
 * only).
 */
static bool add_runtime_needed(char **buf, size_t *size, const char *runtime, char *err,
			       size_t errlen)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)*buf;
	Elf64_Phdr *ph;
	int dyn = -1, note = -1, prop = -1, last_load = -1;
	uint64_t strtab = 0, strsz = 0, str_off, top = 0, seg_off, seg_va, dyn_n;
	size_t rlen = strlen(runtime) + 1, dynstr_size, seg_size;
	const Elf64_Dyn *old;
	char *seg;

	if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > *size ||
	    (*size - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum) {
		snprintf(err, errlen, "its program headers are outside the file");
		return false;
	}
	ph = (Elf64_Phdr *)(*buf + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = i;
		else if (ph[i].p_type == PT_GNU_PROPERTY)
			prop = i;
		else if (ph[i].p_type == PT_LOAD) {
			last_load = i;
			if (ph[i].p_vaddr + ph[i].p_memsz > top)
				top = ph[i].p_vaddr + ph[i].p_memsz;
		}
	}
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_NOTE &&
		    (note < 0 || (prop >= 0 && ph[i].p_offset == ph[prop].p_offset)))
			note = i;
	if (dyn < 0 || note < 0 || last_load < 0) {
		snprintf(err, errlen, "no dynamic section, or no note header to reuse");
		return false;
	}
	old = (const Elf64_Dyn *)(*buf + ph[dyn].p_offset);
	dyn_n = ph[dyn].p_filesz / sizeof(Elf64_Dyn);
	if (ph[dyn].p_offset + ph[dyn].p_filesz > *size) {
		snprintf(err, errlen, "its dynamic section is outside the file");
		return false;
	}
	for (uint64_t i = 0; i < dyn_n && old[i].d_tag != DT_NULL; i++) {
		if (old[i].d_tag == DT_STRTAB)
			strtab = old[i].d_un.d_ptr;
		else if (old[i].d_tag == DT_STRSZ)
			strsz = old[i].d_un.d_val;
	}
	str_off = strtab && strsz ? file_offset(ph, eh->e_phnum, strtab, strsz) : 0;
	if (!str_off) {
		snprintf(err, errlen, "its dynamic string table was not found");
		return false;
	}
	/* The segment: page-aligned at the end of the file, above every address in use. */
	seg_off = (*size + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	seg_va = (top + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	dynstr_size = align8(strsz + rlen);
	seg_size = dynstr_size + (dyn_n + 1) * sizeof(Elf64_Dyn);
	*buf = sc_xrealloc(*buf, seg_off + seg_size);
	memset(*buf + *size, 0, seg_off + seg_size - *size);
	eh = (Elf64_Ehdr *)*buf;
	ph = (Elf64_Phdr *)(*buf + eh->e_phoff);
	old = (const Elf64_Dyn *)(*buf + ph[dyn].p_offset);
	seg = *buf + seg_off;
	memcpy(seg, *buf + str_off, strsz);
	memcpy(seg + strsz, runtime, rlen);
	{
		Elf64_Dyn *nd = (Elf64_Dyn *)(seg + dynstr_size);
		uint64_t k = 0;

		nd[k].d_tag = DT_NEEDED;
		nd[k++].d_un.d_val = strsz;
		for (uint64_t i = 0; i < dyn_n; i++) {
			nd[k] = old[i];
			if (nd[k].d_tag == DT_STRTAB)
				nd[k].d_un.d_ptr = seg_va;
			else if (nd[k].d_tag == DT_STRSZ)
				nd[k].d_un.d_val = strsz + rlen;
			k++;
			if (old[i].d_tag == DT_NULL)
				break;
		}
	}
	ph[dyn].p_offset = seg_off + dynstr_size;
	ph[dyn].p_vaddr = ph[dyn].p_paddr = seg_va + dynstr_size;
	ph[dyn].p_filesz = ph[dyn].p_memsz = (dyn_n + 1) * sizeof(Elf64_Dyn);
	/* The note's header becomes the new PT_LOAD, right after the last PT_LOAD (loads stay
	 * in address order, as loaders expect). */
	{
		Elf64_Phdr load = { .p_type = PT_LOAD,
				    .p_flags = PF_R | PF_W,
				    .p_offset = seg_off,
				    .p_vaddr = seg_va,
				    .p_paddr = seg_va,
				    .p_filesz = seg_size,
				    .p_memsz = seg_size,
				    .p_align = PAGE };
		int at = note;

		if (note < last_load) {
			memmove(&ph[note], &ph[note + 1], (size_t)(last_load - note) * sizeof(*ph));
			at = last_load;
		} else {
			memmove(&ph[last_load + 2], &ph[last_load + 1],
				(size_t)(note - last_load - 1) * sizeof(*ph));
			at = last_load + 1;
		}
		ph[at] = load;
	}
	*size = seg_off + seg_size;
	return true;
}

/* Whether an ELF file's section headers name SC_PLAN_SECTION: a copy instrument -o wrote. */
static bool carries_plan(const char *file, size_t size)
{
	Elf64_Ehdr eh;
	const Elf64_Shdr *sh;

	if (size < sizeof(eh))
		return false;
	memcpy(&eh, file, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum ||
	    eh.e_shoff > size || (size - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum)
		return false;
	sh = (const Elf64_Shdr *)(file + eh.e_shoff);
	if (sh[eh.e_shstrndx].sh_offset > size ||
	    sh[eh.e_shstrndx].sh_size > size - sh[eh.e_shstrndx].sh_offset)
		return false;
	for (unsigned i = 0; i < eh.e_shnum; i++)
		if (sh[i].sh_name < sh[eh.e_shstrndx].sh_size &&
		    sh[eh.e_shstrndx].sh_size - sh[i].sh_name >= sizeof(SC_PLAN_SECTION) &&
		    !memcmp(file + sh[eh.e_shstrndx].sh_offset + sh[i].sh_name, SC_PLAN_SECTION,
			    sizeof(SC_PLAN_SECTION)))
			return true;
	return false;
}

/* An existing regular file at `out` that instrument -o wrote may be replaced. */
static bool written_by_us(const char *out)
{
	struct stat st;
	size_t size = 0;
	mode_t mode;
	char *file;
	bool ours;

	if (lstat(out, &st) || !S_ISREG(st.st_mode))
		return false;
	file = slurp(out, &size, &mode);
	ours = file && carries_plan(file, size);
	free(file);
	return ours;
}

int sc_rewrite_with_plan(const char *in, const char *out, const struct sc_module_info *mod,
			 const char *runtime, char *err, size_t errlen)
{
	size_t size = 0, plan_size = 0, names_at, names_size, plan_at, sh_at, total;
	char *file, *plan = NULL, *outbuf = NULL;
	Elf64_Ehdr eh;
	const Elf64_Shdr *sh;
	Elf64_Shdr *nsh;
	mode_t mode = 0755;
	int rc = -1;

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
	if (carries_plan(file, size)) {
		snprintf(err, errlen,
			 "%s was written by syscope instrument -o already; instrument the "
			 "original file",
			 in);
		goto out;
	}
	if (runtime && !mod->is_library) {
		char why[256];

		if (!add_runtime_needed(&file, &size, runtime, why, sizeof(why)))
			fprintf(stderr,
				"syscope: warning: %s: %s; the copy runs instrumented under "
				"'syscope run' only\n",
				in, why);
		sh = (const Elf64_Shdr *)(file + eh.e_shoff);
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
	/* Never through a link or into a device (as root, -o /dev/null replaced the device
	 * node); a file syscope did not write only with --force. */
	if (sc_out_write_file(out, outbuf, total, mode,
			      SC_OUT_NO_MANIFEST | (written_by_us(out) ? SC_OUT_OURS : 0), err,
			      errlen))
		goto out;
	rc = 0;
out:
	free(outbuf);
	free(plan);
	free(file);
	return rc;
}
