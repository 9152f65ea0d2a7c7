/* SPDX-License-Identifier: MIT */
/* One clock for a merged database (rocpd_clock.h). */
#include "rocpd_clock.h"

#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/vec.h"
#include "rocpd_read.h"

#define SC_CLOCK_REGION "MPI clock sync" /* model/mpi.h: SC_MPI_CLOCK_REGION */

/* What an input says of its process's clock. */
struct clock_input {
	char *guid, *machine;	 /* machine: its node's machine id (or host name) */
	bool single;		 /* one process, not merged: moved onto the reference clock */
	bool aligned;		 /* merged already ($.syscope.clock): on a reference clock */
	bool rank_zero, mpi;	 /* MPI_Init said rank 0; it made MPI calls */
	struct sc_clock_fix own; /* the offsets onto rank 0's clock it measured, if any */
	int64_t start_ns, start_realtime_ns; /* the same moment on both clocks (0: unknown) */
};

struct sc_clock_survey {
	VEC(struct clock_input) in;
	const struct clock_input *ref; /* reference(), once the survey is complete */
	bool ref_known;
};

struct sc_clock_survey *sc_clock_survey_new(void)
{
	return sc_xcalloc(1, sizeof(struct sc_clock_survey));
}

void sc_clock_survey_free(struct sc_clock_survey *cs)
{
	if (!cs)
		return;
	for (size_t i = 0; i < cs->in.n; i++) {
		free(cs->in.v[i].guid);
		free(cs->in.v[i].machine);
	}
	VEC_FREE(&cs->in);
	free(cs);
}

/* The offsets `guid`'s process measured at MPI_Init and MPI_Finalize. */
static void measured_offsets(sqlite3 *db, const char *guid, struct sc_clock_fix *f)
{
	static const char sql[] =
		"SELECT (SELECT CAST(value AS INTEGER) FROM src.rocpd_arg A WHERE A.guid = R.guid "
		"AND A.event_id = R.event_id AND A.name = 'when'), (SELECT CAST(value AS INTEGER) "
		"FROM src.rocpd_arg A WHERE A.guid = R.guid AND A.event_id = R.event_id AND "
		"A.name = 'offset_ns') FROM src.rocpd_region R JOIN src.rocpd_string S ON S.id = "
		"R.name_id AND S.guid = R.guid WHERE R.guid = ?1 AND S.string = '" SC_CLOCK_REGION
		"' ORDER BY R.start LIMIT 2";
	sqlite3_stmt *st;

	f->n = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(st, 1, guid, -1, SQLITE_STATIC);
	while (f->n < 2 && sqlite3_step(st) == SQLITE_ROW)
		if (sqlite3_column_type(st, 0) != SQLITE_NULL &&
		    sqlite3_column_type(st, 1) != SQLITE_NULL) {
			f->when[f->n] = sqlite3_column_int64(st, 0);
			f->offset[f->n++] = sqlite3_column_int64(st, 1);
		}
	sqlite3_finalize(st);
	if (f->n == 2 && f->when[1] <= f->when[0])
		f->n = 1;
}

/* The machine of `guid`'s first process (a merged one's reference process), and its start on
 * both clocks. */
