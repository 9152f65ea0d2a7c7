/* SPDX-License-Identifier: MIT */
/*
 * A small streaming protobuf encoder, enough for Perfetto traces: fields appended to a
 * growable buffer; a nested message reserves four bytes for its length, and at its end the
 * length is written in the bytes it needs, the message moved down onto them.
 */
#ifndef SYSCOPE_SINKS_PROTOBUF_H
#define SYSCOPE_SINKS_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

struct pb_buf {
	uint8_t *data;
	size_t len, cap;
};

void pb_free(struct pb_buf *b);
static inline void pb_reset(struct pb_buf *b)
{
	b->len = 0;
}
void pb_raw(struct pb_buf *b, const void *p, size_t n);
void pb_varint(struct pb_buf *b, uint32_t field, uint64_t v);
/* int32/int64 fields: negative values are sign-extended to ten bytes, as protobuf wants. */
static inline void pb_int(struct pb_buf *b, uint32_t field, int64_t v)
{
	pb_varint(b, field, (uint64_t)v);
}
void pb_fixed64(struct pb_buf *b, uint32_t field, uint64_t v);
void pb_double(struct pb_buf *b, uint32_t field, double v);
void pb_bytes(struct pb_buf *b, uint32_t field, const void *p, size_t n);
void pb_string(struct pb_buf *b, uint32_t field, const char *s);
/* Open a nested message; returns the token that pb_end takes. */
size_t pb_begin(struct pb_buf *b, uint32_t field);
void pb_end(struct pb_buf *b, size_t token);

#endif
