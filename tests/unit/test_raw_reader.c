/* SPDX-License-Identifier: MIT */
/*
 * The raw reader on files written by hand from format.h: a clean file, chunks continued by
 * another thread, a damaged chunk header, a damaged record, an unknown record type, a file
 * cut in the middle of a chunk, and headers that are not ours. The reader must deliver every
 * valid record, skip exactly the damaged parts, and name file and offset for each problem.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "rawfile.h"
#include "store/raw.h"

#define CHUNK 4096u

static char dir[] = "/tmp/syscope-raw-test-XXXXXX";
static uint8_t file[SC_FILE_HEADER_SIZE + 5 * CHUNK];

static void put_header(uint32_t version)
{
	struct sc_file_header *h = (void *)file;

	memset(file, 0, sizeof(file));
	test_file_header(h, version, CHUNK, 4242);
}

static uint8_t *chunk(uint32_t i, int32_t tid)
{
	struct sc_chunk_header *c = (void *)(file + SC_FILE_HEADER_SIZE + i * CHUNK);

	c->magic = SC_CHUNK_MAGIC;
	c->index = i;
	c->tid = tid;
	c->state = SC_CHUNK_OPEN;
	return (uint8_t *)(c + 1);
}

/* Append a sample with `n` frames; returns the position after it. */
static uint8_t *sample(uint8_t *p, uint64_t ts, uint16_t n)
{
	struct sc_rec_sample *s = (void *)p;

	s->hdr.type = SC_REC_SAMPLE;
	s->hdr.size = sc_record_align((uint32_t)(sizeof(*s) + n * 8u));
	s->ts = ts;
	s->kind = SC_SAMPLE_CPUTIME;
	s->nframes = n;
	for (uint16_t i = 0; i < n; i++)
		s->frames[i] = 0x1000 + i;
	return p + s->hdr.size;
}

static uint8_t *owner(uint8_t *p, int32_t tid)
{
	struct sc_rec_owner *o = (void *)p;

	o->hdr.type = SC_REC_OWNER;
	o->hdr.size = sizeof(*o);
	o->tid = tid;
	return p + sizeof(*o);
}

static char *write_file(const char *name, size_t size)
{
	char *path = malloc(strlen(dir) + strlen(name) + 2);
	int fd;

	sprintf(path, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, file, size) != (ssize_t)size)
		abort();
	close(fd);
	return path;
}

struct seen {
	int samples, owners, total;
	int32_t tids[16];
	uint64_t ts[16];
};

static int collect(void *ctx, int32_t tid, const struct sc_record *rec, uint64_t off)
{
	struct seen *s = ctx;

	(void)off;
	if (rec->type == SC_REC_SAMPLE && s->samples < 16) {
		s->tids[s->samples] = tid;
		s->ts[s->samples] = ((const struct sc_rec_sample *)rec)->ts;
		s->samples++;
	}
	s->owners += rec->type == SC_REC_OWNER;
	s->total++;
	return 0;
}

static char diag_text[8192];

static void diag(void *ctx, const char *msg)
{
	(void)ctx;
	strncat(diag_text, msg, sizeof(diag_text) - strlen(diag_text) - 2);
	strcat(diag_text, "\n");
}

static void test_good_and_damaged(void)
{
	struct sc_raw_stats st = { 0 };
	struct sc_raw r;
	struct seen seen = { 0 };
	char err[512], *path;
	uint8_t *p;

	put_header(SC_FORMAT_VERSION);
	/* chunk 0: thread 10, then continued by thread 11 */
	p = chunk(0, 10);
	p = sample(p, 1, 3);
	p = owner(p, 11);
	p = sample(p, 2, 2);
	/* chunk 1: damaged header (wrong index) */
	chunk(1, 12);
	((struct sc_chunk_header *)(file + SC_FILE_HEADER_SIZE + CHUNK))->index = 77;
	/* chunk 2: one good sample, one unknown type, then a record whose size runs past the
	 * chunk, then a sample that must not be read */
	p = chunk(2, 13);
	p = sample(p, 3, 1);
	((struct sc_record *)p)->type = 999;
	((struct sc_record *)p)->size = 16;
	p += 16;
	((struct sc_record *)p)->type = SC_REC_SAMPLE;
	((struct sc_record *)p)->size = 2 * CHUNK;
	sample(p + 64, 99, 1);
	/* chunk 3: never claimed (zero), chunk 4: good, but the file ends in its middle */
	p = chunk(4, 14);
	p = sample(p, 4, 1);
	p = sample(p, 5, 1);
	path = write_file("good.sraw", SC_FILE_HEADER_SIZE + 4 * CHUNK + 124);

	CHECK(sc_raw_open(&r, path, err, sizeof(err)) == 0);
	CHECK(r.nchunks == 5);
	CHECK(sc_raw_foreach(&r, collect, &seen, &st, diag, NULL) == 0);
	CHECK(seen.samples == 4);
	CHECK(seen.tids[0] == 10 && seen.ts[0] == 1);
	CHECK(seen.tids[1] == 11 && seen.ts[1] == 2);
	CHECK(seen.tids[2] == 13 && seen.ts[2] == 3);
	CHECK(seen.tids[3] == 14 && seen.ts[3] == 4); /* ts 5 lies past the end of the file */
	CHECK(seen.owners == 1);
	CHECK(st.unknown_types == 1);
	CHECK(st.damaged_chunks == 2);
	CHECK(st.truncated_chunks == 1);
	CHECK_CONTAINS(diag_text, "good.sraw: chunk 1 at offset 8192: bad chunk header");
	CHECK_CONTAINS(diag_text, "damaged record (type 10, size 8192)");
	CHECK_CONTAINS(diag_text, "chunk 4 at offset 20480: file ends at 20604");
	sc_raw_close(&r);
	unlink(path);
	free(path);
}

