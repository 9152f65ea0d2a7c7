/* SPDX-License-Identifier: MIT */
/* syscope causal: the scope resolved before the run (causal_scope.c), used by causal.c. */
#ifndef SYSCOPE_CMD_CAUSAL_H
#define SYSCOPE_CMD_CAUSAL_H

#include <stdint.h>

#include "../common/vec.h"
#include "cmd.h"

struct causal_unit {
	char kind; /* 'f' function, 'l' line */
	char *name;
};

struct causal_range {
	const char *what; /* "range" (of a unit) or "prange" (of a sampled progress point) */
	uint32_t id;
	size_t module; /* index in modules */
	uint64_t lo, hi;
};

struct causal_scope {
	VEC(struct causal_unit) units;
	VEC(char *) points; /* --progress words, by point id */
	VEC(char *) modules;
	VEC(struct causal_range) ranges;
};

/* Resolve the units in scope; exits with a message naming the problem when nothing matches
 * or a pattern is invalid. `mode` is "function" or "line" (lines given imply line). */
void sc_causal_resolve(struct causal_scope *s, const char *program, const char *mode,
		       const char *functions, const char *lines, const char *binary,
		       const char *progress);
int sc_causal_write_scope(const struct causal_scope *s, const char *path);
void sc_causal_scope_free(struct causal_scope *s);

#endif /* SYSCOPE_CMD_CAUSAL_H */
