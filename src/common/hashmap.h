/* SPDX-License-Identifier: MIT */
/*
 * Open-addressing hash map from a 64-bit key to a 64-bit value (an index or a pointer), for
 * the reader and model: symbol caches, stack tables, string interning. Key 0 is reserved
 * (the empty slot); callers map a real 0 to something else. CLI only (allocates, exits on
 * failure).
 */
#ifndef SYSCOPE_COMMON_HASHMAP_H
#define SYSCOPE_COMMON_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sc_hashmap {
	uint64_t *keys;
	uint64_t *vals;
	size_t cap; /* power of two */
	size_t n;
};

void sc_hashmap_init(struct sc_hashmap *m);
void sc_hashmap_free(struct sc_hashmap *m);
/* Returns the value slot for `key`, inserting it with value `dflt` if absent. */
uint64_t *sc_hashmap_upsert(struct sc_hashmap *m, uint64_t key, uint64_t dflt, bool *inserted);
/* Returns the value slot, or NULL. */
uint64_t *sc_hashmap_get(const struct sc_hashmap *m, uint64_t key);

/* 64-bit mixing of a byte string and of one integer (wyhash-style multiply-xorshift). */
uint64_t sc_hash_bytes(const void *p, size_t n, uint64_t seed);
static inline uint64_t sc_hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x ? x : 1;
}

#endif /* SYSCOPE_COMMON_HASHMAP_H */
