/* SPDX-License-Identifier: MIT */
/* The bounded sorter (model/spill_sort.h) against qsort: in memory, over many runs on file,
 * with equal keys kept in arrival order, used again after a reset, and without a place for
 * its file. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "model/spill_sort.h"

struct item {
	uint32_t key, seq;
	uint64_t payload;
};

static int by_key_seq(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Push `n` items of pseudo-random keys (few distinct, so ties abound), then check that the
 * sorter hands them back exactly in qsort's order. */
static void sort_and_compare(struct sc_spill_sort *s, size_t n, uint32_t seed, size_t runs_min)
{
	struct item *ref = calloc(n, sizeof(*ref));
	size_t got = 0, wrong = 0;
	uint32_t x = seed;

	for (size_t i = 0; i < n; i++) {
		struct item *it = sc_spill_push(s);

		x = x * 1103515245u + 12345u;
		it->key = (x >> 16) % 997;
		it->seq = (uint32_t)i;
		it->payload = (uint64_t)i * 7;
		ref[i] = *it;
	}
	CHECK(s->count == n);
	sc_spill_finish(s);
	CHECK(s->nruns >= runs_min);
	qsort(ref, n, sizeof(*ref), by_key_seq);
	for (const struct item *it; (it = sc_spill_next(s));) {
		if (got < n && (it->key != ref[got].key || it->seq != ref[got].seq ||
				it->payload != ref[got].payload))
			wrong++;
		got++;
	}
	CHECK(got == n);
	CHECK(wrong == 0);
	CHECK(sc_spill_next(s) == NULL);
	free(ref);
}

int main(void)
{
	struct sc_spill_sort s;

	sc_spill_init(&s, sizeof(struct item), by_key_seq, 0);
	sort_and_compare(&s, 5000, 1, 0); /* fits: no file */
	CHECK(s.fd < 0);
	sc_spill_free(&s);

	/* 1024 items a run (the smallest bound): 200 runs and a partial last one. */
	sc_spill_init(&s, sizeof(struct item), by_key_seq, 1);
	sort_and_compare(&s, 200 * 1024 + 77, 2, 201);
	sc_spill_reset(&s);
	sort_and_compare(&s, 3 * 1024, 3, 3);
	sc_spill_reset(&s);
	sc_spill_finish(&s); /* nothing pushed */
	CHECK(sc_spill_next(&s) == NULL);
	sc_spill_free(&s);

	/* No temporary folder: everything stays in memory, in the same order. */
	setenv("TMPDIR", "/nonexistent-syscope-test", 1);
	sc_spill_init(&s, sizeof(struct item), by_key_seq, 1);
	sort_and_compare(&s, 3 * 1024 + 5, 4, 0);
	CHECK(s.in_memory);
	sc_spill_free(&s);

	return check_report("test_spill_sort");
}
