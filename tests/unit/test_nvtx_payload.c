/* SPDX-License-Identifier: MIT */
/*
 * NVTX's extended payloads (nvtx_payload.c), without a GPU: a schema and an enum registered
 * as NCCL registers its AllReduce's, a payload decoded into named values (NCCL's names
 * shortened, the reduction op by its enum name), natural offsets where a schema gives none,
 * and what is skipped: unknown schemas, values past the payload's size.
 */
#include <stddef.h>
#include <stdio.h>

#include "check.h"
#include "gpu/cuda/nvtx_payload.h"
#include "store/format.h"

#define STATIC_ID(n) (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + (n))

struct all_reduce {
	uint64_t comm;
	size_t bytes;
	int op;
};

static const nvtxPayloadEnum_t ops[] = { { "Sum", 0, 0 }, { "Prod", 1, 0 }, { "Max", 2, 0 } };

static void register_like_nccl(void)
{
	nvtxPayloadEnumAttr_t en = {
		.fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES |
			     NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
			     NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE |
			     NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID,
		.entries = ops,
		.numEntries = 3,
		.sizeOfEnum = sizeof(int),
		.schemaId = STATIC_ID(24),
	};
	nvtxPayloadSchemaEntry_t entries[] = {
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", NULL, 0,
		  offsetof(struct all_reduce, comm), NULL, NULL },
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", NULL, 0,
		  offsetof(struct all_reduce, bytes), NULL, NULL },
		{ 0, STATIC_ID(24), "Reduction operation", NULL, 0, offsetof(struct all_reduce, op),
		  NULL, NULL },
	};
	nvtxPayloadSchemaAttr_t s = {
		.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
			     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
			     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
			     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID,
		.entries = entries,
		.numEntries = 3,
		.payloadStaticSize = sizeof(struct all_reduce),
		.schemaId = STATIC_ID(5),
	};

	CHECK(nvtx_enum_register(&en) == STATIC_ID(24));
	CHECK(nvtx_schema_register(&s) == STATIC_ID(5));
}

static void decodes_nccl_all_reduce(void)
{
	struct all_reduce p = { 0xabcdef, 4 << 20, 2 };
	nvtxPayloadData_t d = { STATIC_ID(5), sizeof(p), &p };
	struct nvtx_payload_arg a[8];
	unsigned n = nvtx_payload_decode(&d, 1, a, 8);

	CHECK(n == 3);
	CHECK_STR(a[0].name, "comm");
	CHECK_STR(a[0].value, "0x0000000000abcdef"); /* as the NCCL plugin shows it */
	CHECK_STR(a[1].name, "bytes");
	CHECK_STR(a[1].value, "4194304");
	CHECK(a[1].type == SC_ARG_UINT);
	CHECK_STR(a[2].name, "op");
	CHECK_STR(a[2].value, "Max");
	CHECK(a[2].type == SC_ARG_STRING);
	CHECK(nvtx_payload_decode(&d, 1, a, 2) == 2); /* no more than asked */
	d.size = offsetof(struct all_reduce, op);     /* the op is past what the payload holds */
	CHECK(nvtx_payload_decode(&d, 1, a, 8) == 2);
	d.schemaId = STATIC_ID(77); /* never registered */
	CHECK(nvtx_payload_decode(&d, 1, a, 8) == 0);
	CHECK(nvtx_payload_decode(NULL, 1, a, 8) == 0);
}

/* Entries without offsets (0 after the first): naturally aligned one after another; a
 * schema without an id gets a dynamic one; signed and floating values. */
static void natural_offsets_and_types(void)
{
	struct {
		int8_t small;
		int32_t neg;
		double ratio;
	} p = { -3, -70000, 0.25 };
	nvtxPayloadSchemaEntry_t entries[] = {
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_INT8, "small", NULL, 0, 0, NULL, NULL },
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_INT32, "neg", NULL, 0, 0, NULL, NULL },
		{ 0, NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE, "ratio", NULL, 0, 0, NULL, NULL },
		{ 0, 0, NULL, NULL, 0, 0, NULL, NULL }, /* the end, without a count */
	};
	nvtxPayloadSchemaAttr_t s = { .fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES,
				      .entries = entries };
	uint64_t id = nvtx_schema_register(&s);
	nvtxPayloadData_t d = { id, sizeof(p), &p };
	struct nvtx_payload_arg a[8];

	CHECK(id >= NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START);
	CHECK(nvtx_payload_decode(&d, 1, a, 8) == 3);
	CHECK_STR(a[0].value, "-3");
	CHECK_STR(a[1].value, "-70000");
	CHECK(a[1].type == SC_ARG_INT);
	CHECK_STR(a[2].value, "0.25");
	CHECK(a[2].type == SC_ARG_DOUBLE);
}

int main(void)
{
	register_like_nccl();
	decodes_nccl_all_reduce();
	natural_offsets_and_types();
	return check_report("test_nvtx_payload");
}
