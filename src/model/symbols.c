/* SPDX-License-Identifier: MIT */
/*
 * Load: a conversion resolves each distinct address once (typically thousands to a few
 * hundred thousand), so the cost that matters is per distinct address: one DWARF scope walk
 * (dwarf_getscopes) and one line-table lookup, then a cache hit for every later use.
 */
#define PR_FMT "symbols: "
#include "symbols.h"

#include "debuginfo.h"
#include "scopes.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"

/* From the C++ runtime (libstdc++); C linkage. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* One function symbol of an ELF file; the name points into libelf's copy of the file. */
struct elf_symbol {
	uint64_t addr;
	uint64_t end; /* size-less symbols: the end of their section */
	const char *name;
	bool sizeless;
	int index;   /* in the symbol table */
	bool global; /* STB_GLOBAL or STB_WEAK: another object can call it */
};

struct sc_elf {
	const char *name; /* basename, interned */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	bool usable;
	struct sc_hashmap cache; /* vaddr + 1 -> (first frame index << 8 | count) + 1 */
	struct sc_hashmap units; /* compilation unit offset + 1 -> index in scope_indexes + 1 */
	VEC(struct sc_scope_index *) scope_indexes;
	VEC(struct elf_symbol) symbols; /* function symbols by address; built on first use */
	bool symbols_loaded;
	/* .eh_frame_hdr's table of function starts (sorted, 8 bytes each, relative to
	 * hdr_vaddr), for code without symbols; looked for on first use. */
	const unsigned char *fde_table;
	size_t fde_count;
	uint64_t hdr_vaddr;
	bool fde_table_looked;
};

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = sc_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

void sc_symbolizer_init(struct sc_symbolizer *sym, struct sc_strtab *strings, bool inlines)
{
	memset(sym, 0, sizeof(*sym));
	sym->strings = strings;
	sym->inlines = inlines;
	sc_hashmap_init(&sym->by_key);
}

void sc_symbolizer_free(struct sc_symbolizer *sym)
{
	for (size_t i = 0; i < sym->elfs.n; i++) {
		struct sc_elf *e = sym->elfs.v[i];

		if (e->dwfl)
			dwfl_end(e->dwfl);
		sc_hashmap_free(&e->cache);
		sc_hashmap_free(&e->units);
		for (size_t k = 0; k < e->scope_indexes.n; k++)
			sc_scope_index_free(e->scope_indexes.v[k]);
		VEC_FREE(&e->scope_indexes);
		VEC_FREE(&e->symbols);
		free(e);
	}
	VEC_FREE(&sym->elfs);
	VEC_FREE(&sym->frames);
	for (size_t i = 0; i < sym->warnings.n; i++)
		free(sym->warnings.v[i]);
	VEC_FREE(&sym->warnings);
	sc_hashmap_free(&sym->by_key);
}

const char *sc_elf_name(const struct sc_elf *elf)
{
	return elf->name;
}

bool sc_elf_usable(const struct sc_elf *elf)
{
	return elf->usable;
}

static void open_elf(struct sc_symbolizer *sym, struct sc_elf *e, const char *path,
		     const char *open_path, const uint8_t *build_id, uint32_t build_id_len)
{
	const unsigned char *bits;
	GElf_Addr id_vaddr;
	int len;

	if (!open_path || access(open_path, R_OK)) {
		*VEC_PUSH(&sym->warnings) =
			sc_xasprintf("%s: cannot read (%s): its frames show as %s+0xOFFSET", path,
				     open_path ? strerror(errno) : "not recorded", e->name);
		return;
	}
	e->dwfl = dwfl_begin(&offline_callbacks);
	if (!e->dwfl)
		return;
	/* Base 0: the module's addresses are the file's own virtual addresses. */
	e->mod = dwfl_report_elf(e->dwfl, e->name, open_path, -1, 0, false);
	dwfl_report_end(e->dwfl, NULL, NULL);
	if (!e->mod) {
		*VEC_PUSH(&sym->warnings) = sc_xasprintf("%s: not a readable ELF file (%s)",
							 open_path, dwfl_errmsg(-1));
		return;
	}
	len = dwfl_module_build_id(e->mod, &bits, &id_vaddr);
	if (build_id_len && (len != (int)build_id_len || memcmp(bits, build_id, build_id_len))) {
		*VEC_PUSH(&sym->warnings) = sc_xasprintf(
			"%s changed since it was recorded (build-id differs): its frames show as "
			"%s+0xOFFSET",
			path, e->name);
		return;
	}
	e->usable = true;
}

