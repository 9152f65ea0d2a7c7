/* SPDX-License-Identifier: MIT */
/*
 * syscope summary INPUT...: the top functions, regions, kernels, memory copies and GPU busy
 * time of one or more rocpd databases (or session folders, through their databases), as
 * terminal tables or CSV, JSON or Markdown. Everything is SQL over the rocpd views, so a
 * database written by another rocpd producer is summarized the same way.
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/log.h"
#include "../common/progress.h"
#include "../common/vec.h"
#include "../store/rocpd_read.h"
#include "../store/session.h"
#include "cmd.h"
#include "report.h"
#include "why_idle.h"
#include "summary_nccl.h"

/* MPI calls: rocpd category MPI_API (docs/output-formats.md), 'mpi' in older files. */
#define MPI_CATEGORIES "'MPI_API', 'mpi'"
#define MPI_REGION "R.category IN (" MPI_CATEGORIES ")"
/* A rank's number: its MPI_Init's, else (attached after MPI_Init) its launcher's variable,
 * as the model's sc_image_rank reads it. */
#define MPI_ENV_RANK                                                                              \
	"COALESCE(json_extract(P.environment, '$.OMPI_COMM_WORLD_RANK'), "                        \
	"json_extract(P.environment, '$.PMI_RANK'), json_extract(P.environment, '$.PMIX_RANK'), " \
	"json_extract(P.environment, '$.MV2_COMM_WORLD_RANK'), "                                  \
	"json_extract(P.environment, '$.SLURM_PROCID'))"
#define MPI_RANKS                                                                              \
	"KI AS (SELECT R.guid, R.nid, R.pid, CAST(A.value AS INTEGER) AS rank FROM regions R " \
	"JOIN region_args A ON A.id = R.id AND A.guid = R.guid WHERE " MPI_REGION " AND "      \
	"R.name IN ('MPI_Init', 'MPI_Init_thread') AND A.name = 'rank'), K AS (SELECT * FROM " \
	"KI UNION ALL SELECT P.guid, P.nid, P.pid, CAST(" MPI_ENV_RANK " AS INTEGER) FROM "    \
	"rocpd_info_process P WHERE " MPI_ENV_RANK " IS NOT NULL AND NOT EXISTS (SELECT 1 "    \
	"FROM KI WHERE KI.guid = P.guid AND KI.pid = P.pid AND KI.nid = P.nid))"
#define MPI_COLLECTIVES                                                                     \
	"'MPI_Barrier', 'MPI_Bcast', 'MPI_Reduce', 'MPI_Allreduce', 'MPI_Gather', "         \
	"'MPI_Gatherv', 'MPI_Scatter', 'MPI_Scatterv', 'MPI_Allgather', 'MPI_Allgatherv', " \
	"'MPI_Alltoall', 'MPI_Alltoallv', 'MPI_Reduce_scatter', 'MPI_Scan', 'MPI_Exscan'"

/* Samples of one category with what each weighs (WEIGHT, over K the sample and T its thread):
 * SELF is per innermost function, TOTAL per function anywhere on the stack (once per
 * sample), ALL_W the whole weight. */
#define SAMPLES(WEIGHT, CATEGORY)                                                                  \
	"W AS (SELECT K.guid, K.id, E.call_stack AS stack, " WEIGHT " AS w FROM rocpd_sample K "   \
	"JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid JOIN rocpd_string C ON C.id " \
	"= E.category_id AND C.guid = E.guid JOIN rocpd_track TR ON TR.id = K.track_id AND "       \
	"TR.guid = K.guid LEFT JOIN rocpd_info_thread T ON T.id = TR.tid AND T.guid = TR.guid "    \
	"WHERE C.string = '" CATEGORY "' AND json_valid(E.call_stack) AND "                        \
	"json_array_length(E.call_stack) > 0 AND (K.extdata IS NULL OR json_valid(K.extdata))), "  \
	"SELF AS (SELECT json_extract(stack, '$[#-1].name') AS function, json_extract(stack, "     \
	"'$[#-1].module') AS module, SUM(w) AS ns, COUNT(*) AS samples FROM W GROUP BY 1, 2), "    \
	"TOTAL AS (SELECT function, module, SUM(w) AS ns, COUNT(*) AS samples FROM (SELECT "       \
	"DISTINCT W.guid, W.id, W.w, json_extract(J.value, '$.name') AS function, "                \
	"json_extract(J.value, '$.module') AS module FROM W, json_each(W.stack) J) GROUP BY 1, "   \
	"2), ALL_W AS (SELECT NULLIF(SUM(w), 0) AS ns FROM W)"