static void process_anchor(sqlite3 *db, const char *guid, struct clock_input *in)
{
	static const char sql[] =
		"SELECT COALESCE(N.machine_id, N.hostname), COALESCE(NULLIF(P.init, 0), P.start), "
		"CAST(json_extract(P.extdata, '$.syscope.start_realtime_ns') AS INTEGER) FROM "
		"src.rocpd_info_process P LEFT JOIN src.rocpd_info_node N ON N.id = P.nid AND "
		"N.guid = P.guid WHERE P.guid = ?1 ORDER BY json_extract(P.extdata, "
		"'$.syscope.clock') IS 'reference' DESC, P.id LIMIT 1";
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(st, 1, guid, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *m = (const char *)sqlite3_column_text(st, 0);

		in->machine = m ? sc_xstrdup(m) : NULL;
		in->start_ns = sqlite3_column_int64(st, 1);
		in->start_realtime_ns = sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
}

void sc_clock_survey_add(struct sc_clock_survey *cs, sqlite3 *db, const char *guid)
{
	struct clock_input *in = VEC_PUSH(&cs->in);

	memset(in, 0, sizeof(*in));
	in->guid = sc_xstrdup(guid);
	/* A database merged before (its processes tagged, one or many) keeps its times: its
	 * reference process anchors the others. One of another producer, or merged by a syscope
	 * that did not tag, of several processes: left as it is. */
	in->aligned = sc_rocpd_scalar(db,
				      "SELECT EXISTS (SELECT 1 FROM src.rocpd_info_process WHERE "
				      "guid = ?1 AND json_extract(extdata, '$.syscope.clock') IS "
				      "NOT NULL)",
				      guid) != 0;
	in->single =
		!in->aligned &&
		sc_rocpd_scalar(db, "SELECT COUNT(*) FROM src.rocpd_info_process WHERE guid = ?1",
				guid) == 1;
	if (in->aligned)
		process_anchor(db, guid, in);
	if (!in->single)
		return;
	in->rank_zero =
		sc_rocpd_scalar(db,
				"SELECT EXISTS (SELECT 1 FROM src.rocpd_region R JOIN "
				"src.rocpd_string S ON S.id = R.name_id AND S.guid = R.guid JOIN "
				"src.rocpd_arg A ON A.guid = R.guid AND A.event_id = R.event_id "
				"WHERE R.guid = ?1 AND S.string LIKE 'MPI\\_Init%' ESCAPE '\\' AND "
				"A.name = 'rank' AND A.value = '0')",
				guid) != 0;
	in->mpi =
		in->rank_zero ||
		sc_rocpd_scalar(db,
				"SELECT EXISTS (SELECT 1 FROM src.rocpd_string S WHERE S.guid = ?1 "
				"AND S.string LIKE 'MPI\\_%' ESCAPE '\\' AND EXISTS (SELECT 1 FROM "
				"src.rocpd_region R WHERE R.guid = S.guid AND R.name_id = S.id))",
				guid) != 0;
	measured_offsets(db, guid, &in->own);
	process_anchor(db, guid, in);
}

static bool same_machine(const struct clock_input *a, const struct clock_input *b)
{
	return a->machine && b->machine && !strcmp(a->machine, b->machine);
}

/*
 * The reference: a database merged before (its clock); else rank 0's process where the
 * inputs have it; else, where ranks measured offsets (onto a rank 0 not among the inputs),
 * none; else the first input's process.
 */
static const struct clock_input *reference(const struct sc_clock_survey *cs)
{
	const struct clock_input *first = NULL;
	bool synced_job = false;

	for (size_t i = 0; i < cs->in.n; i++)
		if (cs->in.v[i].aligned && cs->in.v[i].machine)
			return &cs->in.v[i];
	for (size_t i = 0; i < cs->in.n; i++) {
		const struct clock_input *in = &cs->in.v[i];

		if (!in->single)
			continue;
		if (in->rank_zero)
			return in;
		synced_job |= in->own.n > 0;
		if (!first)
			first = in;
	}
	return synced_job ? NULL : first;
}

/*
 * The constant offset that puts `machine`'s clock on the reference clock, when an input on
 * it tells: 0 on the reference's machine, a synced rank's offset (at MPI_Init) on another.
 */
static bool machine_offset(const struct sc_clock_survey *cs, const struct clock_input *ref,
			   const struct clock_input *of, int64_t *offset)
{
	if (ref && same_machine(of, ref)) {
		*offset = 0;
		return true;
	}
	for (size_t i = 0; i < cs->in.n; i++) {
		const struct clock_input *in = &cs->in.v[i];

		if (in->single && in->own.n && same_machine(in, of)) {
			*offset = in->own.offset[0];
			return true;
		}
	}
	return false;
}

/* An input whose start is known on both clocks and whose machine's offset is known: its wall
 * clock links other hosts' to the reference clock. */
static const struct clock_input *wall_anchor(const struct sc_clock_survey *cs,
					     const struct clock_input *ref, int64_t *offset)
{
	if (ref && ref->start_realtime_ns) {
		*offset = 0;
		return ref;
	}
	for (size_t i = 0; i < cs->in.n; i++) {
		const struct clock_input *in = &cs->in.v[i];

		if (in->single && in->start_realtime_ns && machine_offset(cs, ref, in, offset))
			return in;
	}
	return NULL;
}

static const struct clock_input *find(const struct sc_clock_survey *cs, const char *guid)
{
	for (size_t i = 0; i < cs->in.n; i++)
		if (!strcmp(cs->in.v[i].guid, guid))
			return &cs->in.v[i];
	return NULL;
}

/* Say what was done to an MPI rank with no offsets of its own. */
static void note_unsynced(const char *path, const struct clock_input *in, const char *done)
{
	if (in->mpi)
		pr_warn("%s: an MPI rank with no clock sync (syscope attach came after its "
			"MPI_Init): %s; its messages get no flows (those before the attach are "
			"unknown, so sends cannot be paired with receives)",
			path, done);
	else
		pr_info("%s: %s", path, done);
}

void sc_clock_fix_of(struct sc_clock_survey *cs, const char *path, const char *guid,
		     struct sc_clock_fix *f)
{
	const struct clock_input *in = find(cs, guid), *ref, *anchor;
	int64_t offset, anchor_offset;

	memset(f, 0, sizeof(*f));
	if (!in || !in->single)
		return;	      /* a merged database: aligned already */
	if (!cs->ref_known) { /* the same for every input: once */
		cs->ref = reference(cs);
		cs->ref_known = true;
	}
	ref = cs->ref;
	if (in->own.n) {
		*f = in->own;
		f->how = "mpi";
		if (f->n == 2)
			pr_info("%s: clock moved onto rank 0's by %lld ns at MPI_Init, %lld at "
				"MPI_Finalize, interpolated between",
				path, (long long)f->offset[0], (long long)f->offset[1]);
		else
			pr_info("%s: clock moved onto rank 0's by %lld ns", path,
				(long long)f->offset[0]);
		return;
	}
	if (in == ref) {
		f->how = "reference";
		if (in->rank_zero)
			pr_info("%s: rank 0, whose clock the others' are moved onto", path);
		else
			note_unsynced(path, in, "its clock is the one the others are moved onto");
		return;
	}
	if (machine_offset(cs, ref, in, &offset)) {
		f->n = offset != 0;
		f->offset[0] = offset;
		f->how = offset ? "host" : "same host";
		note_unsynced(path, in,
			      offset ? "moved by the offset a synced rank of its host measured"
				     : "its times are its host's clock, which the reference "
				       "process's host shares");
		return;
	}
	anchor = wall_anchor(cs, ref, &anchor_offset);
	if (anchor && in->start_realtime_ns) {
		f->n = 1;
		f->offset[0] = (in->start_realtime_ns - in->start_ns) -
			       (anchor->start_realtime_ns - anchor->start_ns) + anchor_offset;
		f->how = "wall clock";
		note_unsynced(path, in,
			      "on another host than the reference process, moved onto its clock "
			      "by the two hosts' wall clocks (as close as NTP or PTP keeps them)");
		return;
	}
	note_unsynced(path, in,
		      "its times stay its host's clock (no start time on the wall clock to "
		      "align it by)");
}

bool sc_clock_is_time(const char *col)
{
	static const char *const names[] = { "start", "end", "init", "fini", "timestamp" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(col, names[i]))
			return true;
	return false;
}

char *sc_clock_aligned(const struct sc_clock_fix *f, const char *col)
{
	if (f->n == 1)
		return sqlite3_mprintf("X.\"%w\" + %lld", col, (long long)f->offset[0]);
	return sqlite3_mprintf("X.\"%w\" + CASE WHEN X.\"%w\" <= %lld THEN %lld WHEN X.\"%w\" >= "
			       "%lld THEN %lld ELSE %lld + CAST((X.\"%w\" - %lld) * %lld.0 / %lld "
			       "AS INTEGER) END",
			       col, col, (long long)f->when[0], (long long)f->offset[0], col,
			       (long long)f->when[1], (long long)f->offset[1],
			       (long long)f->offset[0], col, (long long)f->when[0],
			       (long long)(f->offset[1] - f->offset[0]),
			       (long long)(f->when[1] - f->when[0]));
}
