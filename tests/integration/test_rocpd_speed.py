"""The rocpd writer of big sessions (issue 20, goal 3): SQLite on a thread of its own
(--convert-threads) writes the database the writer alone writes, byte for byte and row for
row; region ids are the 1, 2, ... of the order written; a big process's database gets the
bulk settings; an interrupted threaded conversion leaves no temporary; bad values are
refused with the range."""
import os
import signal
import sqlite3
import subprocess
import tempfile
import time

import harness
from harness import check, check_eq, gen_session, syscope

THREADS, REGIONS, SAMPLES, COUNTERS, MARKS = 3, 20000, 300, 50, 40
KERNELS, COPIES, ALLOCS = 30, 7, 5


def workdir():
    d = tempfile.mkdtemp(prefix="syscope-rocpd-speed-")
    harness._workdirs.append(d)
    return d


def convert(session, out, threads):
    os.makedirs(out)
    r = syscope("convert", "--no-summary", "-f", "rocpd", "--convert-threads", threads,
                "-o", out, session)
    check_eq(r.rc, 0, r.describe())
    dbs = [n for n in os.listdir(out) if n.endswith(".db")]
    check_eq(len(dbs), 1, f"one database in {out}: {dbs}")
    return os.path.join(out, dbs[0])


def tables(db):
    with sqlite3.connect(db) as c:
        return [n for (n,) in c.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_%' "
            "ORDER BY name")]


def rows(db, table):
    with sqlite3.connect(db) as c:
        return c.execute(f'SELECT * FROM "{table}" ORDER BY rowid').fetchall()


def scalar(db, sql):
    with sqlite3.connect(db) as c:
        return c.execute(sql).fetchone()[0]


_session = None


def big_session():
    """Every kind of row (regions with arguments, samples, counters, marks, kernels, copies,
    allocations) and more than 100 000 of them in one process; made once."""
    global _session
    if not _session:
        _session = gen_session("--pid", 7301, "--threads", THREADS, "--regions", REGIONS,
                               "--samples", SAMPLES, "--counters", COUNTERS, "--marks", MARKS,
                               "--kernels", KERNELS, "--copies", COPIES, "--allocs", ALLOCS,
                               workdir=workdir())
    return _session


def test_threaded_database_is_the_serial_one():
    s = big_session()
    d = workdir()
    serial = convert(s, os.path.join(d, "serial"), 1)
    threaded = convert(s, os.path.join(d, "threaded"), 4)
    names = tables(serial)
    check_eq(names, tables(threaded), "the same tables")
    for t in names:
        a, b = rows(serial, t), rows(threaded, t)
        check_eq(len(a), len(b), f"rows of {t}")
        check(a == b, f"{t}: the rows differ between the serial and the threaded database")
    region = next(t for t in names if t.startswith("rocpd_region"))
    # Each thread's pairs of nested regions, named outer and inner, plus the frames of its
    # samples as regions under one "samples [syscope]" region per thread.
    string = next(t for t in names if t.startswith("rocpd_string"))
    by_name = dict(sqlite3.connect(serial).execute(
        f'SELECT S.string, count(*) FROM "{region}" R JOIN "{string}" S ON S.id = R.name_id '
        'GROUP BY S.string').fetchall())
    check_eq(by_name.get("outer"), THREADS * REGIONS, f"outer regions: {by_name}")
    check_eq(by_name.get("inner"), THREADS * REGIONS, f"inner regions: {by_name}")
    check_eq(by_name.get("samples [syscope]"), THREADS, f"sample runs: {by_name}")
    arg = next(t for t in names if t.startswith("rocpd_arg"))
    check_eq(len(rows(serial, arg)), 2 * THREADS * REGIONS, "two arguments per inner region")
    dispatch = next(t for t in names if t.startswith("rocpd_kernel_dispatch"))
    check_eq(len(rows(serial, dispatch)), KERNELS, "kernel dispatches")
    copy = next(t for t in names if t.startswith("rocpd_memory_copy"))
    check_eq(len(rows(serial, copy)), COPIES, "memory copies")
    with open(serial, "rb") as a, open(threaded, "rb") as b:
        check(a.read() == b.read(), "the threaded database is not the serial one, byte for byte")


