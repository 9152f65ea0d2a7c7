/* SPDX-License-Identifier: MIT */
/*
 * The patch plan: what `syscope instrument` decided about a module's functions, written by
 * the analysis (src/instrument/, which decodes code with capstone) and read by the runtime
 * (src/runtime/sources/patching.c, which has no decoder). The runtime only copies and
 * re-targets the instructions described here, after checking that the bytes in memory are
 * the bytes the analysis saw; so a plan for another build of the file is refused function by
 * function, never applied wrongly.
 *
 * File layout (little-endian, every part 8-byte aligned):
 *   struct sc_plan_file
 *   then per module: struct sc_plan_module, its path (path_len bytes with the NUL, padded
 *   to 8), then nfuncs struct sc_plan_func sorted by address, nloops struct sc_plan_loop
 *   and nprobes struct sc_plan_probe (syscope instrument -l).
 */
#ifndef SYSCOPE_COMMON_PATCH_PLAN_H
#define SYSCOPE_COMMON_PATCH_PLAN_H

#include <stdint.h>

#define SC_PLAN_MAGIC "SCPLAN\0\1"
/* The section that carries a plan inside a rewritten file (`syscope instrument -o`). There
 * the plan has one module, whose path is empty (the file itself) and whose file_size is 0
 * (no identity to check: the bytes of each function still are). */
#define SC_PLAN_SECTION ".syscope_plan"
#define SC_PLAN_VERSION 2u

/* How one displaced instruction is rebuilt in the trampoline. */
enum sc_plan_insn_kind {
	SC_PLAN_COPY = 0,   /* position-independent: copied as is */
	SC_PLAN_RIPREL = 1, /* RIP-relative operand: copied, its disp32 (at byte `arg`) re-aimed */
	SC_PLAN_JMP = 2,    /* jmp rel8/rel32: re-emitted as jmp rel32 to `target` */
	SC_PLAN_JCC = 3,    /* jcc rel8/rel32 (condition `arg`): re-emitted as jcc rel32 */
	SC_PLAN_CALL = 4,   /* call rel32, the window's last instruction: re-emitted as a push of
			     * the original return address and a jmp to `target`, so the callee
			     * returns into the function itself */
};

#define SC_PLAN_MAX_INSNS 6
#define SC_PLAN_MAX_BYTES 24
/* A jmp rel32 is what replaces a function's first bytes. */
#define SC_PLAN_JMP_LEN 5

struct sc_plan_insn {
	uint8_t off;	/* from the patch start */
	uint8_t len;	/* bytes */
	uint8_t kind;	/* enum sc_plan_insn_kind */
	uint8_t arg;	/* RIPREL: offset of the disp32 in the instruction; JCC: condition code */
	int32_t target; /* JMP, JCC, CALL: target minus the function's address */
};

struct sc_plan_func {
	uint64_t addr;	    /* link-time address (the module's load bias is added at run time) */
	uint32_t size;	    /* bytes, from the symbol */
	uint16_t patch_off; /* where the jump goes: 0, or 4 after an endbr64 kept in place */
	uint8_t patch_len;  /* bytes displaced to the trampoline (>= SC_PLAN_JMP_LEN) */
	uint8_t ninsn;
	uint8_t orig[SC_PLAN_MAX_BYTES]; /* those bytes as the analysis read them */
	struct sc_plan_insn insn[SC_PLAN_MAX_INSNS];
};

struct sc_plan_module {
	uint64_t file_size; /* the file the plan was made from: size and modification time */
	int64_t mtime_ns;
	uint32_t nfuncs;
	uint32_t path_len; /* with the NUL, before padding */
	uint32_t is_main;  /* the program itself (else a shared library, matched by path) */
	uint32_t nloops;
	uint32_t nprobes;
	uint32_t reserved;
};

/* A loop recorded as a region: its code [head, end), in function `func` (index in the
 * module's functions). A function's loops are consecutive, outer before inner. */
struct sc_plan_loop {
	uint64_t head, end;
	uint32_t func;
	uint32_t reserved;
};

/* A loop probe of function `func`: entering the loops first_loop + i for each bit i of
 * `enters` (module loop indexes), leaving those of the function that do not contain it. The
 * window is planned like a function's entry (win.addr: where it goes; targets relative to
 * it). */
struct sc_plan_probe {
	uint32_t func;
	uint32_t first_loop;
	uint32_t enters;
	uint32_t reserved;
	struct sc_plan_func win;
};

struct sc_plan_file {
	char magic[8];
	uint32_t version;
	uint32_t nmodules;
};

#endif /* SYSCOPE_COMMON_PATCH_PLAN_H */
