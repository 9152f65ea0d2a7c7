/* SPDX-License-Identifier: MIT */
/*
 * Telling a program with the CUDA runtime linked in from a driver-API program
 * (src/gpu/cuda/static_runtime.c), without a GPU: nvcc's fat-binary sections are found in the
 * fixture built as nvcc builds by default (argv[1], when nvcc was there), in no ordinary
 * program, file that is not ELF or missing file; this test's own call chain carries none.
 * A synthetic ELF file of more than 65 279 sections (SHN_XINDEX: the count in section 0's
 * sh_size, the name table's index in its sh_link) is read as well as a small one.
 */
#include <elf.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gpu/cuda/static_runtime.h"

#define MANY_SECTIONS 70000u /* past SHN_LORESERVE (65 280) */

/* An ELF file of `n` sections, the last but one named `name`, the last the name table; with
 * `extended`, its count and that index only in section 0 (the form past 65 279 sections).
 * Sparse: only the headers that are not all zero are written. */
static bool write_elf(const char *path, uint32_t n, const char *name, bool extended)
{
	static const char strtab[] = "\0.shstrtab\0";
	Elf64_Ehdr eh = { .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB,
				       EV_CURRENT },
			  .e_type = ET_EXEC,
			  .e_machine = EM_X86_64,
			  .e_version = EV_CURRENT,
			  .e_ehsize = sizeof(Elf64_Ehdr),
			  .e_shoff = sizeof(Elf64_Ehdr),
			  .e_shentsize = sizeof(Elf64_Shdr),
			  .e_shnum = extended ? 0 : (Elf64_Half)n,
			  .e_shstrndx = extended ? SHN_XINDEX : (Elf64_Half)(n - 1) };
	Elf64_Shdr sh0 = { .sh_size = extended ? n : 0, .sh_link = extended ? n - 1 : 0 };
	uint64_t names_at = sizeof(eh) + (uint64_t)n * sizeof(Elf64_Shdr);
	Elf64_Shdr named = { .sh_name = sizeof(strtab) - 1, .sh_type = SHT_PROGBITS };
	Elf64_Shdr table = { .sh_name = 1,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = names_at,
			     .sh_size = sizeof(strtab) - 1 + strlen(name) + 1 };
	FILE *f = fopen(path, "wb");
	bool ok = f && fwrite(&eh, sizeof(eh), 1, f) == 1 && fwrite(&sh0, sizeof(sh0), 1, f) == 1 &&
		  !fseek(f, (long)(sizeof(eh) + (n - 2) * sizeof(Elf64_Shdr)), SEEK_SET) &&
		  fwrite(&named, sizeof(named), 1, f) == 1 &&
		  fwrite(&table, sizeof(table), 1, f) == 1 &&
		  fwrite(strtab, sizeof(strtab) - 1, 1, f) == 1 &&
		  fwrite(name, strlen(name) + 1, 1, f) == 1;

	return f && !fclose(f) && ok;
}

static void check_many_sections(void)
{
	char path[] = "/tmp/syscope-elf-XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	CHECK(write_elf(path, MANY_SECTIONS, ".nv_fatbin", true));
	CHECK(cuda_elf_has_section(path, ".nv_fatbin"));
	CHECK(cuda_elf_has_section(path, ".shstrtab"));
	CHECK(!cuda_elf_has_section(path, ".nvFatBinSegment"));
	CHECK(write_elf(path, 12, ".nvFatBinSegment", false)); /* the ordinary form, alike */
	CHECK(cuda_elf_has_section(path, ".nvFatBinSegment"));
	CHECK(!cuda_elf_has_section(path, ".nv_fatbin"));
	CHECK(write_elf(path, 12, ".nv_fatbin", true)); /* extended form of a small count */
	CHECK(cuda_elf_has_section(path, ".nv_fatbin"));
	unlink(path);
}

int main(int argc, char **argv)
{
	void *pcs[32];
	char file[512] = "";
	int n = backtrace(pcs, 32);

	if (argc > 1) {
		CHECK(cuda_elf_has_section(argv[1], ".nv_fatbin"));
		CHECK(cuda_elf_has_section(argv[1], ".nvFatBinSegment"));
		CHECK(cuda_elf_has_section(argv[1], ".text"));
	}
	CHECK(cuda_elf_has_section("/proc/self/exe", ".text"));
	CHECK(!cuda_elf_has_section("/proc/self/exe", ".nv_fatbin"));
	CHECK(!cuda_elf_has_section("/proc/self/exe", ".nv_fatbi"));
	CHECK(!cuda_elf_has_section("/proc/self/cmdline", ".text")); /* not ELF */
	CHECK(!cuda_elf_has_section("/nonexistent/syscope", ".text"));
	CHECK(n > 1);
	CHECK(!cuda_static_runtime_starts(pcs, n, file, sizeof(file)));
	CHECK(!file[0]);
	check_many_sections();
	return check_report("test_cuda_static_runtime");
}
