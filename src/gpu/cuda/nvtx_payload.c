/* SPDX-License-Identifier: MIT */
/*
 * NVTX's extended payloads (see nvtx_payload.h). Schemas and enums are copied at
 * registration into append-only tables: a slot is filled, then published by the count
 * (release), so a range decodes its payload without a lock; registering takes one.
 */
#include "nvtx_payload.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../store/format.h" /* enum sc_arg_type */

#define MAX_SCHEMAS 256
#define MAX_ENTRIES 16
#define MAX_ENUMS 64
#define MAX_ENUM_VALUES 32

struct schema {
	uint64_t id;
	size_t size; /* the payload's static size; 0: unknown */
	unsigned n;
	struct {
		uint64_t type, offset;
		char name[48];
	} e[MAX_ENTRIES];
};

struct enumeration {
	uint64_t id;
	size_t size; /* bytes of a value */
	unsigned n;
	struct {
		uint64_t value;
		char name[32];
	} v[MAX_ENUM_VALUES];
};

static struct schema schemas[MAX_SCHEMAS];
static struct enumeration enums[MAX_ENUMS];
static atomic_uint nschemas, nenums;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_dynamic_id = NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START;

/* NCCL's names for its values, shortened to the names syscope's NCCL regions use. */
static const struct {
	const char *nvtx, *ours;
} short_names[] = {
	{ "NCCL communicator ID", "comm" },
	{ "Message size [bytes]", "bytes" },
	{ "Reduction operation", "op" },
	{ "Root", "root" },
	{ "Peer rank", "peer" },
	{ "No. of ranks", "nranks" },
	{ "Rank", "rank" },
	{ "CUDA device", "device" },
};

static void copy_name(char *dst, size_t cap, const char *name)
{
	for (size_t i = 0; name && i < sizeof(short_names) / sizeof(short_names[0]); i++)
		if (!strcmp(name, short_names[i].nvtx))
			name = short_names[i].ours;
	snprintf(dst, cap, "%s", name && *name ? name : "value");
}

/* Bytes of a value of a predefined entry type (this ABI: x86-64 and aarch64 Linux); 0 for
 * kinds not decoded. */
static size_t type_size(uint64_t type)
{
	switch (type) {
	case NVTX_PAYLOAD_ENTRY_TYPE_CHAR:
	case NVTX_PAYLOAD_ENTRY_TYPE_UCHAR:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT8:
	case NVTX_PAYLOAD_ENTRY_TYPE_UINT8:
	case NVTX_PAYLOAD_ENTRY_TYPE_BYTE:
		return 1;
	case NVTX_PAYLOAD_ENTRY_TYPE_SHORT:
	case NVTX_PAYLOAD_ENTRY_TYPE_USHORT:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT16:
	case NVTX_PAYLOAD_ENTRY_TYPE_UINT16:
		return 2;
	case NVTX_PAYLOAD_ENTRY_TYPE_INT:
	case NVTX_PAYLOAD_ENTRY_TYPE_UINT:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT32:
	case NVTX_PAYLOAD_ENTRY_TYPE_UINT32:
	case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT:
	case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT32:
	case NVTX_PAYLOAD_ENTRY_TYPE_CATEGORY:
	case NVTX_PAYLOAD_ENTRY_TYPE_COLOR_ARGB:
	case NVTX_PAYLOAD_ENTRY_TYPE_PID_UINT32:
	case NVTX_PAYLOAD_ENTRY_TYPE_TID_UINT32:
		return 4;
	case NVTX_PAYLOAD_ENTRY_TYPE_LONG:
	case NVTX_PAYLOAD_ENTRY_TYPE_ULONG:
	case NVTX_PAYLOAD_ENTRY_TYPE_LONGLONG:
	case NVTX_PAYLOAD_ENTRY_TYPE_ULONGLONG:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT64:
	case NVTX_PAYLOAD_ENTRY_TYPE_UINT64:
	case NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE:
	case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT64:
	case NVTX_PAYLOAD_ENTRY_TYPE_SIZE:
	case NVTX_PAYLOAD_ENTRY_TYPE_ADDRESS:
	case NVTX_PAYLOAD_ENTRY_TYPE_SCOPE_ID:
	case NVTX_PAYLOAD_ENTRY_TYPE_PID_UINT64:
	case NVTX_PAYLOAD_ENTRY_TYPE_TID_UINT64:
		return 8;
	default:
		return 0;
	}
}

