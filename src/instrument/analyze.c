/* SPDX-License-Identifier: MIT */
/*
 * Analysis of one ELF module for entry patching on x86-64.
 *
 * Functions come from .symtab (or .dynsym when the file is stripped). Each is decoded whole
 * with capstone: its instruction count, its loops (backward branches) and every direct
 * branch target are kept, because a branch into the bytes we replace would land in the
 * middle of our jump. The first instructions after an optional endbr64 (left in place, so
 * indirect calls still land on it) that cover five bytes are classified for the runtime:
 * copied, re-aimed (RIP-relative operands, relative jumps) or refused (calls, returns,
 * loops on rcx...). A function that cannot be patched safely gets a reason and is left
 * alone.
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/elf_dynamic.h"
#include "../common/strutil.h"
#include "analysis.h"

char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The target of a relative branch from its bytes, whatever its prefixes: rel8 or rel32 is
 * the instruction's last bytes. Returns false for anything that is not a direct branch. */
bool sc_direct_branch_target(const cs_insn *in, uint64_t *target)
{
	const uint8_t *b = in->bytes;
	size_t i = 0;
	int64_t rel;

	while (i < in->size && (b[i] == 0x66 || b[i] == 0xf2 || b[i] == 0xf3 || b[i] == 0x2e ||
				b[i] == 0x3e || (b[i] & 0xf0) == 0x40))
		i++;
	if (i >= in->size)
		return false;
	if (b[i] == 0xe8 || b[i] == 0xe9 ||
	    (b[i] == 0x0f && i + 1 < in->size && (b[i + 1] & 0xf0) == 0x80)) {
		int32_t r32;

		if (in->size < 4)
			return false;
		memcpy(&r32, b + in->size - 4, 4);
		rel = r32;
	} else if (b[i] == 0xeb || (b[i] & 0xf0) == 0x70 || (b[i] >= 0xe0 && b[i] <= 0xe3)) {
		rel = (int8_t)b[in->size - 1];
	} else {
		return false;
	}
	*target = in->address + in->size + (uint64_t)rel;
	return true;
}

/* Classify one instruction of the patch window into `pi`; NULL, or why it cannot move.
 * `last`: the window ends with it. */
static const char *classify(const cs_insn *in, uint64_t fn_addr, bool last, struct sc_plan_insn *pi)
{
	const cs_detail *d = in->detail;
	const cs_x86 *x = &d->x86;
	uint64_t target;

	for (unsigned g = 0; g < d->groups_count; g++) {
		switch (d->groups[g]) {
		case CS_GRP_RET:
		case CS_GRP_IRET:
			return "too short: it returns within the bytes a jump needs";
		case CS_GRP_CALL:
			if (last && in->bytes[0] == 0xe8 && in->size == 5 &&
			    sc_direct_branch_target(in, &target)) {
				pi->len = 5;
				pi->kind = SC_PLAN_CALL;
				pi->target = (int32_t)(int64_t)(target - fn_addr);
				return NULL;
			}
			return "a call within its first bytes, not at their end";
		case CS_GRP_INT:
			if (in->id != X86_INS_SYSCALL)
				return "a trap within its first bytes";
			break;
		default:
			break;
		}
	}
	pi->len = (uint8_t)in->size;
	if (sc_direct_branch_target(in, &target)) {
		uint8_t op = x->opcode[0];

		pi->target = (int32_t)(int64_t)(target - fn_addr);
		if (in->id == X86_INS_JMP) {
			pi->kind = SC_PLAN_JMP;
		} else if ((op & 0xf0) == 0x70 || (op == 0x0f && (x->opcode[1] & 0xf0) == 0x80)) {
			pi->kind = SC_PLAN_JCC;
			pi->arg = (uint8_t)((op == 0x0f ? x->opcode[1] : op) & 0x0f);
		} else {
			return "a loop or jrcxz within its first bytes";
		}
		return NULL;
	}
	for (unsigned g = 0; g < d->groups_count; g++)
		if (d->groups[g] == CS_GRP_BRANCH_RELATIVE)
			return "a relative branch that cannot move";
	for (unsigned o = 0; o < x->op_count; o++) {
		if (x->operands[o].type == X86_OP_MEM && x->operands[o].mem.base == X86_REG_RIP) {
			if (x->encoding.disp_size != 4 || !x->encoding.disp_offset)
				return "an unusual RIP-relative operand";
			pi->kind = SC_PLAN_RIPREL;
			pi->arg = x->encoding.disp_offset;
			return NULL;
		}
	}
	if (x->operands[0].type == X86_OP_REG && x->operands[0].reg == X86_REG_RIP)
		return "an instruction that reads the instruction pointer";
	pi->kind = SC_PLAN_COPY;
	return NULL;
}

