/* SPDX-License-Identifier: MIT */
/*
 * Symbols of a loaded ELF object, looked up in its mapped dynamic symbol table through its
 * GNU or SysV hash table: no dlsym (which cannot see objects loaded RTLD_LOCAL, and is not
 * for signal handlers). Reads only the object's own mapped memory; async-signal-safe.
 */
#ifndef SYSCOPE_RUNTIME_PYTHON_DYNSYM_H
#define SYSCOPE_RUNTIME_PYTHON_DYNSYM_H

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_dynsym {
	uintptr_t base; /* load bias */
	const ElfW(Sym) * symtab;
	const char *strtab;
	const uint32_t *gnu_hash; /* either one, or both NULL (no table: nothing found) */
	const uint32_t *sysv_hash;
};

/* The tables of a loaded object (a dl_iterate_phdr entry); false when it has none. */
bool rt_dynsym_open(struct rt_dynsym *d, const struct dl_phdr_info *info);
/* The same from an object's dynamic section (a link_map's l_ld) and load bias. */
bool rt_dynsym_open_dynamic(struct rt_dynsym *d, uintptr_t base, const ElfW(Dyn) * dyn);
/* The number of entries of its symbol table, read off its hash table. */
size_t rt_dynsym_count(const struct rt_dynsym *d);
/* The address of a defined symbol `name`, or 0; its size in *size when asked. */
uintptr_t rt_dynsym_lookup(const struct rt_dynsym *d, const char *name, uint64_t *size);

#endif /* SYSCOPE_RUNTIME_PYTHON_DYNSYM_H */
