/* SPDX-License-Identifier: MIT */
/*
 * Deterministic fuzzing of everything that reads raw files: a valid file holding every record
 * type is mutated thousands of times (bit flips, overwritten words, lengths and counts set to
 * extremes, truncation) and each result goes through the session reader, the model and the
 * profiles. Under the ASan/UBSan build this finds any read past a record or a buffer; the
 * test fails if the reader crashes or if the unmutated file does not read back exactly.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "rawfile.h"
#include "model/model.h"
#include "model/profile.h"
#include "store/session.h"

#define CHUNK 4096u
#define NCHUNKS 3u
#define FILE_SIZE (SC_FILE_HEADER_SIZE + NCHUNKS * CHUNK)

static uint8_t base[FILE_SIZE];
static uint64_t rng = 0x5c0fe11;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void build_base(void)
{
	struct sc_file_header *h = (void *)base;
	struct sc_chunk_header *c;
	uint8_t *p;
	struct sc_rec_process proc = {
		.ts = 10, .pid = 77, .ppid = 1, .exe_len = 9, .cmdline_len = 12, .cwd_len = 5
	};
	struct sc_rec_thread th = { .ts = 11, .cpu_ns = 5, .tid = 77, .index = 0 };
	struct sc_rec_thread_name name = { .ts = 12, .name = "fuzz" };
	struct sc_rec_module mod = { .ts = 13,
				     .base = 0x400000,
				     .nsegments = 1,
				     .build_id_len = 4,
				     .build_id = { 1, 2, 3, 4 },
				     .seg = { { .vaddr = 0, .memsz = 0x10000, .flags = 5 } },
				     .path_len = 14 };
	struct sc_rec_sampler smp = { .ts = 14, .period_ns = 1000000, .kind = 1, .mechanism = 1 };
	struct sc_rec_fork fork = { .ts = 15, .child_pid = 78 };
	struct sc_rec_exec exec = { .ts = 16, .path_len = 8 };
	struct sc_rec_lost lost = { .ts = 17, .records = 3, .bytes = 96 };
	struct sc_rec_note note = { .ts = 18, .level = 1, .text_len = 6 };
	struct sc_rec_owner own = { .tid = 79 };
	uint8_t sample[sizeof(struct sc_rec_sample) + 4 * 8];
	struct sc_rec_sample *s = (void *)sample;

	memset(base, 0, sizeof(base));
	test_file_header(h, SC_FORMAT_VERSION, CHUNK, 77);
	h->start_ns = 1;
	for (uint32_t i = 0; i < NCHUNKS; i++) {
		c = (void *)(base + SC_FILE_HEADER_SIZE + i * CHUNK);
		c->magic = SC_CHUNK_MAGIC;
		c->index = i;
		c->tid = 77;
	}
	p = base + SC_FILE_HEADER_SIZE + sizeof(*c);
	p = test_put_record(p, SC_REC_THREAD_BEGIN, 0, BODY(th), BODY_LEN(th), NULL, 0);
	p = test_put_record(p, SC_REC_PROCESS, 0, BODY(proc), BODY_LEN(proc),
			    "/bin/app\0app\0arg\0arg\0/tmp", 26);
	p = test_put_record(p, SC_REC_ENVIRON, 0, "A=1\0B=2", 8, NULL, 0);
	p = test_put_record(p, SC_REC_SETTINGS, 0, "SAMPLING_FREQ=1000", 19, NULL, 0);
	p = test_put_record(p, SC_REC_THREAD_NAME, 0, BODY(name), BODY_LEN(name), NULL, 0);
	p = test_put_record(p, SC_REC_MODULE_LOAD, 0, BODY(mod), BODY_LEN(mod), "/no/such/file",
			    14);
	p = test_put_record(p, SC_REC_SAMPLER, 0, BODY(smp), BODY_LEN(smp), NULL, 0);
	memset(sample, 0, sizeof(sample));
	s->ts = 20;
	s->cpu_ns = 1000;
	s->kind = SC_SAMPLE_CPUTIME;
	s->nframes = 4;
	for (int i = 0; i < 4; i++)
		s->frames[i] = 0x400100 + 0x10 * (uint64_t)i;
	for (int i = 0; i < 20; i++) {
		s->ts += 1000000;
		s->cpu_ns += 1000000;
		s->frames[0] = 0x400100 + (uint64_t)(i % 3);
		p = test_put_record(p, SC_REC_SAMPLE, 0, BODY(*s),
				    (uint32_t)(sizeof(sample) - sizeof(s->hdr)), NULL, 0);
	}
	p = test_put_record(p, SC_REC_FORK, 0, BODY(fork), BODY_LEN(fork), NULL, 0);
	p = test_put_record(p, SC_REC_LOST, 0, BODY(lost), BODY_LEN(lost), NULL, 0);
	p = test_put_record(p, SC_REC_NOTE, 0, BODY(note), BODY_LEN(note), "hello", 6);
	p = test_put_record(p, SC_REC_MODULE_UNLOAD, 0, BODY(mod), BODY_LEN(mod), "/no/such/file",
			    14);
	p = test_put_record(p, SC_REC_OWNER, 0, BODY(own), BODY_LEN(own), NULL, 0);
	p = test_put_record(p, SC_REC_THREAD_BEGIN, 0, BODY(th), BODY_LEN(th), NULL, 0);
	p = test_put_record(p, SC_REC_EXEC, 0, BODY(exec), BODY_LEN(exec), "/bin/sh", 8);
	/* A second chunk for thread 79. */
	p = base + SC_FILE_HEADER_SIZE + CHUNK + sizeof(*c);
	((struct sc_chunk_header *)(base + SC_FILE_HEADER_SIZE + CHUNK))->tid = 79;
	for (int i = 0; i < 10; i++) {
		s->ts += 1000000;
		p = test_put_record(p, SC_REC_SAMPLE, 0, BODY(*s),
				    (uint32_t)(sizeof(sample) - sizeof(s->hdr)), NULL, 0);
	}
	th.tid = 79;
	test_put_record(p, SC_REC_THREAD_END, 0, BODY(th), BODY_LEN(th), NULL, 0);
}