/* CPU-time samples (category timer_sampling) weigh the thread's CPU time since its previous
 * sample (since the thread began, at most one period, for its first), as syscope's own
 * profiles weigh them; the time to the next sample where a file has no CPU times. */
#define CPU_SAMPLES                                                                             \
	SAMPLES("CASE WHEN json_extract(K.extdata, '$.cpu_ns') IS NULL THEN "                   \
		"COALESCE(LEAD(K.timestamp) OVER (PARTITION BY K.guid, K.track_id ORDER BY "    \
		"K.timestamp, K.id) - K.timestamp, 0) ELSE COALESCE(json_extract(K.extdata, "   \
		"'$.cpu_ns') - LAG(json_extract(K.extdata, '$.cpu_ns')) OVER (PARTITION BY "    \
		"K.guid, K.track_id ORDER BY K.timestamp, K.id), MIN(json_extract(K.extdata, "  \
		"'$.cpu_ns') - json_extract(T.extdata, '$.begin_cpu_ns'), COALESCE((SELECT "    \
		"json_extract(P.value, '$.period_ns') FROM json_each(T.extdata, '$.samplers') " \
		"P WHERE json_extract(P.value, '$.kind') = 1), 1e18)), 0) END",                 \
		"timer_sampling")

/* Wall-clock samples (--sampling-realtime) weigh the wall time since the thread's previous
 * one (since the thread began, for its first), as the sampling_wall_clock profile does. */
#define WALL_SAMPLES                                                                             \
	SAMPLES("COALESCE(K.timestamp - LAG(K.timestamp) OVER (PARTITION BY K.guid, K.track_id " \
		"ORDER BY K.timestamp, K.id), K.timestamp - T.start, 0)",                        \
		"wall_clock_sampling")

#define FUNCTIONS_SELF(SAMPLES_CTE)                                                            \
	"WITH " SAMPLES_CTE " SELECT S.function, S.module, ROUND(S.ns / 1e9, 3) AS self_s, "   \
	"ROUND(100.0 * S.ns / A.ns, 1) AS self_percent, ROUND(T.ns / 1e9, 3) AS total_s, "     \
	"ROUND(100.0 * T.ns / A.ns, 1) AS total_percent, S.samples FROM SELF S LEFT JOIN "     \
	"TOTAL T ON T.function IS S.function AND T.module IS S.module, ALL_W A ORDER BY S.ns " \
	"DESC, S.samples DESC"
#define FUNCTIONS_TOTAL(SAMPLES_CTE)                                                            \
	"WITH " SAMPLES_CTE " SELECT T.function, T.module, ROUND(T.ns / 1e9, 3) AS total_s, "   \
	"ROUND(100.0 * T.ns / A.ns, 1) AS total_percent, ROUND(COALESCE(S.ns, 0) / 1e9, 3) AS " \
	"self_s, ROUND(100.0 * COALESCE(S.ns, 0) / A.ns, 1) AS self_percent, T.samples FROM "   \
	"TOTAL T LEFT JOIN SELF S ON S.function IS T.function AND S.module IS T.module, ALL_W " \
	"A ORDER BY T.ns DESC, T.samples DESC"

/* The table whose rows a section reads: a section runs only where it has rows (it would
 * be empty otherwise), and the progress line counts them as the section's work. */
