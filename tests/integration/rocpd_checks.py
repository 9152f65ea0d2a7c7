"""Checks of the rocpd conventions that rocpd tools rely on (docs/output-formats.md, rocpd),
shared by the tests that write databases."""
from harness import check, check_eq

VIEWS = ["processes", "threads", "regions", "region_args", "samples", "sample_regions",
         "regions_and_samples", "code_objects", "kernel_symbols", "kernels", "pmc_info",
         "pmc_events", "events_args", "stream_args", "memory_copies", "memory_allocations",
         "scratch_memory", "counters_collection", "top_kernels", "busy", "top"]
BASE = ["metadata", "string", "info_node", "info_process", "info_thread", "info_agent",
        "info_queue", "info_stream", "info_pmc", "info_code_object", "info_kernel_symbol",
        "track", "event", "arg", "pmc_event", "region", "sample", "kernel_dispatch",
        "memory_copy", "memory_allocate"]


def rows(db, sql, *args):
    return [tuple(row) for row in db.execute(sql, args)]


def check_conventions(db):
    meta = dict(rows(db, "SELECT tag, value FROM rocpd_metadata"))
    check_eq(meta.get("schema_version"), "3", "schema version")
    uuid, guid = meta["uuid"], meta["guid"]
    check_eq(uuid, "_" + guid.replace("-", "_"), "uuid is the guid as a suffix")
    tables = [t for (t,) in rows(db, "SELECT name FROM sqlite_master WHERE type = 'table' "
                                     "AND name LIKE 'rocpd_%'")]
    check_eq(sorted(tables), sorted(f"rocpd_{b}{uuid}" for b in BASE), "tables")
    for t in tables:
        if t.startswith("rocpd_metadata"):
            continue
        guids = rows(db, f'SELECT DISTINCT guid FROM "{t}"')
        check(guids in ([], [(guid,)]), f"{t}: guid {guids}")
    for v in VIEWS + ["rocpd_" + b for b in BASE]:
        db.execute(f"SELECT * FROM {v} LIMIT 1").fetchall()  # every view compiles and runs
    check_eq(rows(db, "PRAGMA foreign_key_check"), [], "foreign keys")
    check_eq(rows(db, "SELECT COUNT(*) FROM rocpd_region")[0][0],
             rows(db, "SELECT COUNT(*) FROM regions")[0][0], "every region in the view")
    check_eq(rows(db, "SELECT COUNT(*) FROM rocpd_sample")[0][0],
             rows(db, "SELECT COUNT(*) FROM samples")[0][0], "every sample in the view")
    for table, view in (("kernel_dispatch", "kernels"), ("memory_copy", "memory_copies"),
                        ("memory_allocate", "memory_allocations")):
        check_eq(rows(db, f"SELECT COUNT(*) FROM rocpd_{table}")[0][0],
                 rows(db, f"SELECT COUNT(*) FROM {view}")[0][0], f"every row of {table} in {view}")
    check_eq(rows(db, "SELECT COUNT(*) FROM regions WHERE end < start"), [(0,)], "start <= end")
