/* SPDX-License-Identifier: MIT */
/*
 * The rocpd schema, version 3 (docs/output-formats.md, rocpd): tables whose names carry
 * the file's `{{uuid}}` suffix, base views without it, data views and summary views, so
 * that plain `sqlite3` queries (`select * from regions`) and rocpd tools work on one file,
 * and tools that ATTACH many files find the base views. Written from the published column
 * lists; `{{uuid}}` and `{{guid}}` are replaced when the schema is created.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vec.h"
#include "rocpd.h"

#define ID "\"id\" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "
#define GUID "\"guid\" TEXT NOT NULL DEFAULT \"{{guid}}\", "
#define EXTDATA "\"extdata\" JSONB NOT NULL DEFAULT \"{}\""
#define FK(col, table) \
	", FOREIGN KEY (" col ") REFERENCES \"rocpd_" table "{{uuid}}\" (\"id\") ON UPDATE CASCADE"
#define NODE_PID "\"nid\" INTEGER NOT NULL, \"pid\" INTEGER NOT NULL, "
#define NODE_PID_FK FK("nid", "info_node") FK("pid", "info_process")

const char *const sc_rocpd_tables[] = {
	"CREATE TABLE \"rocpd_metadata{{uuid}}\" (" ID "\"tag\" TEXT NOT NULL, \"value\" TEXT NOT "
	"NULL)",
	"CREATE TABLE \"rocpd_string{{uuid}}\" (" ID GUID
	"\"string\" TEXT NOT NULL UNIQUE ON CONFLICT ABORT)",
	"CREATE TABLE \"rocpd_info_node{{uuid}}\" (" ID GUID
	"\"hash\" BIGINT NOT NULL UNIQUE, \"machine_id\" TEXT NOT NULL UNIQUE, \"system_name\" "
	"TEXT, \"hostname\" TEXT, \"release\" TEXT, \"version\" TEXT, \"hardware_name\" TEXT, "
	"\"domain_name\" TEXT)",
	"CREATE TABLE \"rocpd_info_process{{uuid}}\" (" ID GUID
	"\"nid\" INTEGER NOT NULL, \"ppid\" INTEGER, \"pid\" INTEGER NOT NULL, \"init\" BIGINT, "
	"\"fini\" BIGINT, \"start\" BIGINT, \"end\" BIGINT, \"command\" TEXT, \"environment\" JSONB "
	"NOT NULL DEFAULT \"{}\", " EXTDATA FK("nid", "info_node") ")",
	"CREATE TABLE \"rocpd_info_thread{{uuid}}\" (" ID GUID
	"\"nid\" INTEGER NOT NULL, \"ppid\" INTEGER, \"pid\" INTEGER NOT NULL, \"tid\" INTEGER NOT "
	"NULL, \"name\" TEXT, \"start\" BIGINT, \"end\" BIGINT, " EXTDATA NODE_PID_FK ")",
	"CREATE TABLE \"rocpd_info_agent{{uuid}}\" (" ID GUID NODE_PID
	"\"type\" TEXT CHECK (\"type\" IN ('CPU', 'GPU')), \"absolute_index\" INTEGER, "
	"\"logical_index\" INTEGER, \"type_index\" INTEGER, \"uuid\" INTEGER, \"name\" TEXT, "
	"\"model_name\" TEXT, \"vendor_name\" TEXT, \"product_name\" TEXT, \"user_name\" TEXT, " EXTDATA
		NODE_PID_FK ")",
	"CREATE TABLE \"rocpd_info_queue{{uuid}}\" (" ID GUID NODE_PID
	"\"name\" TEXT, " EXTDATA NODE_PID_FK ")",
	"CREATE TABLE \"rocpd_info_stream{{uuid}}\" (" ID GUID NODE_PID
	"\"name\" TEXT, " EXTDATA NODE_PID_FK ")",
	"CREATE TABLE \"rocpd_info_pmc{{uuid}}\" (" ID GUID NODE_PID
	"\"agent_id\" INTEGER, \"target_arch\" TEXT CHECK (\"target_arch\" IN ('CPU', 'GPU')), "
	"\"event_code\" INT, \"instance_id\" INTEGER, \"name\" TEXT NOT NULL, \"symbol\" TEXT NOT "
	"NULL, \"description\" TEXT, \"long_description\" TEXT DEFAULT \"\", \"component\" TEXT, "
	"\"units\" TEXT DEFAULT \"\", \"value_type\" TEXT CHECK (\"value_type\" IN ('ABS', 'ACCUM', "
	"'RELATIVE')), \"block\" TEXT, \"expression\" TEXT, \"is_constant\" INTEGER, \"is_derived\" "
	"INTEGER, " EXTDATA NODE_PID_FK FK("agent_id", "info_agent") ")",
	"CREATE TABLE \"rocpd_info_code_object{{uuid}}\" (" ID GUID NODE_PID
	"\"agent_id\" INTEGER, \"uri\" TEXT, \"load_base\" BIGINT, \"load_size\" BIGINT, "
	"\"load_delta\" BIGINT, \"storage_type\" TEXT CHECK (\"storage_type\" IN ('FILE', "
	"'MEMORY')), " EXTDATA NODE_PID_FK FK("agent_id", "info_agent") ")",
	"CREATE TABLE \"rocpd_info_kernel_symbol{{uuid}}\" (" ID GUID NODE_PID
	"\"code_object_id\" INTEGER NOT NULL, \"kernel_name\" TEXT, \"display_name\" TEXT, "
	"\"kernel_object\" INTEGER, \"kernarg_segment_size\" INTEGER, "
	"\"kernarg_segment_alignment\" INTEGER, \"group_segment_size\" INTEGER, "
	"\"private_segment_size\" INTEGER, \"sgpr_count\" INTEGER, \"arch_vgpr_count\" INTEGER, "
	"\"accum_vgpr_count\" INTEGER, " EXTDATA NODE_PID_FK FK("code_object_id",
								"info_code_object") ")",
	"CREATE TABLE \"rocpd_track{{uuid}}\" (" ID GUID
	"\"nid\" INTEGER NOT NULL, \"pid\" INTEGER, \"tid\" INTEGER, \"name_id\" INTEGER, " EXTDATA
		NODE_PID_FK FK("tid", "info_thread") FK("name_id", "string") ")",
	"CREATE TABLE \"rocpd_event{{uuid}}\" (" ID GUID
	"\"category_id\" INTEGER, \"stack_id\" INTEGER, \"parent_stack_id\" INTEGER, "
	"\"correlation_id\" INTEGER, \"call_stack\" JSONB NOT NULL DEFAULT \"{}\", \"line_info\" "
	"JSONB NOT NULL DEFAULT \"{}\", " EXTDATA FK("category_id", "string") ")",
	"CREATE TABLE \"rocpd_arg{{uuid}}\" (" ID GUID
	"\"event_id\" INTEGER NOT NULL, \"position\" INTEGER NOT NULL, \"type\" TEXT NOT NULL, "
	"\"name\" TEXT NOT NULL, \"value\" TEXT, " EXTDATA FK("event_id", "event") ")",
	"CREATE TABLE \"rocpd_pmc_event{{uuid}}\" (" ID GUID
	"\"event_id\" INTEGER, \"pmc_id\" INTEGER NOT NULL, \"value\" REAL DEFAULT 0.0, \"extdata\" "
	"JSONB DEFAULT \"{}\"" FK("event_id", "event") FK("pmc_id", "info_pmc") ")",
	"CREATE TABLE \"rocpd_region{{uuid}}\" (" ID GUID
	"\"nid\" INTEGER NOT NULL, \"pid\" INTEGER NOT NULL, \"tid\" INTEGER NOT NULL, \"start\" "
	"BIGINT NOT NULL, \"end\" BIGINT NOT NULL, \"name_id\" INTEGER NOT NULL, \"event_id\" "
	"INTEGER, " EXTDATA NODE_PID_FK FK("tid", "info_thread") FK("name_id", "string")
		FK("event_id", "event") ")",
	"CREATE TABLE \"rocpd_sample{{uuid}}\" (" ID GUID
	"\"track_id\" INTEGER NOT NULL, \"timestamp\" BIGINT NOT NULL, \"event_id\" INTEGER, " EXTDATA
		FK("track_id", "track") FK("event_id", "event") ")",
	"CREATE TABLE \"rocpd_kernel_dispatch{{uuid}}\" (" ID GUID NODE_PID
	"\"tid\" INTEGER, \"agent_id\" INTEGER NOT NULL, \"kernel_id\" INTEGER NOT NULL, "
	"\"dispatch_id\" INTEGER NOT NULL, \"queue_id\" INTEGER NOT NULL, \"stream_id\" INTEGER "
	"NOT NULL, \"start\" BIGINT NOT NULL, \"end\" BIGINT NOT NULL, \"private_segment_size\" "
	"INTEGER, \"group_segment_size\" INTEGER, \"workgroup_size_x\" INTEGER NOT NULL, "
	"\"workgroup_size_y\" INTEGER NOT NULL, \"workgroup_size_z\" INTEGER NOT NULL, "
	"\"grid_size_x\" INTEGER NOT NULL, \"grid_size_y\" INTEGER NOT NULL, \"grid_size_z\" "
	"INTEGER NOT NULL, \"region_name_id\" INTEGER, \"event_id\" INTEGER, " EXTDATA NODE_PID_FK
		FK("tid", "info_thread") FK("agent_id", "info_agent")
			FK("kernel_id", "info_kernel_symbol") FK("queue_id", "info_queue")
				FK("stream_id", "info_stream") FK("region_name_id", "string")
					FK("event_id", "event") ")",
	"CREATE TABLE \"rocpd_memory_copy{{uuid}}\" (" ID GUID NODE_PID
	"\"tid\" INTEGER, \"start\" BIGINT NOT NULL, \"end\" BIGINT NOT NULL, \"name_id\" INTEGER "
	"NOT NULL, \"dst_agent_id\" INTEGER, \"dst_address\" INTEGER, \"src_agent_id\" INTEGER, "
	"\"src_address\" INTEGER, \"size\" INTEGER NOT NULL, \"queue_id\" INTEGER, \"stream_id\" "
	"INTEGER, \"region_name_id\" INTEGER, \"event_id\" INTEGER, " EXTDATA NODE_PID_FK FK(
		"tid", "info_thread") FK("name_id", "string") FK("dst_agent_id", "info_agent")
		FK("src_agent_id", "info_agent") FK("queue_id", "info_queue")
			FK("stream_id", "info_stream") FK("region_name_id", "string")
				FK("event_id", "event") ")",
	"CREATE TABLE \"rocpd_memory_allocate{{uuid}}\" (" ID GUID NODE_PID
	"\"tid\" INTEGER, \"agent_id\" INTEGER, \"type\" TEXT CHECK (\"type\" IN ('ALLOC', 'FREE', "
	"'REALLOC', 'RECLAIM')), \"level\" TEXT CHECK (\"level\" IN ('REAL', 'VIRTUAL', "
	"'SCRATCH')), \"start\" BIGINT NOT NULL, \"end\" BIGINT NOT NULL, \"address\" INTEGER, "
	"\"size\" INTEGER NOT NULL, \"queue_id\" INTEGER, \"stream_id\" INTEGER, \"event_id\" "
	"INTEGER, " EXTDATA NODE_PID_FK FK("tid", "info_thread") FK("agent_id", "info_agent")
		FK("queue_id", "info_queue") FK("stream_id", "info_stream")
			FK("event_id", "event") ")",
	NULL,
};

/* One base view per table, named without the suffix. */
const char *const sc_rocpd_base_names[] = {
	"metadata",
	"string",
	"info_node",
	"info_process",
	"info_thread",
	"info_agent",
	"info_queue",
	"info_stream",
	"info_pmc",
	"info_code_object",
	"info_kernel_symbol",
	"track",
	"event",
	"arg",
	"pmc_event",
	"region",
	"sample",
	"kernel_dispatch",
	"memory_copy",
	"memory_allocate",
	NULL,
};

