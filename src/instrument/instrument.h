/* SPDX-License-Identifier: MIT */
/*
 * Binary instrumentation, the analysis half (CLI side): read a module's function symbols,
 * decode each function with capstone, decide whether its entry can be patched and how its
 * first instructions move to a trampoline (analyze.c); choose the functions to instrument
 * (select.c); report the choice and write the patch plan the runtime applies (plan_write.c,
 * report.c). Nothing here runs inside the profiled program.
 */
#ifndef SYSCOPE_INSTRUMENT_INSTRUMENT_H
#define SYSCOPE_INSTRUMENT_INSTRUMENT_H

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/patch_plan.h"
#include "../common/vec.h"

enum sc_fn_state {
	SC_FN_INSTRUMENTED, /* chosen and patchable */
	SC_FN_EXCLUDED,	    /* patchable, but the selection left it out (reason says why) */
	SC_FN_UNPATCHABLE,  /* cannot be patched safely (reason says why) */
};

/* A loop of a function (-l): its code is [head, end), from its back edges. */
struct sc_loop {
	uint64_t head, end;
	const char *reason; /* NULL when it can be recorded */
};

/* Where the loop probes of a function go: loop entries and exits. */
struct sc_probe {
	struct sc_plan_func win; /* win.addr: the probe's address; a window like an entry's */
	uint32_t enters;	 /* bit i: control enters the function's loop i here */
};

struct sc_fn {
	char *name;	 /* symbol name as in the file */
	char *pretty;	 /* demangled (same pointer as name for C) */
	uint64_t addr;	 /* link-time address */
	uint32_t size;	 /* bytes */
	uint32_t ninsn;	 /* instructions, 0 when the function could not be decoded */
	uint32_t nloops; /* backward branches inside the function */
	uint32_t ncalls; /* calls, jumps out of it, system calls, rep-prefixed string loops */
	enum sc_fn_state state;
	const char *reason; /* static text; NULL when instrumented */
	struct sc_plan_func plan;
	VEC(struct sc_loop) loops;   /* at most 32 */
	VEC(struct sc_probe) probes; /* for the loops without a reason */
};

struct sc_module_info {
	char *path;	/* as given */
	bool is_main;	/* the program (not a library) */
	bool is_static; /* an executable without a dynamic loader: LD_PRELOAD cannot reach it */
	char *interp;	/* the dynamic loader it names (PT_INTERP), NULL for none */
	bool has_symtab;
	bool is_library; /* a shared library (ET_DYN without a dynamic loader of its own) */
	uint64_t file_size;
	int64_t mtime_ns;
	VEC(struct sc_fn) fns; /* sorted by address */
	uint64_t decode_ns;    /* time the analysis took */
	bool from_cache;       /* read back from the analysis cache (analysis_cache.c) */
};

/* Read and decode `path`. Returns 0, or -1 with `err` naming the problem (not ELF, another
 * architecture, unreadable...). */
int sc_analyze_module(const char *path, bool is_main, struct sc_module_info *mod, char *err,
		      size_t errlen);
void sc_module_info_free(struct sc_module_info *mod);
/* sc_analyze_module through the analysis cache when `use_cache` (analysis_cache.c): the
 * cached analysis of the same file when there is one, else analyzed and cached; hits,
 * misses and why are told at --verbose. */
int sc_analyze_module_cached(const char *path, bool is_main, bool use_cache,
			     struct sc_module_info *mod, char *err, size_t errlen);

typedef VEC(regex_t) sc_regex_vec;

/* What to instrument: rocprof-sys's -I/-E/-R and the size heuristics. */
struct sc_selection {
	sc_regex_vec include;	/* instrumented despite the heuristics */
	sc_regex_vec exclude;	/* never */
	sc_regex_vec restrict_; /* when given, only functions matching one of these */
	uint32_t min_instructions;
	uint32_t min_leaf_instructions; /* for functions with no calls and no loops */
	uint32_t min_address_range;
	bool matched_include, matched_restrict; /* did any function match (for the warning) */
	/* Modules, rocprof-sys's -MI/-ME/-MR: matched against the path and the file name. */
	sc_regex_vec module_include;  /* shared libraries also instrumented */
	sc_regex_vec module_exclude;  /* never */
	sc_regex_vec module_restrict; /* when given, only these (the program too) */
	bool loops;		      /* -l: loops of instrumented functions as regions */
};

typedef VEC(char *) sc_path_vec;

/* The shared libraries `program` loads at start, as its dynamic loader `interp` resolves them
 * (real paths, in load order). Returns 0, or -1 with `err` set. */
int sc_program_libraries(const char *program, const char *interp, sc_path_vec *out, char *err,
			 size_t errlen);
/* Whether the module at `path` is instrumented; when not, `why` says why (NULL when it is
 * simply not asked for: a library no -MI/-MR names). */
bool sc_select_module(struct sc_selection *sel, const char *path, bool is_main, const char **why);

/* Compile one extended regex into `list`; returns false with `err` set when it is invalid. */
bool sc_selection_add(sc_regex_vec *list, const char *re, char *err, size_t errlen);
void sc_selection_free(struct sc_selection *sel);
/* Mark every patchable function of `mod` instrumented or excluded. */
void sc_select_functions(struct sc_module_info *mod, struct sc_selection *sel);

/* Counts by state. */
void sc_module_counts(const struct sc_module_info *mod, size_t counts[3]);

/* Print the functions in `state` (one per line: address, size, instructions, name, reason). */
void sc_print_functions(FILE *f, const struct sc_module_info *mod, enum sc_fn_state state,
			bool with_reason);
/* Every function with its state, as JSON (`json`) or text, to `path`. Returns 0 or -1. */
int sc_dump_info(const char *path, const struct sc_module_info *mods, size_t nmods, bool json);

/* Write the plan for the instrumented functions of `mods`. Returns the number of functions
 * in it, or -1 with `err` set. */
long sc_plan_write(const char *path, const struct sc_module_info *mods, size_t nmods, char *err,
		   size_t errlen);

/* The plan of one module as a rewritten file carries it (SC_PLAN_SECTION); caller frees. */
char *sc_plan_bytes(const struct sc_module_info *mod, size_t *size);

/* rewrite.c: the DT_SONAME of an ELF file (the name the loader looks for), or NULL when it
 * has none. Caller frees. */
char *sc_elf_soname(const char *path);
/* rewrite.c: copy `in` to `out` with `mod`'s plan in a section of its own; a program also
 * gets `runtime` (libsyscope.so's path, or NULL) as its first DT_NEEDED, so that it runs
 * instrumented by itself. Returns 0, or -1 with `err` set (not ELF64, already carries a
 * plan...). */
int sc_rewrite_with_plan(const char *in, const char *out, const struct sc_module_info *mod,
			 const char *runtime, char *err, size_t errlen);

#endif /* SYSCOPE_INSTRUMENT_INSTRUMENT_H */