const char *sc_plan_window_at(struct analysis *a, const uint8_t *code, uint64_t addr, size_t avail,
			      uint64_t base, struct sc_plan_func *p)
{
	cs_insn *in = cs_malloc(a->detail);
	const char *why = NULL;

	while (p->patch_len < SC_PLAN_JMP_LEN) {
		const uint8_t *at = code + p->patch_len;
		size_t left = avail - p->patch_len;
		uint64_t pc = addr + p->patch_len;
		struct sc_plan_insn *pi;

		if (left == 0) {
			why = "too short for a jump (5 bytes)";
			break;
		}
		if (p->ninsn == SC_PLAN_MAX_INSNS) {
			why = "too many instructions in its first bytes";
			break;
		}
		if (!cs_disasm_iter(a->detail, &at, &left, &pc, in)) {
			why = "its first bytes could not be decoded";
			break;
		}
		pi = &p->insn[p->ninsn];
		pi->off = (uint8_t)p->patch_len;
		why = classify(in, base, p->patch_len + in->size >= SC_PLAN_JMP_LEN, pi);
		if (why)
			break;
		p->ninsn++;
		p->patch_len = (uint8_t)(p->patch_len + in->size);
	}
	cs_free(in, 1);
	if (!why)
		memcpy(p->orig, code, p->patch_len);
	return why;
}

/* Plan the patch window of `fn` whose bytes are `code`: after an endbr64, kept in place. */
static const char *plan_window(struct analysis *a, struct sc_fn *fn, const uint8_t *code)
{
	struct sc_plan_func *p = &fn->plan;
	uint32_t off = fn->size >= 4 && !memcmp(code, endbr64, 4) ? 4 : 0;

	p->addr = fn->addr;
	p->size = fn->size;
	p->patch_off = (uint16_t)off;
	return sc_plan_window_at(a, code + off, fn->addr + off, fn->size - off, fn->addr, p);
}

/* Whether `in` makes `fn` more than straight-line code of its own: a call, a jump out of it
 * (a tail call) or through a register, a system call, or a string instruction that repeats.
 * A function with none of these and no loop runs at most its own instruction count a call. */
static bool leaves_or_repeats(const cs_insn *in, const struct sc_fn *fn, bool direct,
			      uint64_t target)
{
	if (in->id == X86_INS_CALL || in->id == X86_INS_SYSCALL || in->id == X86_INS_SYSENTER ||
	    in->id == X86_INS_INT)
		return true;
	if (direct) /* a jump, conditional or not, that leaves the function */
		return target < fn->addr || target >= fn->addr + fn->size;
	return in->id == X86_INS_JMP || !strncmp(in->mnemonic, "rep", 3);
}

