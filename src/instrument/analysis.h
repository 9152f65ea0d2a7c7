/* SPDX-License-Identifier: MIT */
/*
 * Internals of the analysis shared by analyze.c (functions, their entry windows) and
 * loops.c (loop regions inside them).
 */
#ifndef SYSCOPE_INSTRUMENT_ANALYSIS_H
#define SYSCOPE_INSTRUMENT_ANALYSIS_H

#include <capstone/capstone.h>

#include "instrument.h"

/* A direct branch found while decoding. */
struct branch {
	uint64_t target;
	uint64_t from, from_end; /* the branch instruction */
	uint32_t fn;		 /* index of the function it is in */
	bool call;		 /* a call: to a function's entry, recursion is fine */
};

/* What the whole-function pass saw of one function, for loops.c. */
struct fn_code {
	const uint8_t *code;	/* its bytes (valid while the ELF is open) */
	bool indirect_jump;	/* a computed jump (jump table...): loops cannot be followed */
	VEC(uint64_t) no_fall;	/* ends of instructions control never falls through (jmp, ret) */
	VEC(struct branch) own; /* its direct branches, in address order */
};

struct analysis {
	struct sc_module_info *mod;
	csh fast;		     /* no detail: the whole-function pass */
	csh detail;		     /* operands: the instructions that move to the trampoline */
	VEC(struct branch) branches; /* every direct branch of the module, sorted by target */
	struct fn_code *fns;	     /* by function index */
};

/* The target of a relative branch, from its bytes; false for anything else. */
bool sc_direct_branch_target(const cs_insn *in, uint64_t *target);
/* Plan the window at `addr` (its bytes `code`, `avail` of them before the function ends)
 * into `p` (patch_len and ninsn start at 0): whole instructions covering a 5-byte jump,
 * branch targets kept relative to `base`. NULL, or why it cannot be done. */
const char *sc_plan_window_at(struct analysis *a, const uint8_t *code, uint64_t addr, size_t avail,
			      uint64_t base, struct sc_plan_func *p);
/* Branches of the module whose target lies in [lo, hi): a range of a->branches. */
size_t sc_branches_into(const struct analysis *a, uint64_t lo, uint64_t hi, size_t *first);
/* loops.c: the loops of function `idx` that can be recorded as regions. */
void sc_find_loops(struct analysis *a, uint32_t idx);

#endif /* SYSCOPE_INSTRUMENT_ANALYSIS_H */