struct sc_elf *sc_symbolizer_file(struct sc_symbolizer *sym, const char *path,
				  const char *open_path, const uint8_t *build_id,
				  uint32_t build_id_len)
{
	uint64_t key = sc_hash_bytes(path, strlen(path), sc_hash_bytes(build_id, build_id_len, 1));
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&sym->by_key, key, 0, &inserted);
	const char *base = strrchr(path, '/');
	struct sc_elf *e;

	if (!inserted)
		return sym->elfs.v[*slot - 1];
	e = sc_xcalloc(1, sizeof(*e));
	e->name = sc_strtab_intern(sym->strings, base ? base + 1 : path);
	sc_hashmap_init(&e->cache);
	sc_hashmap_init(&e->units);
	open_elf(sym, e, path, open_path, build_id, build_id_len);
	*VEC_PUSH(&sym->elfs) = e;
	*slot = sym->elfs.n;
	return e;
}

const char *sc_demangle(struct sc_strtab *strings, const char *name)
{
	const char *r;
	char *d;
	int status;

	if (!name)
		return NULL;
	if (name[0] != '_' || name[1] != 'Z')
		return sc_strtab_intern(strings, name);
	d = __cxa_demangle(name, NULL, NULL, &status);
	r = sc_strtab_intern(strings, d && !status ? d : name);
	free(d);
	return r;
}

static const char *demangled(struct sc_symbolizer *sym, const char *name)
{
	return sc_demangle(sym->strings, name);
}

/* A DIE's function name: the demangled linkage name where there is one (C++ gets its
 * namespaces and parameters), else DW_AT_name, following abstract origins. */
static const char *die_function_name(struct sc_symbolizer *sym, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));

	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (n)
		return demangled(sym, n);
	n = dwarf_diename(die);
	return n ? sc_strtab_intern(sym->strings, n) : NULL;
}

static const char *call_file(struct sc_symbolizer *sym, Dwarf_Die *cu, Dwarf_Die *inl)
{
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	Dwarf_Word idx;
	size_t nfiles;
	const char *f;

	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &idx) ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) || idx >= nfiles)
		return NULL;
	f = dwarf_filesrc(files, idx, NULL, NULL);
	return f ? sc_strtab_intern(sym->strings, f) : NULL;
}

/* The scope index of compilation unit `cu`, built on its first use. */
static struct sc_scope_index *unit_index(struct sc_elf *e, Dwarf_Die *cu)
{
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&e->units, dwarf_dieoffset(cu) + 1, 0, &inserted);

	if (inserted) {
		*VEC_PUSH(&e->scope_indexes) = sc_scope_index_build(cu);
		*slot = e->scope_indexes.n;
	}
	return e->scope_indexes.v[*slot - 1];
}

/* The compilation unit whose address ranges hold `pc`, read from every unit's DIE. */
static Dwarf_Die *unit_holding(struct sc_elf *e, Dwarf_Addr pc, Dwarf_Die *out)
{
	Dwarf_Addr bias;
	Dwarf *dw = dwfl_module_getdwarf(e->mod, &bias);
	Dwarf_Off off = 0, next;
	size_t header;

	while (dw && !dwarf_nextcu(dw, off, &next, &header, NULL, NULL, NULL)) {
		if (dwarf_offdie(dw, off + header, out) && dwarf_haspc(out, pc) == 1)
			return out;
		off = next;
	}
	return NULL;
}

