/* SPDX-License-Identifier: MIT */
/* For tests and tools that make raw files by hand (format.h): the header's fixed part. */
#ifndef SYSCOPE_TESTS_RAWFILE_H
#define SYSCOPE_TESTS_RAWFILE_H

#include <string.h>

#include "../../src/store/format.h"

static inline void test_file_header(struct sc_file_header *h, uint32_t version, uint32_t chunk_size,
				    int32_t pid)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, SC_FILE_MAGIC, 8);
	h->version = version;
	h->header_size = SC_FILE_HEADER_SIZE;
	h->byte_order = SC_BYTE_ORDER_MARK;
	h->chunk_size = chunk_size;
	h->pid = pid;
}

#endif
