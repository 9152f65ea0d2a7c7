/* SPDX-License-Identifier: MIT */
/*
 * Causal profiles from experiment records (src/model/causal.c), on a raw file made by hand
 * whose answer is known: two lines, each tried at 50% with a baseline after it, the same
 * numbers for both. A baseline runs 200 ms for 30 visits, an experiment 200 ms of which 50 ms
 * are delays for 30 visits: the period shrinks from 200/30 to 150/30, a speedup of 25%.
 *
 * One baseline lost 50 ms to a CPU it did not get (its offcpu) and 8 of its visits with it:
 * it is left out (disturbed), so the prediction stays exactly 25%; counted, it would pull
 * the prediction of its line up. Two experiments are written as older writers wrote them,
 * without the offcpu word after the deltas: read as 0, not disturbed. And with the two lines
 * tied, the first by unit id is ranked first.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "rawfile.h"
#include "model/causal.h"

#define CHUNK 8192u
#define FILE_SIZE (SC_FILE_HEADER_SIZE + CHUNK)
#define PID 91
#define MS 1000000ull

static uint8_t file[FILE_SIZE];

static uint64_t clock_ns = 1000 * MS;

/* One experiment from now: `offcpu` < 0 writes the record without the offcpu word. */
static uint8_t *experiment(uint8_t *p, uint32_t unit, unsigned speedup, uint64_t delay,
			   uint64_t visits, int64_t offcpu)
{
	struct sc_rec_causal_experiment e = { .ts = clock_ns,
					      .end_ns = clock_ns + 200 * MS,
					      .delay_ns = delay,
					      .selected_samples = 150,
					      .unit = unit,
					      .speedup = (uint16_t)speedup,
					      .npoints = 1 };
	struct {
		struct sc_causal_delta d;
		uint64_t offcpu;
	} tail = { { .point = 0, .delta = visits }, (uint64_t)(offcpu < 0 ? 0 : offcpu) };

	clock_ns += 205 * MS;
	return test_put_record(p, SC_REC_CAUSAL_EXPERIMENT, 0, BODY(e), BODY_LEN(e), &tail,
			       (uint32_t)(offcpu < 0 ? sizeof(tail.d) : sizeof(tail)));
}

static void build(void)
{
	struct sc_file_header *h = (void *)file;
	struct sc_chunk_header *c = (void *)(file + SC_FILE_HEADER_SIZE);
	struct sc_rec_process proc = {
		.ts = 10, .pid = PID, .ppid = 1, .exe_len = 9, .cmdline_len = 4, .cwd_len = 5
	};
	struct sc_rec_thread th = { .ts = 11, .tid = PID, .index = 0 };
	struct sc_rec_causal_point pt = {
		.ts = 12, .id = 0, .kind = SC_CAUSAL_THROUGHPUT, .name_len = 3
	};
	uint8_t *p;

	test_file_header(h, SC_FORMAT_VERSION, CHUNK, PID);
	h->start_ns = 1;
	c->magic = SC_CHUNK_MAGIC;
	c->tid = PID;
	p = file + SC_FILE_HEADER_SIZE + sizeof(*c);
	p = test_put_record(p, SC_REC_THREAD_BEGIN, 0, BODY(th), BODY_LEN(th), NULL, 0);
	p = test_put_record(p, SC_REC_PROCESS, 0, BODY(proc), BODY_LEN(proc), "/bin/app\0app\0/tmp",
			    18);
	p = test_put_record(p, SC_REC_CAUSAL_POINT, 0, BODY(pt), BODY_LEN(pt), "it", 3);
	for (int round = 0; round < 6; round++)
		for (uint32_t unit = 0; unit < 2; unit++) {
			bool old = round == 1; /* both lines' second experiment: no offcpu word */

			p = experiment(p, unit, 50, 50 * MS, 30, old ? -1 : (int64_t)(MS / 10));
			if (round == 3 && unit == 1) /* lost 50 ms (and 8 visits) to the machine */
				p = experiment(p, unit, 0, 0, 22, (int64_t)(50 * MS));
			else
				p = experiment(p, unit, 0, 0, 30, old ? -1 : 0);
		}
	th.ts = clock_ns;
	test_put_record(p, SC_REC_THREAD_END, 0, BODY(th), BODY_LEN(th), NULL, 0);
}

static double at(const struct sc_causal_result *r, unsigned speedup)
{
	for (size_t i = 0; i < r->est.n; i++)
		if (r->est.v[i].speedup == speedup)
			return r->est.v[i].predicted;
	return NAN;
}

int main(void)
{
	char dir[] = "/tmp/syscope-causal-model-XXXXXX", scope[96];
	char err[512];
	char *sessions[1] = { dir };
	struct sc_causal_data d;
	struct sc_causal_analysis a;
	FILE *f;

	build();
	if (test_write_session(dir, PID, file, sizeof(file)))
		return 2;
	snprintf(scope, sizeof(scope), "%s/%s", dir, SC_CAUSAL_SCOPE_FILE);
	f = fopen(scope, "w");
	if (!f || fputs("unit 0 l app.c:10\nunit 1 l app.c:20\n", f) < 0 || fclose(f))
		return 2;

	CHECK(sc_causal_load(&d, sessions, 1, err, sizeof(err)) == 0);
	CHECK(d.exps.n == 24);
	CHECK(d.disturbed == 1);
	for (size_t i = 0; i < d.exps.n; i++) {
		const struct sc_causal_exp *e = &d.exps.v[i];
		bool lost = e->unit == 1 && !e->speedup && e->delta.n && e->delta.v[0] == 22;

		CHECK(e->disturbed == lost);
		CHECK(e->offcpu_ns == (lost				? 50 * MS
				       : e->speedup && i != 4 && i != 6 ? MS / 10
									: 0));
	}
	sc_causal_analyze(&d, &a);
	CHECK_STR(a.point, "it");
	CHECK(a.baselines == 11); /* 12 less the disturbed one */
	CHECK(a.results.n == 2);
	if (a.results.n == 2) {
		/* Tied: by unit id. */
		CHECK(a.results.v[0].unit == 0);
		CHECK_STR(a.results.v[0].name, "app.c:10");
		CHECK_STR(a.results.v[1].name, "app.c:20");
		for (int i = 0; i < 2; i++) {
			double p = at(&a.results.v[i], 50);

			if (fabs(p - 0.25) > 1e-9)
				fprintf(stderr, "unit %d at 50%%: %.6f, want 0.25\n", i, p);
			CHECK(fabs(p - 0.25) < 1e-9);
		}
	}
	sc_causal_analysis_free(&a);
	sc_causal_data_free(&d);
	unlink(scope);
	test_remove_session(dir, PID);
	return check_report("test_causal_model");
}
