/* SPDX-License-Identifier: MIT */
/* The spilled table (model/spill_table.h): every item read back by index, in order and at
 * random (through its block cache), searched, in memory below the bound, on file past it, and in
 * memory again without a place for its file. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "model/spill_table.h"

struct item {
	uint64_t index, payload;
	uint32_t tag;
};

/* Items hold index 2i: a key k's lower bound is ceil(k / 2). */
static bool before(const void *item, const void *key)
{
	return ((const struct item *)item)->payload < *(const uint64_t *)key;
}

static void fill_and_check(size_t n, size_t mem_bytes, bool want_file)
{
	struct sc_spill_table t;
	size_t wrong = 0;
	uint32_t x = 7;

	sc_spill_table_init(&t, sizeof(struct item), mem_bytes);
	for (size_t i = 0; i < n; i++) {
		struct item *it = sc_spill_table_push(&t);

		CHECK(it->index == 0 && it->payload == 0); /* handed out zeroed */
		it->index = i;
		it->payload = (uint64_t)i * 2;
		it->tag = (uint32_t)(i % 13);
	}
	sc_spill_table_seal(&t);
	CHECK(t.count == n);
	CHECK((t.fd >= 0 && !t.in_memory) == want_file);
	for (size_t i = 0; i < n; i++) {
		const struct item *it = sc_spill_table_get(&t, i);

		wrong += it->index != i || it->payload != (uint64_t)i * 2 || it->tag != i % 13;
	}
	for (size_t k = 0; k < n; k++) { /* at random: blocks evicted and read again */
		size_t i;
		const struct item *it;

		x = x * 1103515245u + 12345u;
		i = (x >> 8) % n;
		it = sc_spill_table_get(&t, i);
		wrong += it->index != i || it->payload != (uint64_t)i * 2;
	}
	for (uint64_t k = 0; k <= 2 * n + 1; k += 1 + k / 64) { /* searches, past the end too */
		uint64_t want = k >= 2 * n ? n : (k + 1) / 2;

		wrong += sc_spill_table_lower_bound(&t, &k, before) != want;
	}
	CHECK(wrong == 0);
	sc_spill_table_free(&t);
}

int main(void)
{
	fill_and_check(5000, 0, false);		  /* fits: no file */
	fill_and_check(1024, 1, false);		  /* the smallest bound, just reached */
	fill_and_check(300 * 1024 + 77, 1, true); /* 1 024 in memory, then blocks on file */

	/* No temporary folder: everything stays in memory, read the same. */
	setenv("TMPDIR", "/nonexistent-syscope-test", 1);
	fill_and_check(3 * 1024 + 5, 1, false);

	return check_report("test_spill_table");
}
