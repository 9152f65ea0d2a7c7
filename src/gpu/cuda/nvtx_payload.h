/* SPDX-License-Identifier: MIT */
/*
 * nvtx_payload.c: NVTX's extended payloads (NVTX_PAYLOAD_TYPE_EXT): the schemas and enums a
 * program registers through NVTX's payload extension, and a payload decoded by its schema
 * into named values (NCCL's ranges carry their communicator, bytes, reduction op, root or
 * peer this way).
 */
#ifndef SYSCOPE_GPU_CUDA_NVTX_PAYLOAD_H
#define SYSCOPE_GPU_CUDA_NVTX_PAYLOAD_H

/* Only NVTX's types, unless a file including NVTX's code included it first. */
#ifndef NVTX_VERSION
#define NVTX_NO_IMPL
#endif
#include <nvtx3/nvToolsExtPayload.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One decoded value: its type (enum sc_arg_type), name and text. */
struct nvtx_payload_arg {
	char type;
	char name[48];
	char value[80];
};

/* A schema or an enum of the program; the id to use (the attributes' own, else a new one),
 * 0 when it cannot be kept (unknown kind, table full). Any thread, any time. */
uint64_t nvtx_schema_register(const nvtxPayloadSchemaAttr_t *attr);
uint64_t nvtx_enum_register(const nvtxPayloadEnumAttr_t *attr);
/* `count` payloads decoded into at most `cap` values; how many were written. Payloads of
 * unknown schemas, and entries of kinds not shown (nested, arrays, strings), are skipped.
 * Lock-free: called for every range. */
unsigned nvtx_payload_decode(const nvtxPayloadData_t *data, size_t count,
			     struct nvtx_payload_arg *out, unsigned cap);

#endif /* SYSCOPE_GPU_CUDA_NVTX_PAYLOAD_H */