#define SAMPLING_CATEGORIES "('timer_sampling', 'wall_clock_sampling', 'overflow_sampling')"
#define JOIN(alias, table, on) " INNER JOIN rocpd_" table " " alias " ON " on
#define SAME(a, b, col) a ".id = " b "." col " AND " a ".guid = " b ".guid"
#define STRING_OF(col, of) "(SELECT S_.string FROM rocpd_string S_ WHERE " SAME("S_", of, col) ")"

const char *const sc_rocpd_views[] = {
	"CREATE VIEW processes AS SELECT N.id AS nid, N.machine_id, N.system_name, N.hostname, "
	"N.release AS system_release, N.version AS system_version, P.guid, P.ppid, P.pid, P.init, "
	"P.start, P.end, P.fini, P.command FROM rocpd_info_process P" JOIN("N", "info_node",
									   SAME("N", "P", "nid")),
	"CREATE VIEW threads AS SELECT N.id AS nid, N.machine_id, N.system_name, N.hostname, "
	"N.release AS system_release, N.version AS system_version, T.guid, T.ppid, P.pid, T.tid, "
	"T.start, T.end, T.name FROM rocpd_info_thread T" JOIN("P", "info_process",
							       SAME("P", "T", "pid"))
		JOIN("N", "info_node", SAME("N", "T", "nid")),
	"CREATE VIEW regions AS SELECT R.id, R.guid, " STRING_OF(
		"category_id", "E") " AS category, S.string AS name, R.nid, P.pid, T.tid, R.start, "
				    "R.end, (R.end - R.start) AS duration, R.event_id, E.stack_id, "
				    "E.parent_stack_id, E.correlation_id AS corr_id, E.extdata, "
				    "E.call_stack, E.line_info FROM rocpd_region R" JOIN(
					    "E", "event", SAME("E", "R", "event_id"))
					    JOIN("S", "string", SAME("S", "R", "name_id")) JOIN(
						    "P", "info_process", SAME("P", "R", "pid"))
						    JOIN("T", "info_thread", SAME("T", "R", "tid")),
	"CREATE VIEW region_args AS SELECT R.id, R.guid, R.nid, P.pid, A.type, A.name, A.value "
	"FROM rocpd_region R" JOIN("E", "event", SAME("E", "R", "event_id"))
		JOIN("A", "arg", "A.event_id = E.id AND A.guid = E.guid")
			JOIN("P", "info_process", SAME("P", "R", "pid")),
	"CREATE VIEW samples AS SELECT K.id, K.guid, " STRING_OF(
		"category_id",
		"E") " AS category, S.string AS name, TR.nid, P.pid, T.tid, "
		     "K.timestamp, K.event_id, E.stack_id, E.parent_stack_id, "
		     "E.correlation_id AS corr_id, E.extdata, E.call_stack, E.line_info "
		     "FROM rocpd_sample K" JOIN("TR", "track", SAME("TR", "K", "track_id"))
			     JOIN("E", "event", SAME("E", "K", "event_id"))
				     JOIN("S", "string", SAME("S", "TR", "name_id"))
					     JOIN("P", "info_process", SAME("P", "TR", "pid")) JOIN(
						     "T", "info_thread", SAME("T", "TR", "tid")),
	"CREATE VIEW sample_regions AS SELECT id, guid, category, name, nid, pid, tid, timestamp AS "
	"start, timestamp AS end, 0 AS duration, event_id, stack_id, parent_stack_id, corr_id, "
	"extdata, call_stack, line_info FROM samples",
	"CREATE VIEW regions_and_samples AS SELECT * FROM regions UNION ALL SELECT * FROM "
	"sample_regions",
	"CREATE VIEW code_objects AS SELECT C.id, C.guid, C.nid, P.pid, A.absolute_index AS "
	"agent_abs_index, C.uri, C.load_base, C.load_size, C.load_delta, C.storage_type AS "
	"storage_type_str, JSON_EXTRACT(C.extdata, '$.size') AS code_object_size, "
	"JSON_EXTRACT(C.extdata, '$.storage_type') AS storage_type, JSON_EXTRACT(C.extdata, "
	"'$.memory_base') AS memory_base, JSON_EXTRACT(C.extdata, '$.memory_size') AS memory_size "
	"FROM rocpd_info_code_object C" JOIN("A", "info_agent", SAME("A", "C", "agent_id"))
		JOIN("P", "info_process", SAME("P", "C", "pid")),
	"CREATE VIEW kernel_symbols AS SELECT K.id, K.guid, K.nid, P.pid, K.code_object_id, "
	"K.kernel_name, K.display_name, K.kernel_object, K.kernarg_segment_size, "
	"K.kernarg_segment_alignment, K.group_segment_size, K.private_segment_size, K.sgpr_count, "
	"K.arch_vgpr_count, K.accum_vgpr_count, JSON_EXTRACT(K.extdata, '$.size') AS "
	"kernel_symbol_size, JSON_EXTRACT(K.extdata, '$.kernel_id') AS kernel_id, "
	"JSON_EXTRACT(K.extdata, '$.kernel_code_entry_byte_offset') AS "
	"kernel_code_entry_byte_offset, JSON_EXTRACT(K.extdata, '$.formatted_kernel_name') AS "
	"formatted_kernel_name, JSON_EXTRACT(K.extdata, '$.demangled_kernel_name') AS "
	"demangled_kernel_name, JSON_EXTRACT(K.extdata, '$.truncated_kernel_name') AS "
	"truncated_kernel_name, JSON_EXTRACT(K.extdata, '$.kernel_address.handle') AS "
	"kernel_address FROM rocpd_info_kernel_symbol K" JOIN("P", "info_process",
							      SAME("P", "K", "pid")),
	"CREATE VIEW kernels AS SELECT K.id, K.guid, T.tid, " STRING_OF(
		"category_id",
		"E") " AS category, R.string AS region, S.display_name AS name, K.nid, "
		     "P.pid, A.absolute_index AS agent_abs_index, A.logical_index AS "
		     "agent_log_index, A.type_index AS agent_type_index, A.type AS "
		     "agent_type, S.code_object_id, K.kernel_id, K.dispatch_id, "
		     "K.stream_id, K.queue_id, Q.name AS queue, ST.name AS stream, "
		     "K.start, K.end, (K.end - K.start) AS duration, K.grid_size_x AS "
		     "grid_x, K.grid_size_y AS grid_y, K.grid_size_z AS grid_z, "
		     "K.workgroup_size_x AS workgroup_x, K.workgroup_size_y AS "
		     "workgroup_y, K.workgroup_size_z AS workgroup_z, "
		     "K.group_segment_size AS lds_size, K.private_segment_size AS "
		     "scratch_size, S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count, "
		     "S.sgpr_count, S.group_segment_size AS static_lds_size, "
		     "S.private_segment_size AS static_scratch_size, E.stack_id, "
		     "E.parent_stack_id, E.correlation_id AS corr_id FROM "
		     "rocpd_kernel_dispatch K" JOIN(
			     "A", "info_agent",
			     SAME("A", "K",
				  "agent_id")) JOIN("E", "event",
						    SAME("E", "K",
							 "event_id")) JOIN("R", "string",
									   SAME("R", "K",
										"region_name_id"))
			     JOIN("S", "info_kernel_symbol", SAME("S", "K", "kernel_id")) " LEFT JOIN rocpd_info_stream ST ON " SAME(
				     "ST", "K",
				     "stream_id") " LEFT JOIN rocpd_info_queue Q ON " SAME("Q", "K",
											   "queue_id")
				     JOIN("P", "info_process", SAME("P", "Q", "pid"))
					     JOIN("T", "info_thread", SAME("T", "K", "tid")),
	"CREATE VIEW pmc_info AS SELECT M.id, M.guid, M.nid, P.pid, A.absolute_index AS "
	"agent_abs_index, M.is_constant, M.is_derived, M.name, M.description, M.block, "
	"M.expression FROM rocpd_info_pmc M" JOIN("A", "info_agent", SAME("A", "M", "agent_id"))
		JOIN("P", "info_process", SAME("P", "M", "pid")),
	"CREATE VIEW pmc_events AS SELECT V.id, V.guid, V.pmc_id, E.id AS event_id, " STRING_OF(
		"category_id",
		"E") " AS category, (SELECT KS.display_name FROM "
		     "rocpd_info_kernel_symbol KS WHERE " SAME(
			     "KS", "K",
			     "kernel_id") ") AS name, K.nid, P.pid, K.dispatch_id, K.start, K.end, (K.end - "
					  "K.start) AS duration, M.name AS counter_name, V.value AS "
					  "counter_value FROM rocpd_pmc_event V" JOIN(
						  "M", "info_pmc",
						  SAME("M", "V", "pmc_id")) JOIN("E", "event",
										 SAME("E", "V",
										      "event_id"))
						  JOIN("K", "kernel_dispatch",
						       "K.event_id = V.event_id AND K.guid = V.guid")
							  JOIN("P", "info_process",
							       SAME("P", "K", "pid")),
	"CREATE VIEW events_args AS SELECT E.id AS event_id, " STRING_OF(
		"category_id",
		"E") " AS category, E.stack_id, E.parent_stack_id, "
		     "E.correlation_id, A.position AS arg_position, A.type AS "
		     "arg_type, A.name AS arg_name, A.value AS arg_value, E.call_stack, "
		     "E.line_info, A.extdata FROM rocpd_event E" JOIN(
			     "A", "arg", "A.event_id = E.id AND A.guid = E.guid"),
	"CREATE VIEW stream_args AS SELECT A.id AS argument_id, A.event_id, A.position AS "
	"arg_position, A.type AS arg_type, A.value AS arg_value, JSON_EXTRACT(A.extdata, "
	"'$.stream_id') AS stream_id, ST.nid, P.pid, ST.name AS stream_name, ST.extdata AS extdata "
	"FROM rocpd_arg A" JOIN(
		"ST", "info_stream",
		"ST.id = JSON_EXTRACT(A.extdata, '$.stream_id') AND ST.guid = A.guid")
		JOIN("P", "info_process", SAME("P", "ST", "pid")) " WHERE A.name = 'stream'",
	"CREATE VIEW memory_copies AS SELECT M.id, M.guid, " STRING_OF(
		"category_id",
		"E") " AS category, M.nid, P.pid, T.tid, M.start, M.end, (M.end - "
		     "M.start) AS duration, S.string AS name, R.string AS region_name, "
		     "M.stream_id, M.queue_id, ST.name AS stream_name, Q.name AS "
		     "queue_name, M.size, DA.name AS dst_device, DA.absolute_index AS "
		     "dst_agent_abs_index, DA.logical_index AS dst_agent_log_index, "
		     "DA.type_index AS dst_agent_type_index, DA.type AS dst_agent_type, "
		     "M.dst_address, SA.name AS src_device, SA.absolute_index AS "
		     "src_agent_abs_index, SA.logical_index AS src_agent_log_index, "
		     "SA.type_index AS src_agent_type_index, SA.type AS src_agent_type, "
		     "M.src_address, E.stack_id, E.parent_stack_id, E.correlation_id AS "
		     "corr_id FROM rocpd_memory_copy M" JOIN("S", "string", SAME("S", "M", "name_id")) " LEFT JOIN rocpd_string R ON " SAME(
			     "R", "M",
			     "region_name_id") " LEFT JOIN rocpd_info_stream ST ON " SAME("ST", "M",
											  "stream_id") " LEFT JOIN rocpd_info_queue Q ON " SAME("Q",
																		"M",
																		"queue_id")
			     JOIN("DA", "info_agent", SAME("DA", "M", "dst_agent_id"))
				     JOIN("SA", "info_agent", SAME("SA", "M", "src_agent_id")) JOIN(
					     "E", "event", SAME("E", "M", "event_id"))
					     JOIN("P", "info_process", SAME("P", "M", "pid")) JOIN(
						     "T", "info_thread", SAME("T", "M", "tid")),
	"CREATE VIEW memory_allocations AS SELECT M.id, M.guid, " STRING_OF(
		"category_id",
		"E") " AS category, M.nid, P.pid, T.tid, M.start, M.end, (M.end - "
		     "M.start) AS duration, M.type, M.level, A.name AS agent_name, "
		     "A.absolute_index AS agent_abs_index, A.logical_index AS "
		     "agent_log_index, A.type_index AS agent_type_index, A.type AS "
		     "agent_type, M.address, M.size, M.queue_id, Q.name AS queue_name, "
		     "M.stream_id, ST.name AS stream_name, E.stack_id, "
		     "E.parent_stack_id, E.correlation_id AS corr_id FROM "
		     "rocpd_memory_allocate M"
		     " LEFT JOIN rocpd_info_agent A ON " SAME("A", "M", "agent_id") " LEFT JOIN rocpd_info_queue Q ON " SAME(
			     "Q", "M",
			     "queue_id") " LEFT JOIN rocpd_info_stream ST ON " SAME("ST", "M",
										    "stream_id")
			     JOIN("E", "event", SAME("E", "M", "event_id"))
				     JOIN("P", "info_process", SAME("P", "M", "pid"))
					     JOIN("T", "info_thread", SAME("T", "M", "tid")),
	"CREATE VIEW scratch_memory AS SELECT M.id, M.guid, M.nid, P.pid, M.type AS operation, "
	"A.name AS agent_name, A.absolute_index AS agent_abs_index, A.logical_index AS "
	"agent_log_index, A.type_index AS agent_type_index, A.type AS agent_type, M.queue_id, "
	"T.tid, JSON_EXTRACT(M.extdata, '$.flags') AS alloc_flags, M.start, M.end, (M.end - "
	"M.start) AS duration, M.size, M.address, E.correlation_id, E.stack_id, "
	"E.parent_stack_id, E.correlation_id AS corr_id, " STRING_OF(
		"category_id",
		"E") " AS category, E.extdata AS event_extdata FROM rocpd_memory_allocate M "
		     "LEFT JOIN rocpd_info_agent A ON " SAME(
			     "A", "M",
			     "agent_id") " LEFT JOIN "
					 "rocpd_info_queue Q ON " SAME("Q", "M", "queue_id") JOIN(
						 "E", "event", SAME("E", "M", "event_id"))
						 JOIN("P", "info_process", SAME("P", "M", "pid"))
							 JOIN("T", "info_thread",
							      SAME("T", "M", "tid")) " WHERE "
										     "M.level = "
										     "'SCRATCH' "
										     "ORDER BY "
										     "M.start",
	"CREATE VIEW counters_collection AS SELECT MIN(V.id) AS id, V.guid, K.dispatch_id, "
	"K.kernel_id, E.id AS event_id, E.correlation_id, E.stack_id, E.parent_stack_id, P.pid, "
	"T.tid, K.agent_id, A.absolute_index AS agent_abs_index, A.logical_index AS "
	"agent_log_index, A.type_index AS agent_type_index, A.type AS agent_type, K.queue_id, "
	"K.grid_size_x, K.grid_size_y, K.grid_size_z, (K.grid_size_x * K.grid_size_y * "
	"K.grid_size_z) AS grid_size, S.display_name AS kernel_name, " STRING_OF(
		"region_name_id",
		"K") " AS kernel_region, K.workgroup_size_x, K.workgroup_size_y, "
		     "K.workgroup_size_z, (K.workgroup_size_x * K.workgroup_size_y * "
		     "K.workgroup_size_z) AS workgroup_size, K.group_segment_size AS "
		     "lds_block_size, K.private_segment_size AS scratch_size, "
		     "S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count, S.sgpr_count, "
		     "M.name AS counter_name, M.symbol AS counter_symbol, M.component, "
		     "M.description, M.block, M.expression, M.value_type, M.id AS "
		     "counter_id, SUM(V.value) AS value, K.start, K.end, M.is_constant, "
		     "M.is_derived, (K.end - K.start) AS duration, " STRING_OF(
			     "category_id",
			     "E") " AS category, K.nid, E.extdata, S.code_object_id FROM "
				  "rocpd_pmc_event V" JOIN("M", "info_pmc",
							   SAME("M", "V", "pmc_id"))
					  JOIN("E", "event", SAME("E", "V", "event_id")) JOIN(
						  "K", "kernel_dispatch",
						  "K.event_id = V.event_id AND K.guid = V.guid")
						  JOIN("A", "info_agent",
						       SAME("A", "K",
							    "agent_id")) JOIN("S",
									      "info_kernel_symbol",
									      SAME("S", "K",
										   "kernel_id"))
							  JOIN("P", "info_process",
							       SAME("P", "K", "pid"))
								  JOIN("T", "info_thread",
								       SAME("T", "K",
									    "tid")) " GROUP BY "
										    "V.guid, "
										    "K.dispatch_id, "
										    "M.name, "
										    "K.agent_id",
	/* Summaries. */
	"CREATE VIEW top_kernels AS SELECT name, COUNT(*) AS total_calls, SUM(duration) / "
	"1000.0 AS total_duration, AVG(duration) / 1000.0 AS average, SUM(duration) * 100.0 / "
	"(SELECT SUM(duration) FROM kernels) AS percentage FROM kernels GROUP BY name ORDER BY "
	"total_duration DESC",
	/* busy: GPU time of kernels and copies per agent (a copy's destination) over the span
	 * of all of them, as upstream's summary view computes it. */
	"CREATE VIEW busy AS SELECT B.agent_id, AG.type, GpuTime, WallTime, GpuTime * 1.0 / "
	"WallTime AS Busy FROM (SELECT agent_id, guid, SUM(end - start) AS GpuTime FROM (SELECT "
	"agent_id, guid, end, start FROM rocpd_kernel_dispatch UNION ALL SELECT dst_agent_id AS "
	"agent_id, guid, end, start FROM rocpd_memory_copy) GROUP BY agent_id, guid) B INNER JOIN "
	"(SELECT MAX(end) - MIN(start) AS WallTime FROM (SELECT end, start FROM "
	"rocpd_kernel_dispatch UNION ALL SELECT end, start FROM rocpd_memory_copy)) W ON 1 = 1 "
	"INNER JOIN rocpd_info_agent AG ON AG.id = B.agent_id AND AG.guid = B.guid",
	/* top: as upstream's (kernels, copies and regions by name), except that sampled
	 * call stacks count as their innermost function, weighted by the sample's CPU time,
	 * instead of as regions for every frame (which ranked main and _start first). */
	"CREATE VIEW top AS WITH operations AS (SELECT S.display_name AS name, "
	"(K.end - K.start) AS duration FROM rocpd_kernel_dispatch K "
	"JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid "
	"UNION ALL SELECT N.string AS name, (M.end - M.start) AS duration "
	"FROM rocpd_memory_copy M JOIN rocpd_string N ON N.id = M.name_id AND N.guid = M.guid "
	"UNION ALL SELECT N.string AS name, (R.end - R.start) AS duration FROM rocpd_region R "
	"JOIN rocpd_string N ON N.id = R.name_id AND N.guid = R.guid "
	"LEFT JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid "
	"LEFT JOIN rocpd_string C ON C.id = E.category_id AND C.guid = E.guid "
	"WHERE COALESCE(C.string, '') NOT IN " SAMPLING_CATEGORIES " "
	/* a sample's weight: the thread's CPU time since its previous sample (since the
	 * thread began, for its first) */
	"UNION ALL SELECT json_extract(E.call_stack, '$[#-1].name') AS name, "
	"COALESCE(json_extract(K.extdata, '$.cpu_ns') - LAG(json_extract(K.extdata, "
	"'$.cpu_ns')) OVER (PARTITION BY K.guid, K.track_id ORDER BY K.timestamp, K.id), "
	"json_extract(K.extdata, '$.cpu_ns') - json_extract(T.extdata, '$.begin_cpu_ns'), 0) "
	"AS duration FROM rocpd_sample K "
	"JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid "
	"JOIN rocpd_string C ON C.id = E.category_id AND C.guid = E.guid "
	"JOIN rocpd_track TR ON TR.id = K.track_id AND TR.guid = K.guid "
	"LEFT JOIN rocpd_info_thread T ON T.id = TR.tid AND T.guid = TR.guid "
	"WHERE C.string = 'timer_sampling' AND json_valid(E.call_stack) AND "
	"json_array_length(E.call_stack) > 0 AND json_valid(K.extdata)) "
	"SELECT name, COUNT(*) AS total_calls, SUM(duration) / 1000.0 AS total_duration, "
	"(SUM(duration) / COUNT(*)) / 1000.0 AS average, SUM(duration) * 100.0 / (SELECT "
	"SUM(duration) FROM operations) AS percentage FROM operations GROUP BY name "
	"ORDER BY total_duration DESC",
	NULL,
};