enum reads {
	R_NONE,
	R_PROCESSES,
	R_SAMPLES,
	R_REGIONS,
	R_KERNELS,
	R_COPIES,
	R_GPU,
	R_PMC,
	R_AGENTS,
	R_COUNT
};

static const char *const reads_sql[R_COUNT] = {
	[R_PROCESSES] = "SELECT COUNT(*) FROM rocpd_info_process",
	[R_SAMPLES] = "SELECT COUNT(*) FROM rocpd_sample",
	[R_REGIONS] = "SELECT COUNT(*) FROM rocpd_region",
	[R_KERNELS] = "SELECT COUNT(*) FROM rocpd_kernel_dispatch",
	[R_COPIES] = "SELECT COUNT(*) FROM rocpd_memory_copy",
	[R_GPU] = "SELECT (SELECT COUNT(*) FROM rocpd_kernel_dispatch) + (SELECT COUNT(*) FROM "
		  "rocpd_memory_copy)",
	[R_PMC] = "SELECT COUNT(*) FROM rocpd_pmc_event",
	[R_AGENTS] = "SELECT COUNT(*) FROM rocpd_info_agent",
};

struct section {
	const char *key, *title, *sql; /* a LIMIT of --top rows is appended */
	enum reads reads;
	/* Region categories of which one must be among the strings for the section to run */
	const char *categories;
};

