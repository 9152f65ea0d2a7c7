/* SPDX-License-Identifier: MIT */
/*
 * One clock for a merged database (rocpd_merge.c). Each input process's times are in its
 * host's clock; the merge moves them onto one reference clock: MPI rank 0's where the job has
 * one (the offsets libsyscope-mpi.so measured at MPI_Init and MPI_Finalize), else the first
 * input's. A process with no offsets of its own (an attached rank, a process that is not
 * MPI) takes its host's: none on the reference's host (one monotonic clock per host),
 * another synced rank's on its host, else the difference of the two hosts' wall clocks at
 * their starts (as close as NTP keeps them). Before any row is copied, every input is
 * surveyed (sc_clock_survey_add), since rank 0 may come last.
 */
#ifndef SYSCOPE_STORE_ROCPD_CLOCK_H
#define SYSCOPE_STORE_ROCPD_CLOCK_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

/* The offset to add to a process's times: none (n 0), constant (1), or interpolated between
 * `when[0]` and `when[1]` and constant outside them (2). `how` goes into the process's
 * extdata ($.syscope.clock), so that readers know its times are on the reference clock. */
struct sc_clock_fix {
	int n;
	int64_t when[2], offset[2];
	const char *how;
};

struct sc_clock_survey;

struct sc_clock_survey *sc_clock_survey_new(void);
void sc_clock_survey_free(struct sc_clock_survey *cs);
/* What the input attached to `db` as "src" says of the clock of its process `guid`. */
void sc_clock_survey_add(struct sc_clock_survey *cs, sqlite3 *db, const char *guid);
/* The fix for `guid`'s process, with a note on stderr saying which (`path` names it). An
 * input of several processes (merged already) keeps its times. Every input is surveyed
 * before the first call. */
void sc_clock_fix_of(struct sc_clock_survey *cs, const char *path, const char *guid,
		     struct sc_clock_fix *f);
/* Whether a rocpd column holds a time (ns of the recording clock). */
bool sc_clock_is_time(const char *col);
/* The SQL expression of column `col` of input row X with `f` applied (sqlite3_free it). */
char *sc_clock_aligned(const struct sc_clock_fix *f, const char *col);

#endif /* SYSCOPE_STORE_ROCPD_CLOCK_H */
