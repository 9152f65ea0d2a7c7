/* SPDX-License-Identifier: MIT */
/*
 * The NCCL section of `syscope summary` (summary.c): bytes, time and bandwidth per
 * collective kind, from the regions libsyscope-nccl.so writes (src/gpu/nccl/nccl_events.h).
 *
 * The calls are the API regions (category nccl, NCCL_API in rocpd files; NCCL 2.28's interface v5); an older NCCL
 * reports only the launched tasks (nccl_task), which stand for them then. host_ms is the
 * calls' own time (an enqueue: NCCL is asynchronous); gpu_ms their kernels' time where the
 * kernel channels were recorded (last channel end minus first channel start, per task;
 * gpu_timed counts those calls). Bandwidths as nccl-tests defines them, from the GPU-timed
 * calls only: algbw = data / time, where data is count x type size, times the ranks for
 * AllGather and ReduceScatter (NCCL's count is one rank's part there); busbw = algbw x
 * 2(n-1)/n for AllReduce, (n-1)/n for AllGather, ReduceScatter and AlltoAll, 1 otherwise.
 */
#ifndef SYSCOPE_CMD_SUMMARY_NCCL_H
#define SYSCOPE_CMD_SUMMARY_NCCL_H

/* The region categories the section reads (strings one of which a database must hold). */
#define NCCL_CATEGORIES "'NCCL_API', 'nccl', 'nccl_task', 'nccl_kernel'"

#define NCCL_ARGS                                                                              \
	"A AS (SELECT guid, id, MAX(CASE WHEN name = 'kind' THEN value END) AS kind, "         \
	"MAX(CASE WHEN name = 'bytes' THEN CAST(value AS INTEGER) END) AS bytes, "             \
	"MAX(CASE WHEN name = 'nranks' THEN CAST(value AS INTEGER) END) AS nranks, "           \
	"MAX(CASE WHEN name = 'id' THEN CAST(value AS INTEGER) END) AS eid, "                  \
	"MAX(CASE WHEN name = 'parent' THEN CAST(value AS INTEGER) END) AS parent, "           \
	"MAX(CASE WHEN name = 'gpu_start' THEN CAST(value AS INTEGER) END) AS gs, "            \
	"MAX(CASE WHEN name = 'gpu_ns' THEN CAST(value AS INTEGER) END) AS gn FROM "           \
	"region_args WHERE name IN ('kind', 'bytes', 'nranks', 'id', 'parent', 'gpu_start', "  \
	"'gpu_ns') GROUP BY guid, id), "                                                       \
	"R AS (SELECT G.guid, G.pid, CASE G.category WHEN 'NCCL_API' THEN 'nccl' ELSE "        \
	"G.category END AS category, G.duration, A.* FROM regions G JOIN A ON A.id = G.id "    \
	"AND A.guid = G.guid WHERE G.category IN ('NCCL_API', 'nccl', 'nccl_task', "           \
	"'nccl_kernel')), "                                                                    \
	"T AS (SELECT guid, pid, parent AS task, MAX(gs + gn) - MIN(gs) AS gpu FROM R WHERE "  \
	"category = 'nccl_kernel' AND gs IS NOT NULL GROUP BY guid, pid, parent), "            \
	"TK AS (SELECT R.guid, R.pid, R.eid, R.parent, T.gpu FROM R JOIN T ON T.guid = "       \
	"R.guid AND T.pid = R.pid AND T.task = R.eid WHERE R.category = 'nccl_task'), "        \
	"L AS (SELECT CASE WHEN EXISTS (SELECT 1 FROM R WHERE category = 'nccl' AND kind IS "  \
	"NOT NULL) THEN 'nccl' ELSE 'nccl_task' END AS level), "                               \
	"C AS (SELECT R.*, CASE WHEN R.category = 'nccl' THEN (SELECT SUM(TK.gpu) FROM TK "    \
	"WHERE TK.guid = R.guid AND TK.pid = R.pid AND TK.parent = R.eid) ELSE (SELECT "       \
	"TK.gpu FROM TK WHERE TK.guid = R.guid AND TK.pid = R.pid AND TK.eid = R.eid) END AS " \
	"gpu, bytes * (CASE WHEN kind IN ('AllGather', 'ReduceScatter') THEN "                 \
	"COALESCE(nranks, 1) ELSE 1 END) AS data FROM R, L WHERE R.category = L.level AND "    \
	"R.kind IS NOT NULL)"

#define NCCL_FACTOR                                                                             \
	"(CASE WHEN COALESCE(MAX(nranks), 1) < 1 THEN 1.0 WHEN kind = 'AllReduce' THEN 2.0 * "  \
	"(COALESCE(MAX(nranks), 1) - 1) / COALESCE(MAX(nranks), 1) WHEN kind IN ('AllGather', " \
	"'ReduceScatter', 'AlltoAll') THEN 1.0 * (COALESCE(MAX(nranks), 1) - 1) / "             \
	"COALESCE(MAX(nranks), 1) ELSE 1.0 END)"

#define NCCL_ALGBW "1.0 * SUM(CASE WHEN gpu IS NOT NULL THEN data END) / NULLIF(SUM(gpu), 0)"

#define NCCL_SECTION                                                                                         \
	{                                                                                                    \
		"nccl_collectives", "NCCL COLLECTIVES",                                                      \
			"WITH " NCCL_ARGS                                                                    \
			" SELECT kind, COUNT(*) AS calls, COUNT(DISTINCT guid || '/' || "                    \
			"pid) AS processes, MAX(nranks) AS ranks, COALESCE(SUM(bytes), 0) AS bytes, "        \
			"ROUND(SUM(duration) / 1e6, 3) AS host_ms, COUNT(gpu) AS gpu_timed, ROUND(SUM(gpu) " \
			"/ 1e6, 3) AS gpu_ms, ROUND(" NCCL_ALGBW                                             \
			", 3) AS algbw_gbps, ROUND(" NCCL_ALGBW " * " NCCL_FACTOR                            \
			", 3) AS busbw_gbps FROM C GROUP BY kind ORDER BY "                                  \
			"COALESCE(SUM(gpu), 0) DESC, SUM(bytes) DESC",                                       \
			R_REGIONS, NCCL_CATEGORIES                                                           \
	}

#endif /* SYSCOPE_CMD_SUMMARY_NCCL_H */
