"""Sessions of more processes than SQLite attaches to one connection (10 in Debian's build):
a shell script running a dozen commands, as `make` and most scripts do, is summarized whole."""
import json
import subprocess

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


if __name__ == "__main__":
    harness.main(globals())
