/* SPDX-License-Identifier: MIT */
#include "strtab.h"

#include <stdlib.h>
#include <string.h>

void sc_strtab_init(struct sc_strtab *t)
{
	memset(t, 0, sizeof(*t));
	sc_hashmap_init(&t->index);
}

void sc_strtab_free(struct sc_strtab *t)
{
	for (size_t i = 0; i < t->strings.n; i++)
		free(t->strings.v[i]);
	VEC_FREE(&t->strings);
	VEC_FREE(&t->next);
	sc_hashmap_free(&t->index);
}

uint32_t sc_strtab_id(struct sc_strtab *t, const char *s)
{
	uint64_t h = sc_hash_bytes(s, strlen(s), 0x5c0);
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&t->index, h, 0, &inserted);
	uint32_t id;

	if (!inserted) {
		for (id = (uint32_t)(*slot - 1);; id = t->next.v[id]) {
			if (!strcmp(t->strings.v[id], s))
				return id;
			if (t->next.v[id] == UINT32_MAX)
				break;
		}
	}
	*VEC_PUSH(&t->strings) = sc_xstrdup(s);
	*VEC_PUSH(&t->next) = inserted ? UINT32_MAX : (uint32_t)(*slot - 1);
	id = (uint32_t)(t->strings.n - 1);
	*slot = (uint64_t)id + 1;
	return id;
}
