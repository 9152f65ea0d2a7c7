/* SPDX-License-Identifier: MIT */
/*
 * Offline symbolization with elfutils: an address in an ELF file becomes its chain of
 * functions, outermost first (the real function, then the functions inlined into it), each
 * with the source file and line where that level is. Results are cached per file and
 * address; each file is opened once for all processes that mapped it.
 *
 * Fallbacks, in order: DWARF (function, file, line, inlines), the ELF symbol table (function
 * only, e.g. stripped binaries that kept .dynsym), then "module+0xoffset".
 */
#ifndef SYSCOPE_MODEL_SYMBOLS_H
#define SYSCOPE_MODEL_SYMBOLS_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/hashmap.h"
#include "../common/vec.h"
#include "strtab.h"

struct sc_symframe {
	const char *func; /* interned; demangled */
	const char *file; /* interned; "" when unknown */
	uint32_t line;	  /* 0 when unknown */
	bool inlined;	  /* this level was inlined into the one before it */
	bool exported; /* outermost level: its ELF symbol is global (another object can call it) */
	const char *module; /* interned; set in imported frames only (the file is not at hand) */
};

struct sc_elf; /* one opened ELF file */

struct sc_symbolizer {
	struct sc_strtab *strings;
	struct sc_hashmap by_key; /* hash(path, build id) -> elf index + 1 */
	VEC(struct sc_elf *) elfs;
	VEC(struct sc_symframe) frames; /* resolved chains, back to back */
	bool inlines;			/* report inline frames */
	VEC(char *) warnings;
};

void sc_symbolizer_init(struct sc_symbolizer *sym, struct sc_strtab *strings, bool inlines);
void sc_symbolizer_free(struct sc_symbolizer *sym);

/*
 * The file recorded at `path` with `build_id` (may be empty), read from `open_path` (the
 * path to open; differs for the vDSO or relative paths). Never NULL: a file that cannot be
 * read yields an object that symbolizes to "name+0xoffset", and a warning is kept.
 */
struct sc_elf *sc_symbolizer_file(struct sc_symbolizer *sym, const char *path,
				  const char *open_path, const uint8_t *build_id,
				  uint32_t build_id_len);

/*
 * Resolve `vaddr` (an address in the file's own address space: runtime address minus load
 * bias). Sets *out to the chain, outermost first, and returns its length (>= 1). The
 * pointer is valid until the next call.
 */
unsigned sc_symbolize(struct sc_symbolizer *sym, struct sc_elf *elf, uint64_t vaddr,
		      const struct sc_symframe **out);

/* `name` demangled if it is a mangled C++ name, interned in `strings`. */
const char *sc_demangle(struct sc_strtab *strings, const char *name);

/* Whether the file defines a global (or weak) function symbol `name`. Scans the whole table:
 * for rare lookups (the function a syscope wrapper stands for). */
bool sc_elf_exports(struct sc_elf *elf, const char *name);

/* Short name of the file ("libc.so.6"), for frames without symbols. */
const char *sc_elf_name(const struct sc_elf *elf);
bool sc_elf_usable(const struct sc_elf *elf);

#endif /* SYSCOPE_MODEL_SYMBOLS_H */
