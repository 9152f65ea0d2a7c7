/* SPDX-License-Identifier: MIT */
/*
 * The functions and inlined calls of a compilation unit, indexed once: libdw's
 * dwarf_getscopes walks the whole unit's tree for every address asked, which on large units
 * (an interpreter's main loop, C++ with deep inlining) made symbolization the slowest part
 * of a conversion. Here one walk per unit records every subprogram and inlined subroutine
 * with its address ranges and its enclosing one; an address then costs a scan of the ranges.
 */
#include "scopes.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vec.h"

struct scope_node {
	Dwarf_Off off;	/* the DIE */
	int32_t parent; /* enclosing function or inlined call, -1 for none */
	uint32_t depth;
};

struct scope_range {
	uint64_t lo, hi; /* [lo, hi) in the unit's addresses */
	uint32_t node;
};

struct sc_scope_index {
	VEC(struct scope_node) nodes;
	VEC(struct scope_range) ranges;
};

static void index_children(struct sc_scope_index *ix, Dwarf_Die *die, int32_t parent,
			   uint32_t depth)
{
	Dwarf_Die child;

	if (dwarf_child(die, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		int32_t me = parent;

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;
			struct scope_node *n = VEC_PUSH(&ix->nodes);

			n->off = dwarf_dieoffset(&child);
			n->parent = parent;
			n->depth = depth;
			me = (int32_t)(ix->nodes.n - 1);
			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				struct scope_range *r = VEC_PUSH(&ix->ranges);

				r->lo = lo;
				r->hi = hi;
				r->node = (uint32_t)me;
			}
		}
		/* Into everything: functions sit in namespaces, classes, lexical blocks. */
		index_children(ix, &child, me, me == parent ? depth : depth + 1);
	} while (dwarf_siblingof(&child, &child) == 0);
}

struct sc_scope_index *sc_scope_index_build(Dwarf_Die *cu)
{
	struct sc_scope_index *ix = sc_xcalloc(1, sizeof(*ix));

	index_children(ix, cu, -1, 0);
	return ix;
}

void sc_scope_index_free(struct sc_scope_index *ix)
{
	if (!ix)
		return;
	VEC_FREE(&ix->nodes);
	VEC_FREE(&ix->ranges);
	free(ix);
}

int sc_scope_index_lookup(const struct sc_scope_index *ix, Dwarf *dbg, uint64_t addr,
			  Dwarf_Die **out)
{
	int64_t best = -1;
	int n = 0;
	Dwarf_Die *dies;

	for (size_t i = 0; i < ix->ranges.n; i++) {
		const struct scope_range *r = &ix->ranges.v[i];

		if (addr >= r->lo && addr < r->hi &&
		    (best < 0 || ix->nodes.v[r->node].depth > ix->nodes.v[best].depth))
			best = r->node;
	}
	*out = NULL;
	if (best < 0)
		return 0;
	for (int64_t k = best; k >= 0; k = ix->nodes.v[k].parent)
		n++;
	dies = sc_xcalloc((size_t)n, sizeof(*dies));
	n = 0;
	for (int64_t k = best; k >= 0; k = ix->nodes.v[k].parent)
		if (dwarf_offdie(dbg, ix->nodes.v[k].off, &dies[n]))
			n++;
	*out = dies;
	return n;
}