/*
 * The unit of `vaddr` and its source line. libdwfl finds units by .debug_aranges, and
 * takes each entry to reach the next one: where the table leaves units out (Go's linker
 * writes none for Go's, only the C compiler's for cgo's files), an address of one of those
 * gets the unit before it, and that unit's last line (every function of a Go program built
 * with cgo was at gcc_mmap.c:37), or none below the first entry. A unit whose ranges do not
 * hold the address, or none, is replaced by the one that does, whose line is read there.
 */
static Dwarf_Die *unit_and_line(struct sc_symbolizer *sym, struct sc_elf *e, uint64_t vaddr,
				Dwarf_Addr *bias, Dwarf_Die *mem, const char **file, uint32_t *line)
{
	Dwarf_Die *cu = dwfl_module_addrdie(e->mod, vaddr, bias);
	const char *f = NULL;
	int l = 0;

	if (!cu && !dwfl_module_getdwarf(e->mod, bias))
		*bias = 0; /* no DWARF: unit_holding finds nothing */
	if (!cu || dwarf_haspc(cu, vaddr - *bias) == 0) {
		Dwarf_Line *dl;

		cu = unit_holding(e, vaddr - *bias, mem);
		dl = cu ? dwarf_getsrc_die(cu, vaddr - *bias) : NULL;
		if (dl) {
			f = dwarf_linesrc(dl, NULL, NULL);
			dwarf_lineno(dl, &l);
		}
	} else {
		Dwfl_Line *ln = dwfl_module_getsrc(e->mod, vaddr);

		if (ln)
			f = dwfl_lineinfo(ln, NULL, &l, NULL, NULL, NULL);
	}
	*file = f ? sc_strtab_intern(sym->strings, f) : NULL;
	*line = l > 0 ? (uint32_t)l : 0;
	return cu;
}

/* Push the chain for `vaddr`, innermost first, onto sym->frames; returns the count. */
static unsigned resolve_dwarf(struct sc_symbolizer *sym, struct sc_elf *e, uint64_t vaddr)
{
	const char *file;
	uint32_t line;
	Dwarf_Addr bias;
	Dwarf_Die mem;
	Dwarf_Die *cu = unit_and_line(sym, e, vaddr, &bias, &mem, &file, &line);
	Dwarf_Die *scopes = NULL;
	unsigned count = 0;
	int nscopes;

	if (!cu)
		goto out;
	nscopes = sc_scope_index_lookup(unit_index(e, cu), dwarf_cu_getdwarf(cu->cu), vaddr - bias,
					&scopes);
	for (int i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		if (tag == DW_TAG_subprogram || sym->inlines) {
			struct sc_symframe *f = VEC_PUSH(&sym->frames);

			f->func = die_function_name(sym, &scopes[i]);
			f->file = file ? file : "";
			f->line = line;
			f->inlined = tag == DW_TAG_inlined_subroutine;
			count++;
		}
		if (tag == DW_TAG_subprogram)
			break;
		/* The level above is where this one was inlined: its line is the call site. */
		Dwarf_Attribute attr;
		Dwarf_Word cl = 0;

		dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &cl);
		file = call_file(sym, cu, &scopes[i]);
		line = (uint32_t)cl;
	}
	free(scopes);
out:
	if (!count && file) {
		struct sc_symframe *f = VEC_PUSH(&sym->frames);

		f->func = NULL; /* filled from the symbol table by the caller */
		f->file = file;
		f->line = line;
		count = 1;
	}
	return count;
}

/*
 * The binary search table of .eh_frame_hdr (what the linker's --eh-frame-hdr writes for
 * unwinders): one pair of (function start, FDE address) per function, sorted by start.
 * Only the encoding every linker uses is read (4-byte signed offsets from the header's own
 * address); another leaves the table out.
 */