static bool is_signed(uint64_t type)
{
	switch (type) {
	case NVTX_PAYLOAD_ENTRY_TYPE_CHAR:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT8:
	case NVTX_PAYLOAD_ENTRY_TYPE_SHORT:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT16:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT32:
	case NVTX_PAYLOAD_ENTRY_TYPE_LONG:
	case NVTX_PAYLOAD_ENTRY_TYPE_LONGLONG:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT64:
		return true;
	default:
		return false;
	}
}

static bool is_float(uint64_t type)
{
	return type == NVTX_PAYLOAD_ENTRY_TYPE_FLOAT || type == NVTX_PAYLOAD_ENTRY_TYPE_FLOAT32 ||
	       type == NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE || type == NVTX_PAYLOAD_ENTRY_TYPE_FLOAT64;
}

static const struct enumeration *find_enum(uint64_t id)
{
	unsigned n = atomic_load_explicit(&nenums, memory_order_acquire);

	for (unsigned i = 0; i < n; i++)
		if (enums[i].id == id)
			return &enums[i];
	return NULL;
}

static const struct schema *find_schema(uint64_t id)
{
	unsigned n = atomic_load_explicit(&nschemas, memory_order_acquire);

	for (unsigned i = 0; i < n; i++)
		if (schemas[i].id == id)
			return &schemas[i];
	return NULL;
}

/* Bytes of an entry's value: a predefined type's, or an enum's. */
static size_t entry_size(uint64_t type)
{
	const struct enumeration *en;

	if (type_size(type))
		return type_size(type);
	en = type >= NVTX_PAYLOAD_SCHEMA_ID_STATIC_START ? find_enum(type) : NULL;
	return en ? en->size : 0;
}

static uint64_t new_id(uint64_t mask, uint64_t flag, uint64_t given)
{
	return (mask & flag) && given ? given : next_dynamic_id++;
}

uint64_t nvtx_schema_register(const nvtxPayloadSchemaAttr_t *attr)
{
	struct schema *s;
	uint64_t end = 0, id;
	unsigned i;

	if (!attr || !(attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES) || !attr->entries)
		return 0;
	pthread_mutex_lock(&lock);
	i = atomic_load_explicit(&nschemas, memory_order_relaxed);
	if (i == MAX_SCHEMAS) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	s = &schemas[i];
	memset(s, 0, sizeof(*s));
	id = s->id =
		new_id(attr->fieldMask, NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID, attr->schemaId);
	if (attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE)
		s->size = attr->payloadStaticSize;
	for (size_t k = 0; s->n < MAX_ENTRIES; k++) {
		const nvtxPayloadSchemaEntry_t *e = &attr->entries[k];
		size_t size;

		/* Without a count, the entries end at one of type 0 (NVTX's rule). */
		if ((attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES)
			    ? k >= attr->numEntries
			    : !e->type)
			break;
		size = entry_size(e->type);
		s->e[s->n].type = e->type;
		/* An offset of 0 after the first entry: naturally aligned after the previous. */
		s->e[s->n].offset =
			e->offset || !k || !size ? e->offset : (end + size - 1) / size * size;
		copy_name(s->e[s->n].name, sizeof(s->e[0].name), e->name);
		end = s->e[s->n].offset + size;
		s->n++;
	}
	atomic_store_explicit(&nschemas, i + 1, memory_order_release);
	pthread_mutex_unlock(&lock);
	return id;
}

uint64_t nvtx_enum_register(const nvtxPayloadEnumAttr_t *attr)
{
	struct enumeration *en;
	uint64_t id;
	unsigned i;

	if (!attr || !(attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES) || !attr->entries)
		return 0;
	pthread_mutex_lock(&lock);
	i = atomic_load_explicit(&nenums, memory_order_relaxed);
	if (i == MAX_ENUMS) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	en = &enums[i];
	memset(en, 0, sizeof(*en));
	id = en->id =
		new_id(attr->fieldMask, NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID, attr->schemaId);
	en->size = (attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE) && attr->sizeOfEnum
			   ? attr->sizeOfEnum
			   : sizeof(int);
	for (size_t k = 0; en->n < MAX_ENUM_VALUES &&
			   ((attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES)
				    ? k < attr->numEntries
				    : attr->entries[k].name != NULL);
	     k++) {
		en->v[en->n].value = attr->entries[k].value;
		snprintf(en->v[en->n].name, sizeof(en->v[0].name), "%s",
			 attr->entries[k].name ? attr->entries[k].name : "?");
		en->n++;
	}
	atomic_store_explicit(&nenums, i + 1, memory_order_release);
	pthread_mutex_unlock(&lock);
	return id;
}