def test_region_ids_follow_the_order_written():
    """Region ids are left to AUTOINCREMENT: 1..N with no gap, each thread's regions in the
    order of their ends (the replay's), and sqlite_sequence agrees."""
    db = convert(big_session(), os.path.join(workdir(), "out"), 2)
    region = next(t for t in tables(db) if t.startswith("rocpd_region"))
    n = scalar(db, f'SELECT count(*) FROM "{region}"')
    check(n > 2 * THREADS * REGIONS, f"{n} regions")
    check_eq(scalar(db, f'SELECT min(id) FROM "{region}"'), 1, "first id")
    check_eq(scalar(db, f'SELECT max(id) FROM "{region}"'), n, "last id: no gap")
    check_eq(scalar(db, f"SELECT seq FROM sqlite_sequence WHERE name = '{region}'"), n,
             "sqlite_sequence")
    with sqlite3.connect(db) as c:
        for (tid,) in c.execute(f'SELECT DISTINCT tid FROM "{region}"').fetchall():
            ends = [e for (e,) in c.execute(
                f'SELECT "end" FROM "{region}" R JOIN rocpd_string S ON S.id = R.name_id '
                f"WHERE tid = ? AND S.string IN ('outer', 'inner') ORDER BY R.id", (tid,))]
            check_eq(ends, sorted(ends), f"thread {tid}: regions by id end in order")
    guid = scalar(db, "SELECT value FROM rocpd_metadata WHERE tag = 'guid'")
    check_eq(scalar(db, f'SELECT count(DISTINCT guid) FROM "{region}"'), 1, "one guid")
    check_eq(scalar(db, f'SELECT guid FROM "{region}" LIMIT 1'), guid, "the file's guid")


def test_big_process_gets_bulk_settings_small_one_does_not():
    db = convert(big_session(), os.path.join(workdir(), "big"), 2)
    check_eq(scalar(db, "PRAGMA page_size"), 65536, "a process of > 100 000 rows")
    check_eq(scalar(db, "PRAGMA integrity_check"), "ok", "integrity")
    small = gen_session("--pid", 7302, "--threads", 1, "--regions", 10, workdir=workdir())
    sdb = convert(small, os.path.join(workdir(), "small"), 2)
    check_eq(scalar(sdb, "PRAGMA page_size"), 4096, "a small process keeps small pages")
    check(os.path.getsize(sdb) < 1 << 20, f"small database {os.path.getsize(sdb)} bytes")
    check_eq(scalar(sdb, "SELECT count(*) FROM regions WHERE name = 'outer'"), 10, "regions")


_complete = None


def complete_database():
    """The big session's database, converted without interruption; made once."""
    global _complete
    if not _complete:
        _complete = convert(big_session(), os.path.join(workdir(), "complete"), 1)
    return _complete


def row_counts(db):
    return {t: scalar(db, f'SELECT COUNT(*) FROM "{t}"') for t in tables(db)}


def test_interrupted_threaded_convert_leaves_no_temporary():
    s = big_session()
    d = workdir()
    for sig in (signal.SIGINT, signal.SIGTERM):
        out = os.path.join(d, "out-%d" % sig)
        os.mkdir(out)
        p = subprocess.Popen([harness.SYSCOPE, "convert", "-f", "rocpd", "--convert-threads",
                              "4", "-o", out, s], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        # Signalled while the database is being written (SQLite's thread running).
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline and \
                not any(n.startswith(".rocpd-") for n in os.listdir(out)):
            time.sleep(0.005)
        time.sleep(0.2)  # into the rows, most often; wherever it lands, nothing may remain
        interrupted = p.poll() is None
        p.send_signal(sig)
        rc = p.wait(timeout=300)
        leftovers = [n for n in os.listdir(out) if n.startswith(".") and
                     n != ".syscope-outputs"]
        check_eq(leftovers, [], f"temporaries after signal {sig}")
        if interrupted and rc != 0:
            # The signal can land after the database was completed and put in place (the
            # run still ends by it): then it is there whole. Never a half-written one.
            for name in [n for n in os.listdir(out) if n.endswith(".db")]:
                got, whole = os.path.join(out, name), complete_database()
                check_eq(scalar(got, "PRAGMA integrity_check"), "ok", f"{name} after {sig}")
                check_eq(row_counts(got), row_counts(whole),
                         f"a database left after signal {sig} is the whole one")


def test_bad_thread_count_refused():
    r = syscope("convert", "--convert-threads", "-2", big_session())
    check(r.rc != 0, r.describe())
    check("convert-threads" in r.err, r.describe())
    check("0" in r.err and "1024" in r.err, "the valid range is named\n" + r.describe())


if __name__ == "__main__":
    harness.main(globals())
