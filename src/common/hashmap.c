/* SPDX-License-Identifier: MIT */
#include "hashmap.h"

#include <stdlib.h>
#include <string.h>

#include "vec.h"

void sc_hashmap_init(struct sc_hashmap *m)
{
	memset(m, 0, sizeof(*m));
}

void sc_hashmap_free(struct sc_hashmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

static size_t slot_of(const struct sc_hashmap *m, uint64_t key)
{
	size_t mask = m->cap - 1, i = (size_t)sc_hash_u64(key) & mask;

	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & mask;
	return i;
}

static void grow(struct sc_hashmap *m)
{
	struct sc_hashmap old = *m;

	m->cap = old.cap ? old.cap * 2 : 64;
	m->keys = sc_xcalloc(m->cap, sizeof(*m->keys));
	m->vals = sc_xcalloc(m->cap, sizeof(*m->vals));
	for (size_t i = 0; i < old.cap; i++) {
		if (old.keys[i]) {
			size_t s = slot_of(m, old.keys[i]);

			m->keys[s] = old.keys[i];
			m->vals[s] = old.vals[i];
		}
	}
	free(old.keys);
	free(old.vals);
}

uint64_t *sc_hashmap_upsert(struct sc_hashmap *m, uint64_t key, uint64_t dflt, bool *inserted)
{
	size_t s;

	if ((m->n + 1) * 4 > m->cap * 3)
		grow(m);
	s = slot_of(m, key);
	if (inserted)
		*inserted = !m->keys[s];
	if (!m->keys[s]) {
		m->keys[s] = key;
		m->vals[s] = dflt;
		m->n++;
	}
	return &m->vals[s];
}

uint64_t *sc_hashmap_get(const struct sc_hashmap *m, uint64_t key)
{
	size_t s;

	if (!m->cap)
		return NULL;
	s = slot_of(m, key);
	return m->keys[s] ? &m->vals[s] : NULL;
}

uint64_t sc_hash_bytes(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ull);

	while (n >= 8) {
		uint64_t w;

		memcpy(&w, b, 8);
		h = (h ^ sc_hash_u64(w)) * 0x9e3779b97f4a7c15ull;
		b += 8;
		n -= 8;
	}
	if (n) {
		uint64_t w = 0;

		memcpy(&w, b, n);
		h = (h ^ sc_hash_u64(w)) * 0x9e3779b97f4a7c15ull;
	}
	return sc_hash_u64(h);
}
