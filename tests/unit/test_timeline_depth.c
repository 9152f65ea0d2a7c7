/* SPDX-License-Identifier: MIT */
/*
 * The depth the timeline gives each region (src/model/timeline.c): an OpenMP construct of an
 * OMP_REGION record comes whole, before what ran inside it; the regions inside it are one
 * deeper, whether they come whole too, pushed (REGION_BEGIN), or share its begin time (the
 * master's implicit task takes its parallel region's: omp_record.c). After its end, depth
 * falls back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "rawfile.h"
#include "model/model.h"
#include "model/timeline.h"
#include "store/session.h"

#define CHUNK 4096u
#define FILE_SIZE (SC_FILE_HEADER_SIZE + CHUNK)
#define PID 77

static uint8_t file[FILE_SIZE];

/* A construct of `kind` without arguments, from `ts` for `dur` ns. */
static uint8_t *omp_region(uint8_t *p, unsigned kind, uint64_t ts, uint32_t dur)
{
	struct sc_rec_omp_region r = { .ts = ts, .dur = dur };

	return test_put_record(p, SC_REC_OMP_REGION, (uint16_t)kind, BODY(r), BODY_LEN(r), NULL, 0);
}

static uint8_t *user_begin(uint8_t *p, uint64_t ts)
{
	struct sc_rec_region b = { .ts = ts, .name_len = 6, .cat_len = 5 };

	return test_put_record(p, SC_REC_REGION_BEGIN, 0, BODY(b), BODY_LEN(b), "inner\0user", 11);
}

static uint8_t *user_end(uint8_t *p, uint64_t ts)
{
	struct sc_rec_region_end e = { .ts = ts };

	return test_put_record(p, SC_REC_REGION_END, 0, BODY(e), BODY_LEN(e), NULL, 0);
}

static void build(void)
{
	struct sc_file_header *h = (void *)file;
	struct sc_chunk_header *c = (void *)(file + SC_FILE_HEADER_SIZE);
	struct sc_rec_process proc = {
		.ts = 10, .pid = PID, .ppid = 1, .exe_len = 9, .cmdline_len = 4, .cwd_len = 5
	};
	struct sc_rec_thread th = { .ts = 11, .tid = PID, .index = 0 };
	uint8_t *p;

	test_file_header(h, SC_FORMAT_VERSION, CHUNK, PID);
	h->start_ns = 1;
	c->magic = SC_CHUNK_MAGIC;
	c->tid = PID;
	p = file + SC_FILE_HEADER_SIZE + sizeof(*c);
	p = test_put_record(p, SC_REC_THREAD_BEGIN, 0, BODY(th), BODY_LEN(th), NULL, 0);
	p = test_put_record(p, SC_REC_PROCESS, 0, BODY(proc), BODY_LEN(proc), "/bin/app\0app\0/tmp",
			    18);
	p = omp_region(p, SC_OMP_PARALLEL, 100, 900);	   /* depth 0 */
	p = omp_region(p, SC_OMP_IMPLICIT_TASK, 100, 900); /* 1: the same times */
	p = omp_region(p, SC_OMP_BARRIER, 200, 100);	   /* 2 */
	p = user_begin(p, 400);				   /* 2 */
	p = omp_region(p, SC_OMP_CRITICAL, 500, 100);	   /* 3: inside the user region */
	p = user_end(p, 800);
	p = omp_region(p, SC_OMP_IMPLICIT_BARRIER, 850, 50); /* 2 */
	p = omp_region(p, SC_OMP_PARALLEL, 2000, 1000);	     /* 0: after the first */
	p = user_begin(p, 3500);			     /* 0 */
	p = user_end(p, 3600);
	th.ts = 4000;
	test_put_record(p, SC_REC_THREAD_END, 0, BODY(th), BODY_LEN(th), NULL, 0);
}

static struct {
	const char *name;
	uint64_t start;
	uint32_t depth;
} seen[16];
static unsigned nseen;

static void on_begin(void *ctx, struct sc_image *img, struct sc_thread *t,
		     const struct sc_region_ev *r)
{
	(void)ctx, (void)img, (void)t;
	if (nseen < 16) {
		seen[nseen].name = strdup(r->name);
		seen[nseen].start = r->start;
		seen[nseen++].depth = r->depth;
	}
}

int main(void)
{
	static const struct {
		const char *name;
		uint64_t start;
		uint32_t depth;
	} want[] = { { "omp parallel", 100, 0 },  { "omp implicit task", 100, 1 },
		     { "omp barrier", 200, 2 },	  { "inner", 400, 2 },
		     { "omp critical", 500, 3 },  { "omp implicit barrier", 850, 2 },
		     { "omp parallel", 2000, 0 }, { "inner", 3500, 0 } };
	char dir[] = "/tmp/syscope-depth-XXXXXX", err[512];
	struct sc_timeline_ops ops = { .region_begin = on_begin };
	struct sc_timeline_stats stats = { 0 };
	struct sc_session s;
	struct sc_model m;

	build();
	if (test_write_session(dir, PID, file, sizeof(file)))
		return 2;
	CHECK(sc_session_open(&s, dir, err, sizeof(err)) == 0);
	sc_model_build(&m, &s, true);
	CHECK(m.images.n == 1);
	if (m.images.n == 1)
		sc_timeline_replay(&m, m.images.v[0], &ops, NULL, &stats);
	CHECK(nseen == sizeof(want) / sizeof(want[0]));
	for (unsigned i = 0; i < nseen && i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK_STR(seen[i].name, want[i].name);
		CHECK(seen[i].start == want[i].start);
		if (seen[i].depth != want[i].depth)
			fprintf(stderr, "region %u (%s at %llu): depth %u, want %u\n", i,
				seen[i].name, (unsigned long long)seen[i].start, seen[i].depth,
				want[i].depth);
		CHECK(seen[i].depth == want[i].depth);
		free((void *)seen[i].name);
	}
	sc_model_free(&m);
	sc_session_close(&s);
	test_remove_session(dir, PID);
	return check_report("test_timeline_depth");
}