static char dir[] = "/tmp/syscope-fuzz-XXXXXX";
static char rawdir[64], path[96];

static void write_file(const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
}

/* Read the file back completely; returns the total of samples in the model. */
static uint64_t read_back(void)
{
	struct sc_session s;
	struct sc_model m;
	struct sc_profile_set set;
	char err[512];
	uint64_t samples;

	if (sc_session_open(&s, dir, err, sizeof(err)))
		return 0;
	sc_model_build(&m, &s, true);
	sc_profiles_build(&set, &m, true);
	samples = m.samples[SC_SAMPLE_CPUTIME];
	for (size_t i = 0; i < set.profiles.n; i++) {
		size_t n;
		uint32_t *ids = sc_profile_sorted_flat(set.profiles.v[i], true, &n);

		free(ids);
	}
	sc_profiles_free(&set);
	sc_model_free(&m);
	sc_session_close(&s);
	return samples;
}

static void mutate(uint8_t *f, size_t *size)
{
	unsigned n = 1 + (unsigned)(next_random() % 4);

	for (unsigned k = 0; k < n; k++) {
		size_t at = (size_t)(next_random() % *size);

		switch (next_random() % 6) {
		case 0: /* flip a bit */
			f[at] ^= (uint8_t)(1u << (next_random() % 8));
			break;
		case 1: /* a random 32-bit word, aligned like sizes and counts are */
			at &= ~(size_t)3;
			if (at + 4 <= *size) {
				uint32_t v = (uint32_t)next_random();

				memcpy(f + at, &v, 4);
			}
			break;
		case 2: /* an extreme value */
			at &= ~(size_t)3;
			if (at + 4 <= *size) {
				static const uint32_t ext[] = { 0,	     1,	     7,
								8,	     0xffff, 0xffffffffu,
								0x7fffffffu, 4096 };
				uint32_t v = ext[next_random() % 8];

				memcpy(f + at, &v, 4);
			}
			break;
		case 3: /* truncate */
			if (next_random() % 4 == 0)
				*size = at;
			break;
		case 4: /* corrupt inside the records of chunk 0 specifically */
			at = SC_FILE_HEADER_SIZE + 64 + (size_t)(next_random() % 1500);
			if (at < *size)
				f[at] = (uint8_t)next_random();
			break;
		default: /* zero a stretch */
			for (size_t i = at; i < *size && i < at + 16; i++)
				f[i] = 0;
			break;
		}
		if (*size < 8)
			*size = 8;
	}
}

int main(int argc, char **argv)
{
	unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 1500;

	if (argc > 2) /* another seed, for longer hunts by hand: test_fuzz_reader ROUNDS SEED */
		rng = strtoull(argv[2], NULL, 0) | 1;
	static uint8_t work[FILE_SIZE];

	if (!mkdtemp(dir))
		return 2;
	snprintf(rawdir, sizeof(rawdir), "%s/raw", dir);
	snprintf(path, sizeof(path), "%s/77.sraw", rawdir);
	if (mkdir(rawdir, 0755))
		return 2;
	build_base();
	write_file(base, sizeof(base));
	CHECK(read_back() == 30); /* the valid file reads back whole */
	for (unsigned r = 0; r < rounds; r++) {
		size_t size = sizeof(base);

		memcpy(work, base, sizeof(base));
		mutate(work, &size);
		write_file(work, size);
		read_back(); /* any result but a crash or a sanitizer report is fine */
	}
	unlink(path);
	rmdir(rawdir);
	rmdir(dir);
	return check_report("test_fuzz_reader");
}
