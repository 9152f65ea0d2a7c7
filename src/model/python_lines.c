/* SPDX-License-Identifier: MIT */
/*
 * CPython line tables: the line of an instruction from a code object's co_linetable, in
 * the two formats of the versions syscope reads (docs/design/python-frames.md, section 4;
 * both checked against co_lines() for every instruction of the standard library).
 */
#include "python.h"

/* An unsigned varint of the location table: 6-bit groups, least significant first, 0x40 =
 * more follow. Returns false when the table ends inside it. */
static bool varint(const uint8_t *t, size_t len, size_t *at, uint32_t *out)
{
	uint32_t v = 0;
	unsigned shift = 0;

	for (;;) {
		if (*at >= len || shift > 30)
			return false;
		v |= (uint32_t)(t[*at] & 63) << shift;
		shift += 6;
		if (!(t[(*at)++] & 64))
			break;
	}
	*out = v;
	return true;
}

static bool svarint(const uint8_t *t, size_t len, size_t *at, int32_t *out)
{
	uint32_t u;

	if (!varint(t, len, at, &u))
		return false;
	*out = u & 1 ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
	return true;
}

/* 3.11-3.13: entries of (first byte: bit 7 set, code in bits 3-6, length - 1 in code units
 * in bits 0-2) and a tail whose form the code gives. */
static bool line_location_table(const uint8_t *t, size_t len, int32_t first_line, int64_t index,
				int32_t *line)
{
	int64_t addr = 0;
	int32_t cur = first_line;
	size_t at = 0;

	while (at < len) {
		uint8_t head = t[at++];
		unsigned code = (head >> 3) & 15, units = (head & 7) + 1;
		int32_t delta = 0;
		uint32_t skip;

		if (!(head & 0x80))
			return false; /* not at an entry: a damaged or cut table */
		if (code == 14) {     /* long form: line delta, end line, column, end column */
			if (!svarint(t, len, &at, &delta) || !varint(t, len, &at, &skip) ||
			    !varint(t, len, &at, &skip) || !varint(t, len, &at, &skip))
				return false;
		} else if (code == 13) { /* line delta only */
			if (!svarint(t, len, &at, &delta))
				return false;
		} else if (code >= 10 && code <= 12) { /* one-line form: delta, two column bytes */
			delta = (int32_t)code - 10;
			at += 2;
		} else if (code < 10) { /* short form: same line, one column byte */
			at += 1;
		}
		cur += delta;
		if (index >= addr && index < addr + units) {
			if (code == 15)
				return false; /* no line for these instructions */
			*line = cur;
			return true;
		}
		addr += units;
	}
	return false;
}

/* 3.10 (PEP 626): pairs of (byte length, signed line delta), -128 = no line. */
static bool line_pep626(const uint8_t *t, size_t len, int32_t first_line, int64_t index,
			int32_t *line)
{
	int64_t addr = 0, offset = index * 2; /* the table counts bytes */
	int32_t cur = first_line;

	for (size_t k = 0; k + 1 < len; k += 2) {
		int8_t delta = (int8_t)t[k + 1];

		if (delta != -128)
			cur += delta;
		if (offset >= addr && offset < addr + t[k]) {
			if (delta == -128)
				return false;
			*line = cur;
			return true;
		}
		addr += t[k];
	}
	return false;
}

bool sc_py_line_at(uint16_t version, const uint8_t *table, size_t len, int32_t first_line,
		   int64_t index, int32_t *line)
{
	if (index < 0)
		return false;
	if (version == 0x030a)
		return line_pep626(table, len, first_line, index, line);
	if (version >= 0x030b && version <= 0x030d)
		return line_location_table(table, len, first_line, index, line);
	return false;
}
