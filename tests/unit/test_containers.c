/* SPDX-License-Identifier: MIT */
/* The hash map, string table and nearest-spelling helper, checked against plain arrays. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "common/hashmap.h"
#include "common/strutil.h"
#include "model/strtab.h"

static void test_hashmap_against_array(void)
{
	enum {
		N = 20000
	};
	static uint64_t reference[N];
	struct sc_hashmap m;

	sc_hashmap_init(&m);
	/* Keys chosen to collide in the low bits, where a weak hash would cluster. */
	for (uint64_t i = 0; i < N; i++) {
		bool inserted;
		uint64_t *v = sc_hashmap_upsert(&m, (i << 20) + 1, 0, &inserted);

		CHECK(inserted);
		*v = i * 3;
		reference[i] = i * 3;
	}
	CHECK(m.n == N);
	for (uint64_t i = 0; i < N; i++) {
		uint64_t *v = sc_hashmap_get(&m, (i << 20) + 1);

		CHECK(v && *v == reference[i]);
	}
	CHECK(sc_hashmap_get(&m, 7) == NULL);
	{
		bool inserted = true;

		*sc_hashmap_upsert(&m, 1, 99, &inserted) += 1;
		CHECK(!inserted);
		CHECK(*sc_hashmap_get(&m, 1) == 1);
	}
	sc_hashmap_free(&m);
}

static void test_strtab(void)
{
	struct sc_strtab t;
	char buf[32];
	uint32_t ids[1000];

	sc_strtab_init(&t);
	for (int i = 0; i < 1000; i++) {
		snprintf(buf, sizeof(buf), "name%d", i);
		ids[i] = sc_strtab_id(&t, buf);
	}
	for (int i = 0; i < 1000; i++) {
		snprintf(buf, sizeof(buf), "name%d", i);
		CHECK(sc_strtab_id(&t, buf) == ids[i]);
		CHECK_STR(sc_strtab_get(&t, ids[i]), buf);
	}
	CHECK(t.strings.n == 1000);
	CHECK(sc_strtab_intern(&t, "name5") == sc_strtab_intern(&t, "name5"));
	sc_strtab_free(&t);
}

static void test_nearest(void)
{
	const char *opts[] = { "--sampling-freq", "--sampling-delay", "--output", "--verbose" };

	CHECK(sc_edit_distance("kitten", "sitting") == 3);
	CHECK_STR(sc_nearest("--sampling-fre", opts, 4), "--sampling-freq");
	CHECK_STR(sc_nearest("--samplnig-delay", opts, 4), "--sampling-delay");
	CHECK_STR(sc_nearest("--out", opts, 4), "--output");
	CHECK(sc_nearest("--frobnicate-everything", opts, 4) == NULL);
}

int main(void)
{
	test_hashmap_against_array();
	test_strtab();
	test_nearest();
	return check_report("test_containers");
}