/* Decode `fn` whole: count, loops, branch targets; then plan its window. */
static void analyze_function(struct analysis *a, uint32_t idx, const uint8_t *code)
{
	struct sc_fn *fn = &a->mod->fns.v[idx];
	struct fn_code *fc = &a->fns[idx];
	cs_insn *in = cs_malloc(a->fast);
	const uint8_t *at = code;
	size_t left = fn->size;
	uint64_t addr = fn->addr, target;
	const char *why;

	fc->code = code;
	while (left && cs_disasm_iter(a->fast, &at, &left, &addr, in)) {
		bool direct = sc_direct_branch_target(in, &target);

		fn->ninsn++;
		fn->ncalls += leaves_or_repeats(in, fn, direct, target);
		if (in->id == X86_INS_JMP || in->id == X86_INS_RET || in->id == X86_INS_UD2 ||
		    in->id == X86_INS_RETF)
			*VEC_PUSH(&fc->no_fall) = in->address + in->size;
		if (in->id == X86_INS_JMP && !direct)
			fc->indirect_jump = true;
		if (!direct)
			continue;
		if (target >= fn->addr && target < in->address && in->id != X86_INS_CALL)
			fn->nloops++;
		*VEC_PUSH(&a->branches) = (struct branch){ .target = target,
							   .from = in->address,
							   .from_end = in->address + in->size,
							   .fn = idx,
							   .call = in->id == X86_INS_CALL };
		*VEC_PUSH(&fc->own) = a->branches.v[a->branches.n - 1];
	}
	cs_free(in, 1);
	if (left) {
		fn->state = SC_FN_UNPATCHABLE;
		fn->reason = "part of it could not be decoded (data in code?)";
		return;
	}
	why = plan_window(a, fn, code);
	if (why) {
		fn->state = SC_FN_UNPATCHABLE;
		fn->reason = why;
	}
}

size_t sc_branches_into(const struct analysis *a, uint64_t lo, uint64_t hi, size_t *first)
{
	size_t l = 0, r = a->branches.n, end;

	while (l < r) {
		size_t m = (l + r) / 2;

		if (a->branches.v[m].target < lo)
			l = m + 1;
		else
			r = m;
	}
	for (end = l; end < a->branches.n && a->branches.v[end].target < hi; end++)
		;
	*first = l;
	return end - l;
}

static int cmp_branch(const void *x, const void *y)
{
	const struct branch *p = x, *q = y;

	return p->target < q->target ? -1 : p->target > q->target;
}

/* Refuse every function that some branch enters inside its patched bytes (or at its very
 * first byte, from inside itself: a loop that starts at the entry). */
static void check_branch_targets(struct analysis *a)
{
	struct sc_module_info *mod = a->mod;
	size_t b = 0;

	if (a->branches.n > 1)
		qsort(a->branches.v, a->branches.n, sizeof(*a->branches.v), cmp_branch);
	for (uint32_t i = 0; i < mod->fns.n; i++) {
		struct sc_fn *fn = &mod->fns.v[i];
		uint64_t end = fn->addr + fn->plan.patch_off + fn->plan.patch_len;

		while (b < a->branches.n && a->branches.v[b].target < fn->addr)
			b++;
		if (fn->state == SC_FN_UNPATCHABLE)
			continue;
		for (size_t k = b; k < a->branches.n && a->branches.v[k].target < end; k++) {
			const struct branch *br = &a->branches.v[k];

			if (br->target > fn->addr) {
				fn->state = SC_FN_UNPATCHABLE;
				fn->reason =
					br->fn == i ? "a jump into its first bytes"
						    : "another function jumps into its first bytes";
				break;
			}
			if (br->fn == i && !br->call) {
				fn->state = SC_FN_UNPATCHABLE;
				fn->reason = "a loop back to its entry";
				break;
			}
		}
	}
}

/* Sections whose functions are start-up glue, not the program's code. */
static bool glue_section(const char *name)
{
	static const char *const glue[] = { ".plt", ".plt.got", ".plt.sec", ".init", ".fini" };

	for (size_t i = 0; i < sizeof(glue) / sizeof(glue[0]); i++)
		if (name && !strcmp(name, glue[i]))
			return true;
	return false;
}

static int cmp_fn(const void *x, const void *y)
{
	const struct sc_fn *p = x, *q = y;

	if (p->addr != q->addr)
		return p->addr < q->addr ? -1 : 1;
	return strcmp(p->name, q->name);
}

static char *demangle(char *name)
{
	int status;
	char *d;

	if (name[0] != '_' || name[1] != 'Z')
		return name;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (!d || status) {
		free(d);
		return name;
	}
	return d;
}