void sc_rocpd_make_guid(uint64_t realtime_ns, uint64_t h, char *guid, size_t n)
{
	uint64_t ms = realtime_ns / 1000000;

	snprintf(guid, n, "%08llx-%04llx-7%03llx-%04llx-%012llx", (unsigned long long)(ms >> 16),
		 (unsigned long long)(ms & 0xffff), (unsigned long long)(h >> 52),
		 (unsigned long long)(0x8000 | ((h >> 36) & 0x3fff)),
		 (unsigned long long)(h & 0xffffffffffffull));
}

void sc_rocpd_uuid(const char *guid, char *uuid, size_t n)
{
	snprintf(uuid, n, "_%s", guid);
	for (char *c = uuid; *c; c++)
		if (*c == '-')
			*c = '_';
}

char *sc_rocpd_substitute(const char *tmpl, const char *uuid, const char *guid)
{
	VEC(char) out = { 0 };

	for (const char *p = tmpl; *p;) {
		const char *val = NULL;

		if (!strncmp(p, "{{uuid}}", 8))
			val = uuid;
		else if (!strncmp(p, "{{guid}}", 8))
			val = guid;
		if (val) {
			for (; *val; val++)
				*VEC_PUSH(&out) = *val;
			p += 8;
		} else {
			*VEC_PUSH(&out) = *p++;
		}
	}
	*VEC_PUSH(&out) = '\0';
	return out.v;
}