static uint64_t read_unsigned(const unsigned char *p, size_t size)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (size) {
	case 1:
		memcpy(&u8, p, 1);
		return u8;
	case 2:
		memcpy(&u16, p, 2);
		return u16;
	case 4:
		memcpy(&u32, p, 4);
		return u32;
	default:
		memcpy(&u64, p, 8);
		return u64;
	}
}

static int64_t sign_extend(uint64_t v, size_t size)
{
	unsigned shift = (unsigned)(64 - 8 * size);

	return size >= 8 ? (int64_t)v : (int64_t)(v << shift) >> shift;
}

/* One entry's value as text; false when its kind is not shown. */
static bool format_value(uint64_t type, const unsigned char *p, struct nvtx_payload_arg *a)
{
	size_t size = type_size(type);
	const struct enumeration *en;
	uint64_t v;

	if (size && is_float(type)) {
		double d;
		float f;

		if (size == 4) {
			memcpy(&f, p, 4);
			d = f;
		} else {
			memcpy(&d, p, 8);
		}
		a->type = SC_ARG_DOUBLE;
		snprintf(a->value, sizeof(a->value), "%.17g", d);
		return true;
	}
	if (size) {
		v = read_unsigned(p, size);
		if (type == NVTX_PAYLOAD_ENTRY_TYPE_ADDRESS) {
			a->type = SC_ARG_POINTER;
			snprintf(a->value, sizeof(a->value), "0x%llx", (unsigned long long)v);
		} else if (is_signed(type)) {
			a->type = SC_ARG_INT;
			snprintf(a->value, sizeof(a->value), "%lld",
				 (long long)sign_extend(v, size));
		} else {
			a->type = SC_ARG_UINT;
			snprintf(a->value, sizeof(a->value), "%llu", (unsigned long long)v);
		}
		return true;
	}
	en = type >= NVTX_PAYLOAD_SCHEMA_ID_STATIC_START ? find_enum(type) : NULL;
	if (!en || en->size > 8)
		return false;
	v = read_unsigned(p, en->size);
	a->type = SC_ARG_STRING;
	snprintf(a->value, sizeof(a->value), "%llu", (unsigned long long)v);
	for (unsigned i = 0; i < en->n; i++)
		if (en->v[i].value == v) {
			snprintf(a->value, sizeof(a->value), "%s", en->v[i].name);
			break;
		}
	return true;
}

/* A communicator as the NCCL plugin's regions show it: its hash in hexadecimal. */
static void as_comm_hash(struct nvtx_payload_arg *a)
{
	unsigned long long v = strtoull(a->value, NULL, 10);

	a->type = SC_ARG_STRING;
	snprintf(a->value, sizeof(a->value), "0x%016llx", v);
}

unsigned nvtx_payload_decode(const nvtxPayloadData_t *data, size_t count,
			     struct nvtx_payload_arg *out, unsigned cap)
{
	unsigned n = 0;

	for (size_t i = 0; data && i < count && n < cap; i++) {
		const struct schema *s = find_schema(data[i].schemaId);
		const unsigned char *p = data[i].payload;

		if (!s || !p)
			continue;
		for (unsigned k = 0; k < s->n && n < cap; k++) {
			size_t size = entry_size(s->e[k].type);

			/* Within what the payload says it holds, or the schema's size. */
			if (!size ||
			    s->e[k].offset + size > (data[i].size ? data[i].size : s->size))
				continue;
			snprintf(out[n].name, sizeof(out[n].name), "%s", s->e[k].name);
			if (!format_value(s->e[k].type, p + s->e[k].offset, &out[n]))
				continue;
			if (!strcmp(out[n].name, "comm") && out[n].type == SC_ARG_UINT)
				as_comm_hash(&out[n]);
			n++;
		}
	}
	return n;
}