/* A record whose header never came (zeros), records after it: the chunk's first records are
 * read, the rest is reported as damaged, not taken for the chunk's end. A sample longer than
 * its frames (the writer kept room it could not give back) is read whole. */
static void test_gap_and_long_record(void)
{
	struct sc_raw_stats st = { 0 };
	struct sc_raw r;
	struct seen seen = { 0 };
	char err[512], *path;
	uint8_t *p;

	put_header(SC_FORMAT_VERSION);
	diag_text[0] = '\0';
	p = chunk(0, 20);
	sample(p, 1, 2);
	((struct sc_record *)p)->size += 256; /* 256 bytes of room kept after its frames */
	p += ((struct sc_record *)p)->size;
	p = sample(p, 2, 1);
	p += 96; /* a record of 96 bytes that never got its header */
	sample(p, 3, 1);
	p = chunk(1, 20); /* the next chunk is read as usual */
	sample(p, 4, 1);
	path = write_file("gap.sraw", SC_FILE_HEADER_SIZE + 2 * CHUNK);

	CHECK(sc_raw_open(&r, path, err, sizeof(err)) == 0);
	CHECK(sc_raw_foreach(&r, collect, &seen, &st, diag, NULL) == 0);
	CHECK(seen.samples == 3);
	CHECK(seen.ts[0] == 1 && seen.ts[1] == 2 && seen.ts[2] == 4);
	CHECK(st.damaged_chunks == 1);
	CHECK_CONTAINS(diag_text,
		       "records after 96 bytes of zeros cannot be read; rest of chunk 0");
	sc_raw_close(&r);
	unlink(path);
	free(path);
}

static void test_refused(void)
{
	struct sc_raw r;
	char err[512], *path;

	path = write_file("empty.sraw", 0);
	CHECK(sc_raw_open(&r, path, err, sizeof(err)) == -ENODATA);
	unlink(path);
	free(path);

	put_header(SC_FORMAT_VERSION);
	path = write_file("short.sraw", 100);
	CHECK(sc_raw_open(&r, path, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "truncated");
	unlink(path);
	free(path);

	put_header(SC_FORMAT_VERSION + 1);
	path = write_file("future.sraw", SC_FILE_HEADER_SIZE);
	CHECK(sc_raw_open(&r, path, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "this syscope reads versions");
	unlink(path);
	free(path);

	put_header(SC_FORMAT_VERSION);
	memcpy(file, "NOTOURS", 8);
	path = write_file("foreign.sraw", SC_FILE_HEADER_SIZE);
	CHECK(sc_raw_open(&r, path, err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "not a syscope raw file");
	unlink(path);
	free(path);
}

static void test_record_shapes(void)
{
	uint8_t buf[256] = { 0 };
	struct sc_rec_sample *s = (void *)buf;
	struct sc_rec_note *n = (void *)buf;

	s->hdr.type = SC_REC_SAMPLE;
	s->hdr.size = sizeof(*s) + 8;
	s->nframes = 1;
	CHECK(sc_record_well_formed(&s->hdr));
	s->nframes = 2; /* frames beyond the record */
	CHECK(!sc_record_well_formed(&s->hdr));

	memset(buf, 0, sizeof(buf));
	n->hdr.type = SC_REC_NOTE;
	n->hdr.size = sizeof(*n) + 8;
	n->text_len = 8;
	memcpy(n + 1, "abcdefg", 8);
	CHECK(sc_record_well_formed(&n->hdr));
	((char *)(n + 1))[7] = 'x'; /* unterminated text */
	CHECK(!sc_record_well_formed(&n->hdr));
	CHECK(sc_record_ts(&n->hdr) == 0);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 2;
	test_good_and_damaged();
	test_gap_and_long_record();
	test_refused();
	test_record_shapes();
	rmdir(dir);
	return check_report("test_raw_reader");
}
