"""The rocpd database: schema conventions rocpd tools rely on, and content through the views."""
import sqlite3

import harness
from harness import check, check_eq, fixture, syscope

import rawdump
import records
from rocpd_checks import check_conventions, rows


def open_db(r, pid=None):
    pid = pid or r.main_pid()
    db = sqlite3.connect(r.path(f"rocpd-{pid}.db"))
    db.row_factory = sqlite3.Row
    return db


def test_regions_marks_counters_and_samples():
    r = syscope("sample", "-f", "1000", "--output-format", "rocpd", "--", fixture("regions"))
    check_eq(r.rc, 0, r.describe())
    db = open_db(r)
    check_conventions(db)
    pid = r.main_pid()
    check_eq(rows(db, "SELECT pid, command FROM processes"), [(pid, fixture("regions"))],
             "process")
    check_eq(len(rows(db, "SELECT tid FROM threads")), 2, "threads")
    user = rows(db, "SELECT name, tid FROM regions WHERE category = 'USER_REGION' ORDER BY start")
    check_eq([n for n, _ in user], ["phase A", "inner", "inner", "inner"], "user regions")
    check(all(t == pid for _, t in user), "on the main thread")
    check_eq(rows(db, "SELECT name FROM regions WHERE category = 'USER_compute'"), [("worker",)],
             "worker region")
    args = rows(db, "SELECT A.type, A.name, A.value FROM region_args A JOIN regions R ON "
                    "R.id = A.id AND R.guid = A.guid WHERE R.name = 'phase A' ORDER BY A.name")
    check_eq(args, [("int64_t", "items", "42"), ("const char*", "label", "alpha")], "arguments")
    marks = rows(db, "SELECT name, json_extract(extdata, '$.message') FROM samples "
                     "WHERE category = 'USER_REGION'")
    check_eq(marks, [("USER_REGION", "checkpoint")], "the mark")
    values = rows(db, "SELECT V.value FROM rocpd_pmc_event V JOIN rocpd_info_pmc M ON "
                      "M.id = V.pmc_id JOIN rocpd_sample S ON S.event_id = V.event_id "
                      "WHERE M.name = 'queue depth' ORDER BY S.timestamp")
    check_eq([v for (v,) in values], [float(i) for i in range(1, 11)], "counter values")
    check_eq(rows(db, "SELECT units FROM rocpd_info_pmc WHERE name = 'queue depth'"),
             [("items",)], "counter unit")
    raw = sum(1 for path in r.raw_files()
              for _t, rtype, _f, _p in rawdump.records(open(path, "rb").read()) if rtype == records.SAMPLE)
    check_eq(rows(db, "SELECT COUNT(*) FROM samples WHERE category = 'timer_sampling'"),
             [(raw,)], "every sample")


def test_sampled_frames_as_regions():
    r = syscope("sample", "-f", "1000", "--output-format", "rocpd", "json", "--",
                fixture("hot"), "0.5")
    check_eq(r.rc, 0, r.describe())
    db = open_db(r)
    check_conventions(db)
    p = r.profile()
    hot = rows(db, "SELECT SUM(duration) FROM regions WHERE name = 'hot_loop' "
                   "AND category = 'timer_sampling'")[0][0]
    total = rows(db, "SELECT duration FROM regions WHERE name = 'samples [syscope]'")[0][0]
    check(hot > 0.8 * total, f"hot_loop covers {hot} of {total} ns")
    stack = rows(db, "SELECT call_stack, line_info FROM samples LIMIT 1")[0]
    check('"name":"main"' in stack[0] and '"file":' in stack[1], stack)
    check_eq(rows(db, "SELECT COUNT(*) FROM samples")[0][0], p.total, "samples")


def test_rocpd_per_process():
    r = syscope("sample", "-f", "500", "--output-format", "rocpd", "--", fixture("fork_exec"),
                fixture("exec_child"), "0.3")
    check_eq(r.rc, 0, r.describe())
    guids = set()
    for pid in r.pids():
        db = open_db(r, pid)
        check_conventions(db)
        guids.add(rows(db, "SELECT value FROM rocpd_metadata WHERE tag = 'guid'")[0][0])
        check_eq(rows(db, "SELECT pid FROM processes"), [(pid,)], "one process per file")
    check_eq(len(guids), 2, "a guid per file")


harness.main(globals())