static const struct section sections[] = {
	{ "processes", "PROCESSES",
	  "SELECT P.pid, P.command, (P.end - P.start) / 1e9 AS seconds, (SELECT COUNT(*) FROM "
	  "threads T WHERE T.pid = P.pid AND T.nid = P.nid AND T.guid = P.guid) AS threads, "
	  "P.hostname FROM processes P ORDER BY P.start",
	  R_PROCESSES, NULL },
	{ "functions", "TOP FUNCTIONS BY CPU TIME (SELF)", FUNCTIONS_SELF(CPU_SAMPLES), R_SAMPLES,
	  NULL },
	{ "functions_total", "TOP FUNCTIONS BY CPU TIME (TOTAL, WITH SELF)",
	  FUNCTIONS_TOTAL(CPU_SAMPLES), R_SAMPLES, NULL },
	{ "wall_functions", "TOP FUNCTIONS BY WALL TIME (SELF)", FUNCTIONS_SELF(WALL_SAMPLES),
	  R_SAMPLES, NULL },
	{ "wall_functions_total", "TOP FUNCTIONS BY WALL TIME (TOTAL, WITH SELF)",
	  FUNCTIONS_TOTAL(WALL_SAMPLES), R_SAMPLES, NULL },
	{ "regions", "TOP REGIONS",
	  "SELECT category, name, COUNT(*) AS calls, ROUND(SUM(duration) / 1e6, 3) AS total_ms, "
	  "ROUND(AVG(duration) / 1e6, 3) AS mean_ms, ROUND(MIN(duration) / 1e6, 3) AS min_ms, "
	  "ROUND(MAX(duration) / 1e6, 3) AS max_ms FROM regions WHERE category NOT IN "
	  "('timer_sampling', 'wall_clock_sampling') GROUP BY category, name ORDER BY "
	  "SUM(duration) DESC",
	  R_REGIONS, NULL },
	{ "kernels", "TOP KERNELS",
	  "SELECT name, COUNT(*) AS calls, ROUND(SUM(duration) / 1e6, 3) AS total_ms, "
	  "ROUND(AVG(duration) / 1e3, 3) AS mean_us, ROUND(MIN(duration) / 1e3, 3) AS min_us, "
	  "ROUND(MAX(duration) / 1e3, 3) AS max_us, ROUND(100.0 * SUM(duration) / (SELECT "
	  "SUM(duration) FROM kernels), 1) AS percent FROM kernels GROUP BY name ORDER BY "
	  "SUM(duration) DESC",
	  R_KERNELS, NULL },
	/* GPU hardware counters per kernel (--gpu-events): values on the dispatch's event. */
	{ "kernel_counters", "GPU COUNTERS PER KERNEL (MEAN OVER ITS DISPATCHES)",
	  "SELECT S.display_name AS kernel, M.name AS counter, M.units AS unit, COUNT(*) AS "
	  "dispatches, ROUND(AVG(V.value), 3) AS mean, ROUND(MIN(V.value), 3) AS min, "
	  "ROUND(MAX(V.value), 3) AS max FROM rocpd_pmc_event V JOIN rocpd_info_pmc M ON M.id = "
	  "V.pmc_id AND M.guid = V.guid JOIN rocpd_kernel_dispatch K ON K.event_id = V.event_id "
	  "AND K.guid = V.guid JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = "
	  "K.guid GROUP BY S.display_name, M.name, M.units ORDER BY SUM(K.end - K.start) DESC, "
	  "kernel, counter",
	  R_PMC, NULL },
	{ "gpu_by_python_line", "GPU TIME LAUNCHED BY PYTHON LINE",
	  "SELECT json_extract(L.line_info, '$[#-1].file') AS file, json_extract(L.line_info, "
	  "'$[#-1].line') AS line, json_extract(L.line_info, '$[#-1].name') AS function, "
	  "COUNT(DISTINCT L.id) AS calls, ROUND(SUM(W.duration) / 1e6, 3) AS gpu_ms FROM (SELECT "
	  "guid, stack_id, duration FROM kernels UNION ALL SELECT guid, stack_id, duration FROM "
	  "memory_copies) W JOIN regions L ON L.guid = W.guid AND L.stack_id = W.stack_id WHERE "
	  "W.stack_id != 0 AND json_valid(L.line_info) AND json_array_length(L.line_info) > 0 "
	  "GROUP BY file, line, function ORDER BY SUM(W.duration) DESC",
	  R_GPU, NULL },
	{ "memory_copies", "MEMORY COPIES",
	  "SELECT name, COUNT(*) AS copies, SUM(size) AS bytes, ROUND(SUM(duration) / 1e6, 3) AS "
	  "total_ms, ROUND(SUM(size) / NULLIF(SUM(duration), 0), 3) AS gb_per_s FROM "
	  "memory_copies GROUP BY name ORDER BY SUM(duration) DESC",
	  R_COPIES, NULL },
	{ "counters", "COUNTERS (MEAN WEIGHTED BY TIME)",
	  "WITH V AS (SELECT I.name, I.units, P.value, S.timestamp AS ts, LEAD(S.timestamp) OVER "
	  "(PARTITION BY I.guid, I.id ORDER BY S.timestamp) AS next FROM rocpd_pmc_event P JOIN "
	  "rocpd_info_pmc I ON P.pmc_id = I.id AND P.guid = I.guid JOIN rocpd_sample S ON "
	  "S.event_id = P.event_id AND S.guid = P.guid) SELECT name AS counter, units AS unit, "
	  "COUNT(*) AS \"values\", ROUND(MIN(value), 3) AS min, ROUND(COALESCE(SUM(value * (next - ts)) / "
	  "NULLIF(SUM(next - ts), 0), AVG(value)), 3) AS mean, ROUND(MAX(value), 3) AS max FROM V "
	  "GROUP BY "
	  "name, units ORDER BY name",
	  R_PMC, NULL },
	/* MPI (regions of category mpi): ranks come from MPI_Init's rank argument. */
	{ "mpi_ranks", "MPI TIME PER RANK",
	  "WITH " MPI_RANKS " SELECT K.rank, P.hostname AS host, P.pid, COUNT(*) AS calls, "
	  "ROUND(SUM(R.duration) / 1e6, 3) AS mpi_ms, ROUND(100.0 * SUM(R.duration) / "
	  "NULLIF(P.end - P.start, 0), 1) AS percent_of_run FROM regions R JOIN processes P ON "
	  "P.pid = R.pid AND P.nid = R.nid AND P.guid = R.guid LEFT JOIN K ON K.pid = R.pid AND "
	  "K.nid = R.nid AND K.guid = R.guid WHERE " MPI_REGION " GROUP BY R.guid, R.nid, "
	  "R.pid ORDER BY K.rank, P.hostname, P.pid",
	  R_REGIONS, MPI_CATEGORIES },
	{ "mpi_functions", "MPI FUNCTIONS",
	  "WITH B AS (SELECT guid, id, SUM(CASE WHEN name = 'bytes_sent' THEN CAST(value AS "
	  "INTEGER) END) AS sent, SUM(CASE WHEN name = 'bytes_received' THEN CAST(value AS "
	  "INTEGER) END) AS received FROM region_args WHERE name IN ('bytes_sent', "
	  "'bytes_received') GROUP BY guid, id) SELECT R.name AS function, COUNT(*) AS calls, "
	  "COUNT(DISTINCT R.guid || '/' || R.nid || '/' || R.pid) AS ranks, ROUND(SUM(R.duration) "
	  "/ 1e6, 3) AS total_ms, ROUND(MAX(R.duration) / 1e6, 3) AS max_ms, "
	  "COALESCE(SUM(B.sent), 0) AS bytes_sent, COALESCE(SUM(B.received), 0) AS "
	  "bytes_received FROM regions R LEFT JOIN B ON B.id = R.id AND B.guid = R.guid WHERE " MPI_REGION
	  " GROUP BY R.name ORDER BY SUM(R.duration) DESC",
	  R_REGIONS, MPI_CATEGORIES },
	/* The n-th call of a collective on a communicator is one operation on every rank; the
	 * rank that entered it last kept the others waiting (from their entry to its). */
	{ "mpi_collectives", "MPI COLLECTIVES: WHO KEPT THE OTHERS WAITING",
	  /* The communicator by a join (a correlated subquery scanned every argument of the
	   * database for each call: 5.2 s of 50 000 calls' summary, 0.3 s joined). */
	  "WITH " MPI_RANKS ", C AS (SELECT R.guid, R.nid, R.pid, R.name, R.start, A.value AS "
	  "comm FROM regions R LEFT JOIN region_args A ON A.id = R.id AND A.guid = R.guid AND "
	  "A.name = 'comm' WHERE " MPI_REGION " AND R.name IN (" MPI_COLLECTIVES
	  ")), S AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY guid, nid, pid, name, comm ORDER "
	  "BY start) AS seq FROM C), I AS (SELECT name, comm, seq, MAX(start) AS last FROM S "
	  "GROUP BY name, comm, seq), W AS (SELECT S.*, I.last - S.start AS waited, S.start = "
	  "I.last AS slowest FROM S JOIN I USING (name, comm, seq)) SELECT W.name AS collective, "
	  "COUNT(DISTINCT W.comm || '/' || W.seq) AS operations, (SELECT K.rank FROM W W2 JOIN K "
	  "ON K.pid = W2.pid AND K.nid = W2.nid AND K.guid = W2.guid WHERE W2.name = W.name AND "
	  "W2.slowest GROUP BY K.rank ORDER BY COUNT(*) DESC, K.rank LIMIT 1) AS slowest_rank, "
	  "ROUND(SUM(W.waited) / 1e6, 3) AS others_waited_ms, ROUND(MAX(W.waited) / 1e6, 3) AS "
	  "max_wait_ms FROM W GROUP BY W.name ORDER BY SUM(W.waited) DESC",
	  R_REGIONS, MPI_CATEGORIES },
	NCCL_SECTION,
	{ "gpu_busy", "GPU BUSY",
	  /* Per process and GPU, over the process's run (rocpd's own busy view divides by
	   * the span of all GPU work, of every file together). */
	  "WITH B AS (SELECT A.absolute_index AS agent_abs_index, A.name AS agent_name, (SELECT "
	  "IFNULL(SUM(duration), 0) FROM kernels K WHERE K.agent_abs_index = A.absolute_index "
	  "AND K.guid = A.guid) + (SELECT IFNULL(SUM(duration), 0) FROM memory_copies M WHERE "
	  "M.dst_agent_abs_index = A.absolute_index AND M.guid = A.guid) AS busy_time, (SELECT "
	  "MAX(end) - MIN(start) FROM rocpd_info_process P WHERE P.guid = A.guid) AS wall_time "
	  "FROM rocpd_info_agent A WHERE A.type = 'GPU') SELECT agent_abs_index AS gpu, "
	  "agent_name AS name, ROUND(busy_time / 1e6, 3) AS busy_ms, ROUND(wall_time / 1e6, 3) AS "
	  "wall_ms, ROUND(100.0 * busy_time / NULLIF(wall_time, 0), 1) AS percent FROM B",
	  R_AGENTS, NULL },
};

