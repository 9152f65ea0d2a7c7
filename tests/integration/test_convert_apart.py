"""The rocpd database written by a child process beside the other outputs (issue 20, goal 3:
sink_apart.c): the same rows as when one process writes everything (--convert-threads 1),
listed first and in the metadata, and a failing writer named while the others are written
(tests/programs/instrumented.c: known counts)."""
import json
import os
import sqlite3
import subprocess

import harness
from harness import check, check_eq, fixture, syscope

TABLES = ("rocpd_region", "rocpd_event", "rocpd_sample", "rocpd_string", "rocpd_track",
          "rocpd_arg", "rocpd_info_thread")


def convert(session, out, *flags):
    env = dict(os.environ, SYSCOPE_KEEP_RAW="true")
    return subprocess.run([harness.SYSCOPE, "convert", "-o", out, *flags, session],
                          capture_output=True, text=True, timeout=300, env=env)


def rows(path):
    db = sqlite3.connect(path)
    return {t: db.execute(f'SELECT * FROM "{t}" ORDER BY 1').fetchall() for t in TABLES}


def test_rocpd_apart_has_the_rows_of_one_writer():
    r = syscope("sample", "--", fixture("instrumented"))
    check_eq(r.rc, 0, r.describe())
    pid = r.main_pid()
    one, two = os.path.join(r.workdir, "one"), os.path.join(r.workdir, "two")
    a = convert(r.session, one, "--convert-threads", "1")
    b = convert(r.session, two, "--convert-threads", "2")
    check_eq(a.returncode, 0, a.stderr)
    check_eq(b.returncode, 0, b.stderr)
    db = f"rocpd-{pid}.db"
    mine, theirs = rows(os.path.join(two, db)), rows(os.path.join(one, db))
    check_eq(len(mine["rocpd_region"]), len(theirs["rocpd_region"]), "region rows")
    for t in TABLES:
        check_eq(mine[t], theirs[t], f"{t}: the same rows either way")
    adds = sqlite3.connect(os.path.join(two, db)).execute(
        "SELECT COUNT(*) FROM regions WHERE name = 'add'").fetchall()
    check_eq(adds, [(1000,)], "each call of add a region")
    md = json.load(open(os.path.join(two, f"metadata-{pid}.json")))
    check(db in md["files"], f"the metadata lists the child's database: {md['files']}")
    listed = [line.split()[-1] for line in b.stderr.splitlines()
              if line.startswith("syscope:   ") and "-" in line]
    check(listed and listed[0] == db, f"the database listed first: {b.stderr}")
    check("%" not in b.stderr.split("wrote")[-1].split("\n")[0],
          "no progress line from the child")


def test_failing_rocpd_writer_is_named_and_the_rest_written():
    r = syscope("sample", "--", fixture("instrumented"))
    check_eq(r.rc, 0, r.describe())
    pid = r.main_pid()
    out = os.path.join(r.workdir, "blocked")
    # A non-empty folder where the database goes: its rename into place fails.
    os.makedirs(os.path.join(out, f"rocpd-{pid}.db", "inside"))
    c = convert(r.session, out, "--convert-threads", "2")
    check(c.returncode != 0, f"the conversion says it failed: {c.stderr}")
    check(f"rocpd-{pid}.db is a directory" in c.stderr and "error" in c.stderr,
          f"the error names the database: {c.stderr}")
    prof = harness.Profile(os.path.join(out, f"wall_clock-{pid}.json"))
    calls = {f["name"]: f["calls"] for f in prof.meta["functions"]
             if f["module"] == "instrumented"}
    check_eq(calls.get("add"), 1000, "the profiles are written all the same")
    check(not [f for f in os.listdir(out) if f.startswith(".rocpd-")],
          f"no temporary left: {os.listdir(out)}")


if __name__ == "__main__":
    harness.main(globals())
