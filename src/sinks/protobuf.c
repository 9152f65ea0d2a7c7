/* SPDX-License-Identifier: MIT */
#include "protobuf.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vec.h"

void pb_free(struct pb_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void pb_grow(struct pb_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap * 2 : 4096;

	while (cap < b->len + n)
		cap *= 2;
	b->data = sc_xrealloc(b->data, cap);
	b->cap = cap;
}

void pb_raw(struct pb_buf *b, const void *p, size_t n)
{
	pb_reserve(b, n);
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void pb_fixed64(struct pb_buf *b, uint32_t field, uint64_t v)
{
	pb_tag(b, field, 1);
	pb_reserve(b, 8);
	for (int i = 0; i < 8; i++)
		b->data[b->len++] = (uint8_t)(v >> (8 * i));
}

void pb_double(struct pb_buf *b, uint32_t field, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	pb_fixed64(b, field, bits);
}

void pb_length(struct pb_buf *b, uint32_t field, size_t n)
{
	pb_tag(b, field, 2);
	pb_reserve(b, 10);
	b->len = (size_t)(pb_varint_at(b->data + b->len, n) - b->data);
}

void pb_bytes(struct pb_buf *b, uint32_t field, const void *p, size_t n)
{
	pb_length(b, field, n);
	pb_raw(b, p, n);
}

void pb_string(struct pb_buf *b, uint32_t field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

void pb_end(struct pb_buf *b, size_t token)
{
	size_t n = b->len - token, k = 1;
	uint8_t *p = b->data + token - 4;

	/* The length took four bytes while the message was written; most messages are short,
	 * so move them down onto the bytes their length really needs. */
	while (k < 4 && n >> (7 * k))
		k++;
	for (size_t i = 0; i < k; i++)
		p[i] = (uint8_t)((n >> (7 * i)) & 0x7f) | (i + 1 < k ? 0x80 : 0);
	if (k < 4) {
		memmove(p + k, p + 4, n);
		b->len -= 4 - k;
	}
}
