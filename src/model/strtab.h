/* SPDX-License-Identifier: MIT */
/* Interned strings: each distinct string stored once, with a stable pointer and a dense id. */
#ifndef SYSCOPE_MODEL_STRTAB_H
#define SYSCOPE_MODEL_STRTAB_H

#include <stdint.h>

#include "../common/hashmap.h"
#include "../common/vec.h"

struct sc_strtab {
	struct sc_hashmap index; /* hash -> id + 1 of the first string with that hash */
	VEC(char *) strings;
	VEC(uint32_t) next; /* next id with the same hash, or UINT32_MAX */
};

void sc_strtab_init(struct sc_strtab *t);
void sc_strtab_free(struct sc_strtab *t);
uint32_t sc_strtab_id(struct sc_strtab *t, const char *s);
static inline const char *sc_strtab_get(const struct sc_strtab *t, uint32_t id)
{
	return t->strings.v[id];
}
static inline const char *sc_strtab_intern(struct sc_strtab *t, const char *s)
{
	return sc_strtab_get(t, sc_strtab_id(t, s));
}

#endif /* SYSCOPE_MODEL_STRTAB_H */
