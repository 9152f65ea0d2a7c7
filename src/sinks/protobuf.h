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
void pb_grow(struct pb_buf *b, size_t n); /* room for n more bytes */

/* Inline, as the callers' field numbers are constants: a field's tag folds into one byte
 * store, and the call overhead was a third of the encoder's instructions. */
static inline void pb_reserve(struct pb_buf *b, size_t n)
{
	if (b->len + n > b->cap)
		pb_grow(b, n);
}

static inline uint8_t *pb_varint_at(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline void pb_tag(struct pb_buf *b, uint32_t field, unsigned wire)
{
	pb_reserve(b, 10);
	b->len = (size_t)(pb_varint_at(b->data + b->len, (uint64_t)field << 3 | wire) - b->data);
}
static inline void pb_reset(struct pb_buf *b)
{
	b->len = 0;
}
void pb_raw(struct pb_buf *b, const void *p, size_t n);
static inline void pb_varint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	uint8_t *p;

	pb_reserve(b, 20);
	p = pb_varint_at(b->data + b->len, (uint64_t)field << 3);
	b->len = (size_t)(pb_varint_at(p, v) - b->data);
}
/* int32/int64 fields: negative values are sign-extended to ten bytes, as protobuf wants. */
static inline void pb_int(struct pb_buf *b, uint32_t field, int64_t v)
{
	pb_varint(b, field, (uint64_t)v);
}
void pb_fixed64(struct pb_buf *b, uint32_t field, uint64_t v);
void pb_double(struct pb_buf *b, uint32_t field, double v);
/* The head of a length-delimited field whose `n` bytes the caller appends next. */
void pb_length(struct pb_buf *b, uint32_t field, size_t n);
void pb_bytes(struct pb_buf *b, uint32_t field, const void *p, size_t n);
void pb_string(struct pb_buf *b, uint32_t field, const char *s);
/* Open a nested message; returns the token that pb_end takes. */
static inline size_t pb_begin(struct pb_buf *b, uint32_t field)
{
	pb_tag(b, field, 2);
	pb_reserve(b, 4);
	b->len += 4;
	return b->len;
}
void pb_end(struct pb_buf *b, size_t token);

#endif
