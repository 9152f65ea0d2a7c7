/* SPDX-License-Identifier: MIT */
/* An index of one compilation unit's functions and inlined calls (scopes.c). */
#ifndef SYSCOPE_MODEL_SCOPES_H
#define SYSCOPE_MODEL_SCOPES_H

#include <elfutils/libdw.h>
#include <stdint.h>

struct sc_scope_index;

/* Walk the unit `cu` once. Never NULL. */
struct sc_scope_index *sc_scope_index_build(Dwarf_Die *cu);
void sc_scope_index_free(struct sc_scope_index *ix);
/*
 * The functions and inlined calls containing `addr` (an address of the unit, without the
 * module's bias), innermost first, each enclosed by the next: *out is a malloc'ed array the
 * caller frees, and the count is returned (0 when no function contains it).
 */
int sc_scope_index_lookup(const struct sc_scope_index *ix, Dwarf *dbg, uint64_t addr,
			  Dwarf_Die **out);

#endif /* SYSCOPE_MODEL_SCOPES_H */