#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

static int64_t scalar(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1; /* unknown: the section runs and says what is wrong */
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Whether section `s` can have rows: its table has some, and where it reads regions of
 * given categories, one of them is among the strings (the categories' names are). */
static bool section_runs(sqlite3 *db, const struct section *s, const int64_t *rows)
{
	char *q;
	bool yes;

	if (!rows[s->reads])
		return false;
	if (!s->categories)
		return true;
	q = sc_xasprintf("SELECT EXISTS (SELECT 1 FROM rocpd_string WHERE string IN (%s))",
			 s->categories);
	yes = scalar(db, q) != 0;
	free(q);
	return yes;
}

static int query(sqlite3 *db, const char *sql, struct sc_report *res, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int ncol, rc;

	memset(res, 0, sizeof(*res));
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		return -1;
	}
	ncol = sqlite3_column_count(st);
	for (int c = 0; c < ncol; c++)
		sc_report_column(res, sqlite3_column_name(st, c));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (int c = 0; c < ncol; c++) {
			const unsigned char *t = sqlite3_column_text(st, c);
			int type = sqlite3_column_type(st, c);

			sc_report_cell(res, t ? (const char *)t : "",
				       type == SQLITE_INTEGER || type == SQLITE_FLOAT);
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

int cmd_summary(int argc, char **argv)
{
	const struct sc_verb *verb = sc_verb_find("summary");
	const char *format = NULL, *top = NULL, *why_idle = NULL, *idle_threshold = NULL;
	enum sc_report_format fmt;
	struct sc_extra_opt extras[] = {
		{ "format", 'F', true, "table|csv|json|md",
		  "Output: terminal tables (default), "
		  "CSV, JSON or Markdown",
		  &format },
		{ "top", 'n', true, "N", "Rows per section (default 10)", &top },
		{ "why-idle", 0, false, NULL,
		  "Why each GPU was idle: busy fraction, idle intervals and what held the next "
		  "operation back, ranked (table or json)",
		  &why_idle },
		{ "idle-threshold", 0, true, "US",
		  "--why-idle: idle intervals shorter than this are counted, not attributed "
		  "(default 10)",
		  &idle_threshold },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	VEC(char *) files = { 0 };
	struct sc_rocpd_set set;
	struct sc_cli cli;
	json_t *doc = NULL;
	char err[1024];
	int64_t rows[R_COUNT];
	bool runs[NSECTIONS], failed[NSECTIONS] = { false };
	struct sc_report reports[NSECTIONS];
	uint64_t work = 0;
	long limit = 10;
	int rc = 0;

	sc_cli_parse(&cli, verb, argc, argv, extras, false);
	if (sc_cli_answered(&cli, extras))
		return 0;
	if (sc_report_format_parse(format ? format : "table", &fmt))
		sc_die(SC_EXIT_USAGE,
		       "summary: --format '%s' unknown (valid: table, csv, json, md)", format);
	if (top) {
		char *end;

		limit = strtol(top, &end, 10);
		if (*end || limit < 1 || limit > 100000)
			sc_die(SC_EXIT_USAGE,
			       "summary: --top '%s' is not valid (valid: 1 to 100000)", top);
	}
	if (!cli.nrest)
		sc_die(SC_EXIT_USAGE,
		       "summary: give one or more sessions or rocpd databases "
		       "(usage: %s)",
		       verb->usage);
	if (idle_threshold && !why_idle)
		sc_die(SC_EXIT_USAGE, "summary: --idle-threshold goes with --why-idle");
	if (why_idle) {
		long us = 10;
		char *end = NULL;

		if (idle_threshold)
			us = strtol(idle_threshold, &end, 10);
		if (idle_threshold && (*end || us < 0 || us > 1000000000))
			sc_die(SC_EXIT_USAGE,
			       "summary: --idle-threshold '%s' is not valid (valid: 0 to 1000000000 "
			       "microseconds)",
			       idle_threshold);
		if (fmt != SC_REPORT_TABLE && fmt != SC_REPORT_JSON)
			sc_die(SC_EXIT_USAGE,
			       "summary: --why-idle writes a table or JSON (valid: --format table, "
			       "--format json)");
		rc = sc_why_idle(cli.rest, cli.nrest, fmt == SC_REPORT_JSON, (unsigned)limit,
				 (uint64_t)us * 1000);
		sc_cli_free(&cli);
		return rc;
	}
	for (int i = 0; i < cli.nrest; i++)
		sc_rocpd_inputs(cli.rest[i], &files);
	if (!files.n)
		sc_die(SC_EXIT_FAILURE, "no rocpd databases in %s", cli.rest[0]);
	if (sc_rocpd_open(&set, files.v, files.n, err, sizeof(err)))
		sc_die(SC_EXIT_FAILURE, "%s", err);
	if (fmt == SC_REPORT_JSON)
		doc = json_object();
	rows[R_NONE] = 1;
	for (int k = R_NONE + 1; k < R_COUNT; k++)
		rows[k] = scalar(set.db, reads_sql[k]);
	for (size_t i = 0; i < NSECTIONS; i++) {
		runs[i] = section_runs(set.db, &sections[i], rows);
		work += runs[i] ? (uint64_t)(rows[sections[i].reads] > 0 ? rows[sections[i].reads]
									 : 1)
				: 0;
	}
	/* The fraction of the sections' rows read so far (a section counts when it is done);
	 * the tables are printed after, so that the line and they do not mix. */
	sc_progress_begin("summarizing", work);
	for (size_t i = 0; i < NSECTIONS; i++) {
		char *q = sc_xasprintf("%s LIMIT %ld", sections[i].sql, limit);

		memset(&reports[i], 0, sizeof(reports[i]));
		if (runs[i] && query(set.db, q, &reports[i], err, sizeof(err))) {
			pr_err("summary: %s: %s", sections[i].key, err);
			sc_report_free(&reports[i]);
			memset(&reports[i], 0, sizeof(reports[i]));
			failed[i] = true;
			rc = 1;
		}
		if (runs[i])
			sc_progress_add((uint64_t)(rows[sections[i].reads] > 0
							   ? rows[sections[i].reads]
							   : 1));
		free(q);
	}
	sc_progress_end();
	for (size_t i = 0; i < NSECTIONS; i++) {
		char *title = NULL;

		if (failed[i]) {
			continue;
		} else if (doc) { /* a section that could have no rows is an empty list */
			json_object_set_new(doc, sections[i].key, sc_report_json(&reports[i]));
		} else { /* empty sections are left out of the text forms */
			if (sections[i].reads == R_PROCESSES && rows[R_PROCESSES] > limit)
				title = sc_xasprintf("%s (%lld, THE FIRST %ld BY START)",
						     sections[i].title,
						     (long long)rows[R_PROCESSES], limit);
			sc_report_print(&reports[i], fmt, sections[i].key,
					title ? title : sections[i].title, 80);
		}
		free(title);
		sc_report_free(&reports[i]);
	}
	if (doc)
		json_object_set_new(doc, "process_count", json_integer(rows[R_PROCESSES]));
	if (doc) {
		json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(9));
		putchar('\n');
		json_decref(doc);
	}
	sc_rocpd_close(&set);
	for (size_t i = 0; i < files.n; i++)
		free(files.v[i]);
	VEC_FREE(&files);
	sc_cli_free(&cli);
	return rc;
}
