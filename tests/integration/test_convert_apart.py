"""The rocpd database written by a child process beside the other outputs (issue 20, goal 3:
sink_apart.c): the same rows as when one process writes everything (--convert-threads 1),
listed first and in the metadata, and a failing writer named while the others are written.
A session of 250 000 regions (tests/tools/gen_session): smaller ones stay in one process."""
import json
import os
import sqlite3
import subprocess

import tempfile

import harness
from harness import check, check_eq, gen_session

PID = 6201
REGIONS = 250000

TABLES = ("rocpd_region", "rocpd_event", "rocpd_sample", "rocpd_string", "rocpd_track",
          "rocpd_arg", "rocpd_info_thread")


def big_session():
    return gen_session("--pid", PID, "--threads", 2, "--regions", REGIONS, "--samples", 200,
                       workdir=tempfile.mkdtemp(prefix="syscope-apart-"))


def convert(session, out, *flags):
    env = dict(os.environ, SYSCOPE_KEEP_RAW="true")
    return subprocess.run([harness.SYSCOPE, "convert", "-o", out, *flags, session],
                          capture_output=True, text=True, timeout=300, env=env)


def rows(path):
    db = sqlite3.connect(path)
    return {t: db.execute(f'SELECT * FROM "{t}" ORDER BY 1').fetchall() for t in TABLES}


def test_rocpd_apart_has_the_rows_of_one_writer():
    session = big_session()
    pid = PID
    work = os.path.dirname(session)
    one, two = os.path.join(work, "one"), os.path.join(work, "two")
    a = convert(session, one, "--convert-threads", "1")
    b = convert(session, two, "--convert-threads", "2")
    check_eq(a.returncode, 0, a.stderr)
    check_eq(b.returncode, 0, b.stderr)
    db = f"rocpd-{pid}.db"
    mine, theirs = rows(os.path.join(two, db)), rows(os.path.join(one, db))
    check(len(mine["rocpd_region"]) >= REGIONS, f"{len(mine['rocpd_region'])} region rows")
    for t in TABLES:
        check_eq(mine[t], theirs[t], f"{t}: the same rows either way")
    md = json.load(open(os.path.join(two, f"metadata-{pid}.json")))
    check(db in md["files"], f"the metadata lists the child's database: {md['files']}")
    listed = [line.split()[-1] for line in b.stderr.splitlines()
              if line.startswith("syscope:   ") and "-" in line]
    check(listed and listed[0] == db, f"the database listed first: {b.stderr}")


def test_failing_rocpd_writer_is_named_and_the_rest_written():
    session = big_session()
    pid = PID
    out = os.path.join(os.path.dirname(session), "blocked")
    # A non-empty folder where the database goes: its rename into place fails.
    os.makedirs(os.path.join(out, f"rocpd-{pid}.db", "inside"))
    c = convert(session, out, "--convert-threads", "2")
    check(c.returncode != 0, f"the conversion says it failed: {c.stderr}")
    check(f"rocpd-{pid}.db is a directory" in c.stderr and "error" in c.stderr,
          f"the error names the database: {c.stderr}")
    written = sorted(f for f in os.listdir(out) if not f.startswith("."))
    check(f"metadata-{pid}.json" in written and len(written) >= 3,
          f"the other outputs are written all the same: {written}")
    check(not [f for f in os.listdir(out) if f.startswith(".rocpd-")],
          f"no temporary left: {os.listdir(out)}")


if __name__ == "__main__":
    harness.main(globals())