static void find_fde_table(struct sc_elf *e)
{
	Dwarf_Addr bias;
	Elf *elf = e->usable ? dwfl_module_getelf(e->mod, &bias) : NULL;
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	e->fde_table_looked = true;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;
		const unsigned char *b;
		size_t pos = 4, width;
		unsigned enc;
		uint32_t count;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".eh_frame_hdr"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < 12)
			return;
		b = d->d_buf;
		/* version 1; eh_frame_ptr (4 or 8 bytes, skipped); a 4-byte count; the table */
		enc = b[1] & 0x0f;
		width = enc == DW_EH_PE_udata8 || enc == DW_EH_PE_sdata8 ? 8 : 4;
		if (b[0] != 1 || b[1] == DW_EH_PE_omit || (b[2] & 0x0f) != DW_EH_PE_udata4 ||
		    b[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || d->d_size < pos + width + 4)
			return;
		pos += width;
		memcpy(&count, b + pos, 4);
		pos += 4;
		if (count > (d->d_size - pos) / 8)
			return;
		e->fde_table = b + pos;
		e->fde_count = count;
		e->hdr_vaddr = sh.sh_addr + bias;
		return;
	}
}

/* The start of the table entry for the function holding `vaddr`, or 0 with no table. */
static uint64_t fde_table_start(struct sc_elf *e, uint64_t vaddr)
{
	size_t lo = 0, hi;
	uint64_t found = 0;

	if (!e->fde_table_looked)
		find_fde_table(e);
	hi = e->fde_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int32_t rel;
		uint64_t start;

		memcpy(&rel, e->fde_table + mid * 8, 4);
		start = e->hdr_vaddr + (uint64_t)(int64_t)rel;
		if (start <= vaddr) {
			found = start;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return found;
}

/*
 * Where the function containing `vaddr` starts, for code without symbols: the unwind tables
 * (.eh_frame), which even stripped binaries keep, delimit every function. Naming frames by
 * their function's start keeps one function's samples together. The frame libdw finds for
 * an address covers only the instructions that share its unwind rules (a function that
 * pushes registers has several), so its start is the function's only where .eh_frame_hdr's
 * table of functions is missing. Returns vaddr if unknown.
 */
static uint64_t function_start(struct sc_elf *e, uint64_t vaddr)
{
	Dwarf_Addr bias, start, end;
	Dwarf_CFI *cfi;
	Dwarf_Frame *frame = NULL;
	bool signalp;
	uint64_t result = vaddr;

	if (!e->usable)
		return vaddr;
	cfi = dwfl_module_eh_cfi(e->mod, &bias);
	if (!cfi)
		cfi = dwfl_module_dwarf_cfi(e->mod, &bias);
	if (cfi && !dwarf_cfi_addrframe(cfi, vaddr - bias, &frame) &&
	    dwarf_frame_info(frame, &start, &end, &signalp) >= 0) {
		/* The function's entry in the table: the last to start at or before the
		 * frame's rows (functions do not overlap). */
		uint64_t fn = fde_table_start(e, start + bias);

		result = fn ? fn : start + bias;
	}
	free(frame);
	return result;
}

static int symbol_order(const void *a, const void *b)
{
	const struct elf_symbol *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address the lookup takes the last: a global name before a local one, then
	 * the longest, then the first in the table (as libdw's own lookup chooses). */
	if (x->global != y->global)
		return x->global ? 1 : -1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return y->index - x->index;
}

/*
 * The file's function symbols (.symtab, else .dynsym, plus any MiniDebugInfo), sorted by
 * address, for a binary search per address. libdw's own lookup (dwfl_module_addrinfo) scans
 * the whole table on every call, which took 15 s for the few thousand addresses of a PyTorch
 * run (libtorch_cuda.so has hundreds of thousands of symbols).
 */
static void load_symbols(struct sc_elf *e)
{
	int n = dwfl_module_getsymtab(e->mod);

	e->symbols_loaded = true;
	for (int i = 1; i < n; i++) {
		GElf_Sym s;
		GElf_Addr addr;
		GElf_Word shndx;
		GElf_Addr bias;
		Elf *elf;
		const char *name =
			dwfl_module_getsym_info(e->mod, i, &s, &addr, &shndx, &elf, &bias);
		int type = GELF_ST_TYPE(s.st_info);
		uint64_t end = addr + s.st_size;

		if (!name || !*name || shndx == SHN_UNDEF || shndx == SHN_ABS ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		if (!s.st_size) {
			GElf_Shdr shdr;
			Elf_Scn *scn = elf_getscn(elf, shndx);

			end = scn && gelf_getshdr(scn, &shdr) ? shdr.sh_addr + shdr.sh_size + bias
							      : addr;
		}
		*VEC_PUSH(&e->symbols) = (struct elf_symbol){
			.addr = addr,
			.end = end,
			.sizeless = !s.st_size,
			.index = i,
			.name = name,
			.global = GELF_ST_BIND(s.st_info) == STB_GLOBAL ||
				  GELF_ST_BIND(s.st_info) == STB_WEAK,
		};
	}
	if (e->symbols.n)
		qsort(e->symbols.v, e->symbols.n, sizeof(*e->symbols.v), symbol_order);
}

bool sc_elf_exports(struct sc_elf *e, const char *name)
{
	if (!e->usable)
		return false;
	if (!e->symbols_loaded)
		load_symbols(e);
	for (size_t i = 0; i < e->symbols.n; i++)
		if (e->symbols.v[i].global && !strcmp(e->symbols.v[i].name, name))
			return true;
	return false;
}

/*
 * The function symbol containing `vaddr`: the nearest one at or below it whose size covers
 * it, looking a few back for symbols nested in others; a size-less symbol (such as _init)
 * only when it is the nearest and in the same section.
 */
static const struct elf_symbol *symbol_at(struct sc_elf *e, uint64_t vaddr)
{
	size_t lo = 0, hi;

	if (!e->symbols_loaded)
		load_symbols(e);
	hi = e->symbols.n;
	while (lo < hi) { /* first symbol above vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (e->symbols.v[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, tries = 0; i > 0 && tries < 8; i--, tries++) {
		const struct elf_symbol *s = &e->symbols.v[i - 1];

		if (vaddr < s->end && (!s->sizeless || i == lo))
			return s;
	}
	return NULL;
}

unsigned sc_symbolize(struct sc_symbolizer *sym, struct sc_elf *e, uint64_t vaddr,
		      const struct sc_symframe **out)
{
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&e->cache, vaddr + 1, 0, &inserted);
	size_t first = sym->frames.n;
	unsigned count = 0;

	if (!inserted) {
		*out = &sym->frames.v[*slot >> 8];
		return (unsigned)(*slot & 0xff);
	}
	if (e->usable) {
		const struct elf_symbol *s = symbol_at(e, vaddr);
		const char *symname = s ? s->name : NULL;

		count = resolve_dwarf(sym, e, vaddr);
		if (count > 255)
			count = 255;
		if (count) {
			/* Outermost frame (the last pushed) falls back to the ELF symbol. */
			struct sc_symframe *outer = &sym->frames.v[first + count - 1];

			if (!outer->func)
				outer->func = demangled(sym, symname);
		} else if (symname) {
			struct sc_symframe *f = VEC_PUSH(&sym->frames);

			f->func = demangled(sym, symname);
			f->file = "";
			count = 1;
		}
		if (count && s)
			sym->frames.v[first + count - 1].exported = s->global;
	}
	if (!count || !sym->frames.v[first + count - 1].func) {
		char buf[600];

		if (!count) {
			VEC_PUSH(&sym->frames)->file = "";
			count = 1;
		}
		snprintf(buf, sizeof(buf), "%s+0x%llx", e->name,
			 (unsigned long long)function_start(e, vaddr));
		sym->frames.v[first + count - 1].func = sc_strtab_intern(sym->strings, buf);
	}
	/* Stored innermost first; callers want outermost first. */
	for (unsigned i = 0; i < count / 2; i++) {
		struct sc_symframe t = sym->frames.v[first + i];

		sym->frames.v[first + i] = sym->frames.v[first + count - 1 - i];
		sym->frames.v[first + count - 1 - i] = t;
	}
	for (unsigned i = 0; i < count; i++)
		if (!sym->frames.v[first + i].func)
			sym->frames.v[first + i].func = "??";
	*slot = (uint64_t)first << 8 | count;
	*out = &sym->frames.v[first];
	return count;
}