static int exec_sql(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	snprintf(err, errlen, "%s (in: %.120s)", msg ? msg : "?", sql);
	sqlite3_free(msg);
	return -1;
}

static int exec_template(sqlite3 *db, const char *tmpl, const char *uuid, const char *guid,
			 char *err, size_t errlen)
{
	char *sql = sc_rocpd_substitute(tmpl, uuid, guid);
	int rc = exec_sql(db, sql, err, errlen);

	free(sql);
	return rc;
}

int sc_rocpd_create(sqlite3 *db, const char *guid, char *err, size_t errlen)
{
	char uuid[64], *sql;
	int rc = 0;

	sc_rocpd_uuid(guid, uuid, sizeof(uuid));
	for (size_t i = 0; !rc && sc_rocpd_tables[i]; i++)
		rc = exec_template(db, sc_rocpd_tables[i], uuid, guid, err, errlen);
	if (rc)
		return rc;
	sql = sqlite3_mprintf("INSERT INTO \"rocpd_metadata%s\" (tag, value) VALUES "
			      "('schema_version', %Q), ('uuid', %Q), ('guid', %Q)",
			      uuid, SC_ROCPD_SCHEMA_VERSION, uuid, guid);
	rc = exec_sql(db, sql, err, errlen);
	sqlite3_free(sql);
	for (size_t i = 0; !rc && sc_rocpd_base_names[i]; i++) {
		sql = sqlite3_mprintf("CREATE VIEW \"rocpd_%s\" AS SELECT * FROM \"rocpd_%s%s\"",
				      sc_rocpd_base_names[i], sc_rocpd_base_names[i], uuid);
		rc = exec_sql(db, sql, err, errlen);
		sqlite3_free(sql);
	}
	for (size_t i = 0; !rc && sc_rocpd_views[i]; i++)
		rc = exec_template(db, sc_rocpd_views[i], uuid, guid, err, errlen);
	return rc;
}
