/* SPDX-License-Identifier: MIT */
/*
 * An array of fixed-size items written once, in order, then read by index (binary searches
 * over items sorted by sc_spill_sort, say), in bounded memory: up to a bound the items stay
 * in memory; past it they go to an unlinked temporary file and reads go through a small
 * cache of its blocks. Lookups that stay near each other (times that move forward) read
 * few blocks. Memory is the bound, or the cache, whatever the number of items.
 *
 *   sc_spill_table_init(&t, sizeof(struct x), 0);
 *   *(struct x *)sc_spill_table_push(&t) = item;  ...
 *   sc_spill_table_seal(&t);
 *   const struct x *p = sc_spill_table_get(&t, i);   (valid until the next get)
 *   uint64_t i = sc_spill_table_lower_bound(&t, &key, before);   (items sorted)
 *   sc_spill_table_free(&t);
 */
#ifndef SYSCOPE_MODEL_SPILL_TABLE_H
#define SYSCOPE_MODEL_SPILL_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SC_SPILL_TABLE_CACHE 32 /* blocks */

struct sc_spill_table_block {
	uint64_t block; /* its number + 1, 0: empty */
	uint64_t used;	/* the read that last used it */
	char *buf;
};

struct sc_spill_table {
	size_t size;	  /* of an item */
	size_t limit;	  /* items kept in memory before the file */
	size_t per_block; /* items in a block of the file */
	char *buf;	  /* the items (all in memory), or the block being written */
	size_t n, cap;	  /* items in buf, room */
	int fd;		  /* -1: everything in buf */
	uint64_t count;	  /* items pushed */
	uint64_t reads;
	unsigned last; /* the cache slot read last */
	char *fences;  /* on file: the first item of each block, for searches */
	size_t nfences, fences_cap;
	bool in_memory; /* the file could not be written: the rest stays in buf */
	struct sc_spill_table_block cache[SC_SPILL_TABLE_CACHE];
};

/* `mem_bytes`: the in-memory bound (0: the default, 8 MiB). */
void sc_spill_table_init(struct sc_spill_table *t, size_t item_size, size_t mem_bytes);
/* Room for the next item (zeroed), valid until the next push. */
void *sc_spill_table_push(struct sc_spill_table *t);
/* No more pushes. */
void sc_spill_table_seal(struct sc_spill_table *t);
/* Item `i` (< count) after the seal, valid until the next get. */
const void *sc_spill_table_get(struct sc_spill_table *t, uint64_t i);
/* In a table sorted so that `before(item, key)` holds for a prefix of it: the index of the
 * first item for which it does not (count if none). Reads one block of the file at most. */
uint64_t sc_spill_table_lower_bound(struct sc_spill_table *t, const void *key,
				    bool (*before)(const void *item, const void *key));
void sc_spill_table_free(struct sc_spill_table *t);

#endif /* SYSCOPE_MODEL_SPILL_TABLE_H */