/* The function symbols of `scn` (a symbol table) whose code is in an executable section. */
static void collect_symbols(struct analysis *a, Elf *elf, Elf_Scn *scn, size_t shstrndx)
{
	GElf_Shdr sh;
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!gelf_getshdr(scn, &sh) || !data || !sh.sh_entsize)
		return;
	n = sh.sh_size / sh.sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Shdr code;
		Elf_Scn *cs;
		const char *name;
		struct sc_fn *fn;

		if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    !sym.st_size || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
			continue;
		cs = elf_getscn(elf, sym.st_shndx);
		if (!cs || !gelf_getshdr(cs, &code) || !(code.sh_flags & SHF_EXECINSTR) ||
		    code.sh_type != SHT_PROGBITS || sym.st_value < code.sh_addr ||
		    sym.st_value + sym.st_size > code.sh_addr + code.sh_size)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		fn = VEC_PUSH(&a->mod->fns);
		fn->name = sc_xstrdup(name);
		fn->addr = sym.st_value;
		fn->size = (uint32_t)sym.st_size;
		if (glue_section(elf_strptr(elf, shstrndx, code.sh_name))) {
			fn->state = SC_FN_EXCLUDED;
			fn->reason = "start-up glue (.init, .fini, .plt)";
		} else if (strstr(name, ".cold")) {
			/* GCC's out-of-line cold blocks: a jump enters them, not a call, so there
			 * is no return address on top of the stack to catch. */
			fn->state = SC_FN_UNPATCHABLE;
			fn->reason = "the cold part of another function (entered by a jump)";
		}
		/* plan.addr doubles as the section index until the code is read. */
		fn->plan.addr = sym.st_shndx;
	}
}

/* Aliases share an address: keep one (the first name in order, so the result does not
 * depend on symbol table order). */
static void drop_aliases(struct sc_module_info *mod)
{
	size_t w = 0;

	if (mod->fns.n < 2)
		return;
	qsort(mod->fns.v, mod->fns.n, sizeof(*mod->fns.v), cmp_fn);
	for (size_t r = 0; r < mod->fns.n; r++) {
		if (w && mod->fns.v[w - 1].addr == mod->fns.v[r].addr) {
			free(mod->fns.v[r].name);
			continue;
		}
		mod->fns.v[w++] = mod->fns.v[r];
	}
	mod->fns.n = w;
}

/* The dynamic loader the file names (PT_INTERP), or NULL: without one the kernel starts it
 * without the loader (a static executable or a static PIE, for the program), so LD_PRELOAD
 * never reaches it. */
static char *interpreter(Elf *elf)
{
	size_t n, size;
	const char *raw = elf_rawfile(elf, &size);

	if (!raw || elf_getphdrnum(elf, &n))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP &&
		    ph.p_offset < size && ph.p_filesz <= size - ph.p_offset && ph.p_filesz > 1)
			return sc_xstrndup(raw + ph.p_offset, ph.p_filesz - 1);
	}
	return NULL;
}

/* DT_FLAGS_1 has DF_1_PIE: an executable, even without PT_INTERP (a static PIE). */
static bool visit_flags_1(Elf *elf, size_t strtab, const GElf_Dyn *dyn, void *pie)
{
	(void)elf;
	(void)strtab;
	if (dyn->d_tag != DT_FLAGS_1)
		return false;
	*(bool *)pie = (dyn->d_un.d_val & DF_1_PIE) != 0;
	return true;
}

static bool flagged_pie(Elf *elf)
{
	bool pie = false;

	sc_elf_each_dynamic(elf, visit_flags_1, &pie);
	return pie;
}

