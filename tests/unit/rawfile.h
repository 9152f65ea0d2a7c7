/* SPDX-License-Identifier: MIT */
/* For tests and tools that make raw files by hand (format.h): the header's fixed part. */
#ifndef SYSCOPE_TESTS_RAWFILE_H
#define SYSCOPE_TESTS_RAWFILE_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Appends one record (header, body, then an optional tail such as its strings) at `p`;
 * returns where the next goes. */
static inline uint8_t *test_put_record(uint8_t *p, uint16_t type, uint16_t flags, const void *body,
				       uint32_t len, const void *tail, uint32_t tail_len)
{
	struct sc_record *h = (void *)p;
	uint32_t size = sc_record_align((uint32_t)sizeof(*h) + len + tail_len);

	memcpy(p + sizeof(*h), body, len);
	if (tail_len)
		memcpy(p + sizeof(*h) + len, tail, tail_len);
	h->size = size;
	h->type = type;
	h->flags = flags;
	return p + size;
}

/* A record struct's body: what follows its header. */
#define BODY(rec) ((const char *)&(rec) + sizeof(struct sc_record))
#define BODY_LEN(rec) ((uint32_t)(sizeof(rec) - sizeof(struct sc_record)))

/* A session folder for the reader: mkdtemp(dir) (a template ending in XXXXXX), then `data`
 * as dir/raw/PID.sraw. Returns 0, or -1 with nothing more made. */
static inline int test_write_session(char *dir, int pid, const void *data, size_t n)
{
	char path[PATH_MAX];
	FILE *f;

	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/raw", dir);
	if (mkdir(path, 0755))
		return -1;
	snprintf(path, sizeof(path), "%s/raw/%d.sraw", dir, pid);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	if (fwrite(data, 1, n, f) != n) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

/* Removes what test_write_session made (the caller removes any other file it put there). */
static inline void test_remove_session(const char *dir, int pid)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/raw/%d.sraw", dir, pid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/raw", dir);
	rmdir(path);
	rmdir(dir);
}

#endif
