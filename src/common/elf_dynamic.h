/* SPDX-License-Identifier: MIT */
/*
 * The entries of an ELF file's dynamic section (DT_NEEDED, DT_FLAGS_1...), read through
 * libelf from the section headers.
 */
#ifndef SYSCOPE_COMMON_ELF_DYNAMIC_H
#define SYSCOPE_COMMON_ELF_DYNAMIC_H

#include <gelf.h>
#include <stdbool.h>

/*
 * Called for each dynamic entry; `strtab` is the section index of the dynamic string table,
 * for elf_strptr(elf, strtab, dyn->d_un.d_val). Returning true stops the walk.
 */
typedef bool (*sc_elf_dynamic_visit)(Elf *elf, size_t strtab, const GElf_Dyn *dyn, void *arg);

/* Visits `elf`'s dynamic entries in order; true when a visit stopped the walk. */
bool sc_elf_each_dynamic(Elf *elf, sc_elf_dynamic_visit visit, void *arg);

#endif /* SYSCOPE_COMMON_ELF_DYNAMIC_H */