static int analyze_elf(struct analysis *a, Elf *elf, char *err, size_t errlen)
{
	struct sc_module_info *mod = a->mod;
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Ehdr eh;
	size_t shstrndx;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		size_t size;
		const char *raw = elf_rawfile(elf, &size);

		if (raw && size > 2 && raw[0] == '#' && raw[1] == '!') {
			int len = (int)strcspn(raw + 2, "\n");

			snprintf(err, errlen,
				 "%s: not an ELF file but a script for '%.*s'; instrument the "
				 "program that runs it (syscope instrument -- INTERPRETER %s)",
				 mod->path, len > 200 ? 200 : len, raw + 2, mod->path);
		} else {
			snprintf(err, errlen, "%s: not an ELF file", mod->path);
		}
		return -1;
	}
	if (eh.e_machine != EM_X86_64 || gelf_getclass(elf) != ELFCLASS64) {
		snprintf(err, errlen,
			 "%s: code for another architecture (ELF machine %u); syscope instrument "
			 "patches x86-64 code",
			 mod->path, eh.e_machine);
		return -1;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		snprintf(err, errlen, "%s: not an executable or shared library (ELF type %u)",
			 mod->path, eh.e_type);
		return -1;
	}
	mod->interp = interpreter(elf);
	mod->is_library = eh.e_type == ET_DYN && !mod->interp && !flagged_pie(elf);
	mod->is_static = mod->is_main && !mod->interp && !mod->is_library;
	if (elf_getshdrstrndx(elf, &shstrndx))
		shstrndx = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
	}
	mod->has_symtab = symtab != NULL;
	if (symtab || dynsym)
		collect_symbols(a, elf, symtab ? symtab : dynsym, shstrndx);
	drop_aliases(mod);
	a->fns = sc_xcalloc(mod->fns.n + 1, sizeof(*a->fns));
	for (uint32_t i = 0; i < mod->fns.n; i++) {
		struct sc_fn *fn = &mod->fns.v[i];
		Elf_Scn *cs = elf_getscn(elf, (size_t)fn->plan.addr);
		Elf_Data *d = cs ? elf_getdata(cs, NULL) : NULL;
		GElf_Shdr sh;

		fn->pretty = demangle(fn->name);
		fn->plan.addr = 0;
		if (!d || !gelf_getshdr(cs, &sh) || fn->addr - sh.sh_addr + fn->size > d->d_size) {
			fn->state = SC_FN_UNPATCHABLE;
			fn->reason = "its code is not in the file";
			continue;
		}
		analyze_function(a, i, (const uint8_t *)d->d_buf + (fn->addr - sh.sh_addr));
	}
	check_branch_targets(a);
	for (uint32_t i = 0; i < mod->fns.n; i++)
		if (mod->fns.v[i].nloops && mod->fns.v[i].state != SC_FN_UNPATCHABLE &&
		    a->fns[i].code)
			sc_find_loops(a, i);
	return 0;
}

int sc_analyze_module(const char *path, bool is_main, struct sc_module_info *mod, char *err,
		      size_t errlen)
{
	struct analysis a = { .mod = mod };
	int64_t t0 = now_ns();
	struct stat st;
	Elf *elf;
	int fd, rc = -1;

	memset(mod, 0, sizeof(*mod));
	mod->path = sc_xstrdup(path);
	mod->is_main = is_main;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	mod->file_size = (uint64_t)st.st_size;
	mod->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		snprintf(err, errlen, "%s: not an ELF file (%s)", path, elf_errmsg(-1));
		close(fd);
		return -1;
	}
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &a.fast) != CS_ERR_OK ||
	    cs_open(CS_ARCH_X86, CS_MODE_64, &a.detail) != CS_ERR_OK) {
		snprintf(err, errlen, "capstone could not start (x86-64 support missing?)");
	} else {
		cs_option(a.detail, CS_OPT_DETAIL, CS_OPT_ON);
		rc = analyze_elf(&a, elf, err, errlen);
	}
	if (a.fast)
		cs_close(&a.fast);
	if (a.detail)
		cs_close(&a.detail);
	VEC_FREE(&a.branches);
	for (size_t i = 0; a.fns && i < mod->fns.n; i++) {
		VEC_FREE(&a.fns[i].no_fall);
		VEC_FREE(&a.fns[i].own);
	}
	free(a.fns);
	elf_end(elf);
	close(fd);
	mod->decode_ns = (uint64_t)(now_ns() - t0);
	return rc;
}

void sc_module_info_free(struct sc_module_info *mod)
{
	for (size_t i = 0; i < mod->fns.n; i++) {
		if (mod->fns.v[i].pretty != mod->fns.v[i].name)
			free(mod->fns.v[i].pretty);
		free(mod->fns.v[i].name);
		VEC_FREE(&mod->fns.v[i].loops);
		VEC_FREE(&mod->fns.v[i].probes);
	}
	VEC_FREE(&mod->fns);
	free(mod->path);
	free(mod->interp);
	memset(mod, 0, sizeof(*mod));
}
