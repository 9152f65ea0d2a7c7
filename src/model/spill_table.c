/* SPDX-License-Identifier: MIT */
/*
 * The spilled table of spill_table.h. Items [0, file_items) are in the file, the rest in
 * buf: before the bound is reached everything is in buf; past it buf holds the block being
 * written. A file that cannot be written leaves the rest in memory (the table reads the
 * same, only its memory is no longer bounded).
 */
#include "spill_table.h"
#include "spill_sort.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/vec.h"

#define DEFAULT_MEM (8u << 20)
#define BLOCK_BYTES (64u << 10)

static uint64_t file_items(const struct sc_spill_table *t)
{
	return t->count - t->n;
}

void sc_spill_table_init(struct sc_spill_table *t, size_t item_size, size_t mem_bytes)
{
	memset(t, 0, sizeof(*t));
	t->size = item_size;
	t->limit = (mem_bytes ? mem_bytes : DEFAULT_MEM) / item_size;
	if (t->limit < 1024)
		t->limit = 1024;
	t->per_block = BLOCK_BYTES / item_size ? BLOCK_BYTES / item_size : 1;
	t->fd = -1;
}

/* Write buf's items after the file's; false (nothing forgotten) when they cannot be. The
 * first item of each block they start is kept as its fence. */
static bool flush(struct sc_spill_table *t)
{
	uint64_t first = file_items(t);

	if (t->fd < 0 && (t->fd = sc_spill_tmpfile()) < 0)
		return false;
	if (!sc_spill_write(t->fd, t->buf, t->n * t->size, first * t->size))
		return false;
	for (uint64_t i = (first + t->per_block - 1) / t->per_block * t->per_block;
	     i < first + t->n; i += t->per_block) {
		if (t->nfences == t->fences_cap) {
			t->fences_cap = t->fences_cap ? t->fences_cap * 2 : 64;
			t->fences = sc_xrealloc(t->fences, t->fences_cap * t->size);
		}
		memcpy(t->fences + t->nfences++ * t->size, t->buf + (i - first) * t->size, t->size);
	}
	t->n = 0;
	return true;
}

void *sc_spill_table_push(struct sc_spill_table *t)
{
	size_t full = t->fd < 0 ? t->limit : t->per_block;
	char *slot;

	if (t->n >= full && !t->in_memory && !flush(t)) {
		t->in_memory = true;
		pr_warn("no temporary file for a table of the conversion (%s); keeping it in "
			"memory",
			errno ? strerror(errno) : "write failed");
	}
	if (t->fd >= 0 && !t->in_memory && t->cap > t->per_block) { /* past the bound */
		t->buf = sc_xrealloc(t->buf, t->per_block * t->size);
		t->cap = t->per_block;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;

		if (!t->in_memory && t->fd >= 0)
			cap = t->per_block; /* past the bound: one block at a time */
		else if (cap > t->limit && !t->in_memory)
			cap = t->limit > t->n ? t->limit : t->n + 1;
		if (cap > t->cap) {
			t->buf = sc_xrealloc(t->buf, cap * t->size);
			t->cap = cap;
		}
	}
	slot = t->buf + t->n++ * t->size;
	memset(slot, 0, t->size);
	t->count++;
	return slot;
}

void sc_spill_table_seal(struct sc_spill_table *t)
{
	if (t->fd < 0 || t->in_memory || !t->n)
		return;
	if (!flush(t)) {
		t->in_memory = true; /* the tail stays in buf */
		return;
	}
	free(t->buf);
	t->buf = NULL;
	t->cap = 0;
}

/* The cached block `b` of the file, read if it is not there. */
static const char *block(struct sc_spill_table *t, uint64_t b)
{
	struct sc_spill_table_block *slot = &t->cache[0];
	uint64_t first = b * t->per_block, in_file = file_items(t);
	size_t len, got = 0;

	t->reads++;
	if (t->cache[t->last].block == b + 1) { /* most reads are of the block read last */
		t->cache[t->last].used = t->reads;
		return t->cache[t->last].buf;
	}
	for (unsigned k = 0; k < SC_SPILL_TABLE_CACHE; k++) {
		struct sc_spill_table_block *c = &t->cache[k];

		if (c->block == b + 1) {
			c->used = t->reads;
			t->last = k;
			return c->buf;
		}
		if (c->used < slot->used)
			slot = c; /* the least recently used, an empty one first */
	}
	t->last = (unsigned)(slot - t->cache);
	if (!slot->buf)
		slot->buf = sc_xcalloc(t->per_block, t->size);
	len = (in_file - first < t->per_block ? (size_t)(in_file - first) : t->per_block) * t->size;
	while (got < len) {
		ssize_t r =
			pread(t->fd, slot->buf + got, len - got, (off_t)(first * t->size + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			sc_die(1, "a temporary table of the conversion could not be read back (%s)",
			       r < 0 ? strerror(errno) : "short file");
		got += (size_t)r;
	}
	slot->block = b + 1;
	slot->used = t->reads;
	return slot->buf;
}

const void *sc_spill_table_get(struct sc_spill_table *t, uint64_t i)
{
	uint64_t in_file = file_items(t);

	if (i >= in_file)
		return t->buf + (i - in_file) * t->size;
	return block(t, i / t->per_block) + (i % t->per_block) * t->size;
}

/* The first index in [lo, hi) whose item is not before `key` (hi if none). */
static uint64_t search(struct sc_spill_table *t, uint64_t lo, uint64_t hi, const void *key,
		       bool (*before)(const void *, const void *))
{
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (before(sc_spill_table_get(t, mid), key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint64_t sc_spill_table_lower_bound(struct sc_spill_table *t, const void *key,
				    bool (*before)(const void *item, const void *key))
{
	uint64_t in_file = file_items(t), lo = 0, hi = t->nfences, b, end;

	if (!in_file)
		return search(t, 0, t->count, key, before);
	while (lo < hi) { /* the first block whose first item is not before the key */
		uint64_t mid = lo + (hi - lo) / 2;

		if (before(t->fences + mid * t->size, key))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	b = lo - 1; /* the answer is in block b, or is the first of the next */
	end = (b + 1) * t->per_block < in_file ? (b + 1) * t->per_block : in_file;
	lo = search(t, b * t->per_block, end, key, before);
	if (lo < in_file)
		return lo;
	return search(t, in_file, t->count, key, before); /* the tail left in memory */
}

void sc_spill_table_free(struct sc_spill_table *t)
{
	for (unsigned k = 0; k < SC_SPILL_TABLE_CACHE; k++)
		free(t->cache[k].buf);
	free(t->buf);
	free(t->fences);
	if (t->fd >= 0)
		close(t->fd);
	memset(t, 0, sizeof(*t));
	t->fd = -1;
}
