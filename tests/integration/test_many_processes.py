"""Sessions of more processes than SQLite attaches to one connection (10 in Debian's build):
a shell script running a dozen commands, as `make` and most scripts do, is summarized whole."""
import json
import os
import sqlite3
import subprocess
import tempfile

import harness
from harness import check, check_eq, syscope

SCRIPT = "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do /bin/true; done"


def test_summary_of_thirteen_processes():
    r = syscope("sample", "--output-format", "rocpd", "--no-summary", "--", "sh", "-c", SCRIPT)
    check_eq(r.rc, 0, r.describe())
    dbs = [f for f in r.files() if f.startswith("rocpd-")]
    check_eq(len(dbs), 13, f"a database per process: {dbs}")
    s = subprocess.run([harness.SYSCOPE, "summary", "-n", "20", "--format", "json", r.session],
                       capture_output=True, text=True, timeout=300)
    check_eq(s.returncode, 0, s.stderr)
    procs = json.loads(s.stdout)["processes"]
    commands = sorted(p["command"] for p in procs)
    check_eq(commands, ["/bin/true"] * 12 + ["sh -c " + SCRIPT], "every process, once")
    check_eq(len({p["pid"] for p in procs}), 13, "13 pids")
    # The tables below the process list come from the same merged data.
    s = subprocess.run([harness.SYSCOPE, "summary", r.session], capture_output=True,
                       text=True, timeout=300)
    check(s.returncode == 0 and "PROCESSES" in s.stdout, s.stdout[-2000:] + s.stderr)
    # Converting the 13 databases goes through the same set (the model's import).
    out = r.path("converted")
    s = subprocess.run([harness.SYSCOPE, "convert", "--output-format", "text", "-o", out] +
                       [r.path(db) for db in dbs], capture_output=True, text=True, timeout=300)
    check_eq(s.returncode, 0, s.stderr)
    check("too many attached" not in s.stderr, s.stderr)


def test_summary_and_merge_of_150_processes():
    """150 processes (15 times what SQLite attaches at once): summary counts every one and
    sums their regions; merge keeps them all."""
    session = os.path.join(tempfile.mkdtemp(prefix="syscope-many-"), "session")
    harness._workdirs.append(os.path.dirname(session))
    for i in range(150):  # each run adds a process to the session folder
        subprocess.run([harness.GEN_SESSION, session, "--pid", str(7000 + i), "--threads",
                        str(1 + i % 2), "--regions", str(1 + i % 3)], check=True,
                       capture_output=True)
    r = syscope("convert", "--no-summary", "--output-format", "rocpd", session)
    check_eq(r.rc, 0, r.describe())
    check_eq(len([f for f in os.listdir(session) if f.startswith("rocpd-")]), 150, "databases")
    # regions per process: (1 + i % 3) pairs on each of its (1 + i % 2) threads
    pairs = sum((1 + i % 3) * (1 + i % 2) for i in range(150))
    s = subprocess.run([harness.SYSCOPE, "summary", "-n", "200", "--format", "json", session],
                       capture_output=True, text=True, timeout=300)
    check_eq(s.returncode, 0, s.stderr)
    doc = json.loads(s.stdout)
    check_eq(doc["process_count"], 150, "processes summarized")
    check_eq(sorted(p["pid"] for p in doc["processes"]), list(range(7000, 7150)), "every pid")
    check_eq(sorted((x["name"], x["calls"]) for x in doc["regions"]),
             [("inner", pairs), ("outer", pairs)], "the regions of every process")
    check_eq(doc["mpi_functions"], [], "no MPI section without MPI regions")
    s = subprocess.run([harness.SYSCOPE, "summary", session], capture_output=True, text=True,
                       timeout=300)
    check_eq(s.returncode, 0, s.stderr)
    check("PROCESSES (150, THE FIRST 10 BY START)" in s.stdout, s.stdout[:1500])
    out = os.path.join(r.workdir, "merged")
    m = syscope("merge", "--no-summary", "-f", "rocpd", "-o", out, session)
    check_eq(m.rc, 0, m.describe())
    db = sqlite3.connect(os.path.join(out, "rocpd-merged.db"))
    check_eq(db.execute("SELECT COUNT(DISTINCT pid) FROM processes").fetchone()[0], 150,
             "merged processes")
    check_eq(db.execute("SELECT COUNT(*) FROM regions").fetchone()[0], 2 * pairs,
             "merged regions")


if __name__ == "__main__":
    harness.main(globals())
