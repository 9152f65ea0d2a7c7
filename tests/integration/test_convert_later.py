"""Deferred conversion and the raw folder's life (issue 20, goals 3 and 4): `--convert later`
returns when the program ends and leaves the raw session, `syscope convert SESSION` then builds
the outputs the run would have built (its settings come from session.json); raw/ is removed
after a successful conversion unless --keep-raw, kept when conversion failed, and every verb
that reads a finished session works without it (tests/programs/instrumented.c: known counts).
"""
import glob
import json
import os
import re
import shlex
import sqlite3
import subprocess

import harness
from harness import check, check_eq, fixture, syscope

EXPECTED_CALLS = {"main": 1, "run_all": 1, "sum_loop": 1, "add": 1000, "fact": 10,
                  "jumper": 1, "deep1": 1, "deep2": 1, "thread_main": 1, "work": 5}


def calls(profile):
    return {f["name"]: f["calls"] for f in profile.meta["functions"]
            if f["module"] == "instrumented"}


def top_function(profile):
    """The most called of the instrumented functions."""
    funcs = [f for f in profile.meta["functions"] if f["module"] == "instrumented"]
    return max(funcs, key=lambda f: (f["calls"], f["name"]))["name"]


def outputs(session):
    """The session's output files, the pid left out: {'wall_clock-P.json', ...}."""
    pid = json.load(open(os.path.join(session, "session.json")))["pid"]
    return sorted(f.replace(str(pid), "P") for f in os.listdir(session)
                  if f not in ("raw", "session.json") and not f.startswith("."))


def raw_files(session):
    return glob.glob(os.path.join(session, "raw", "*.sraw"))


def run_syscope(*args, keep_raw=False):
    """syscope outside a profiled run (convert, summary...), with syscope's own default for
    raw/ unless `keep_raw`."""
    env = dict(os.environ)
    if not keep_raw:
        env.pop("SYSCOPE_KEEP_RAW", None)
    return subprocess.run([harness.SYSCOPE] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=300, env=env)


def later_session(*flags):
    r = syscope("sample", "--convert", "later", *flags, "--", fixture("instrumented"),
                keep_raw=False)
    check_eq(r.rc, 0, r.describe())
    check(r.session and os.path.isdir(r.session), r.describe())
    return r


def printed_command(err):
    m = re.search(r"build its outputs with:\n  (syscope convert .*)\n", err)
    check(m, f"the launcher prints the command that converts: {err}")
    return shlex.split(m.group(1))


def test_later_leaves_raw_then_convert_builds_the_same():
    direct = syscope("sample", "--output-format", "json rocpd", "--", fixture("instrumented"),
                     keep_raw=False)
    check_eq(direct.rc, 0, direct.describe())
    r = later_session("--output-format", "json rocpd")
    check("instrumented ok" in r.out, r.describe())
    check(raw_files(r.session), f"raw files are left: {r.files()}")
    check_eq(outputs(r.session), [], "no outputs before syscope convert")
    cmd = printed_command(r.err)
    check_eq(cmd[2:], [r.session], "the command names the session folder")
    c = run_syscope(*cmd[1:])
    check_eq(c.returncode, 0, c.stderr)
    check("top regions by time inside them" in c.stderr, f"the summary of the run: {c.stderr}")
    # The run's --output-format came from session.json: json and rocpd, no text or folded.
    # (A CPU-time sample of this short program is luck, and so is its sampling profile.)
    def files(session):
        return [f for f in outputs(session) if not f.startswith("sampling_")]
    check_eq(files(r.session), files(direct.session), "the files a direct run writes")
    later = harness.Profile(r.path(f"wall_clock-{r.main_pid()}.json"))
    now = direct.profile("wall_clock")
    check_eq(calls(later), EXPECTED_CALLS, "calls per function after convert")
    check_eq(calls(later), calls(now), "the same counts as the direct run")
    check_eq(top_function(later), top_function(now), "the same top function")
    db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
    check_eq(db.execute("SELECT COUNT(*) FROM regions WHERE name = 'add'").fetchall(),
             [(1000,)], "each call a region in rocpd")
    check(not os.path.exists(r.path("raw")), "raw/ removed after the conversion")


def test_later_keeps_the_exit_status():
    r = syscope("sample", "--convert", "later", "--", "sh", "-c", "exit 3", keep_raw=False)
    check_eq(r.rc, 3, r.describe())
    printed_command(r.err)
    check(os.path.isdir(r.path("raw")), r.describe())


def test_convert_flags_beat_the_sessions_settings():
    r = later_session("--output-format", "json rocpd", "--summary-top", "3")
    c = run_syscope("convert", "-f", "folded", r.session)
    check_eq(c.returncode, 0, c.stderr)
    check_eq(outputs(r.session), ["metadata-P.json", "wall_clock-P.folded"],
             "convert's -f, not the run's formats")
    check(raw_files(r.session), "no database written: raw/ kept for the readers")
    # --summary-top 3 came from the run: three regions in each of the two rankings.
    ranked = re.findall(r"^syscope: +[\d.]+%.* +\d+ +[a-z_]+ *$", c.stderr, re.M)
    check("top regions by time inside them" in c.stderr, c.stderr)
    check_eq(len(ranked), 6, f"the run's --summary-top: {c.stderr}")


def test_raw_removed_by_default_and_convert_says_why():
    r = syscope("sample", "--", fixture("instrumented"), keep_raw=False)
    check_eq(r.rc, 0, r.describe())
    check(not os.path.exists(r.path("raw")), f"raw/ removed: {r.files()}")
    check_eq(calls(r.profile("wall_clock")), EXPECTED_CALLS, "the outputs hold every call")
    pid = r.main_pid()
    for name in (f"rocpd-{pid}.db", f"wall_clock-{pid}.txt", f"wall_clock-{pid}.folded",
                 f"metadata-{pid}.json"):
        check(os.path.getsize(r.path(name)) > 0, f"{name} in {r.files()}")
    text = open(r.path(f"wall_clock-{pid}.txt")).read()
    check(re.search(r"_add +\| +1000 \|", text), f"the text profile's add: {text[:3000]}")
    c = run_syscope("convert", r.session)
    check_eq(c.returncode, 1, c.stderr)
    check("cannot be rebuilt" in c.stderr and "raw data removed" in c.stderr, c.stderr)
    check(f"  rocpd-{pid}.db\n" in c.stderr and f"  wall_clock-{pid}.json\n" in c.stderr,
          f"the outputs are listed: {c.stderr}")
    check("--keep-raw" in c.stderr, f"what would allow it: {c.stderr}")
    check(f"syscope convert -f FORMAT {r.session}/rocpd-{pid}.db" in c.stderr, c.stderr)
    # Other formats from the database.
    c = run_syscope("convert", "-f", "csv", r.path(f"rocpd-{pid}.db"))
    check_eq(c.returncode, 0, c.stderr)
    check(glob.glob(r.path("*.csv")), r.files())


def test_keep_raw_keeps_it_and_convert_again():
    r = syscope("sample", "--keep-raw", "--", fixture("instrumented"), keep_raw=False)
    check_eq(r.rc, 0, r.describe())
    check(raw_files(r.session), f"raw/ kept: {r.files()}")
    c = run_syscope("convert", "-f", "text", r.session)
    check_eq(c.returncode, 0, c.stderr)
    check(raw_files(r.session), "the session's --keep-raw holds for convert too")
    text = open(r.path(f"wall_clock-{r.main_pid()}.txt")).read()
    check(re.search(r"_add +\| +1000 \|", text), text[:3000])


def test_failed_conversion_keeps_raw():
    r = later_session()
    pid = json.load(open(r.path("session.json")))["pid"]
    blocker = r.path(f"metadata-{pid}.json")
    os.mkdir(blocker)  # an output that cannot be written: a folder in its place
    c = run_syscope("convert", r.session)
    check_eq(c.returncode, 1, c.stderr)
    check(f"metadata-{pid}.json" in c.stderr, f"the failure is named: {c.stderr}")
    check(raw_files(r.session), "raw/ kept after a failed conversion")
    os.rmdir(blocker)
    c = run_syscope("convert", r.session)
    check_eq(c.returncode, 0, c.stderr)
    check(not os.path.exists(r.path("raw")), "removed once the conversion succeeded")
    check_eq(calls(harness.Profile(r.path(f"wall_clock-{pid}.json"))), EXPECTED_CALLS, "")


def test_damaged_session_keeps_raw():
    r = later_session()
    raw = sorted(raw_files(r.session))[0]
    with open(raw, "ab") as f:
        f.write(b"\x5a" * 100)  # a torn chunk at the end
    c = run_syscope("convert", r.session)
    check_eq(c.returncode, 0, c.stderr)
    check(os.path.basename(raw) in c.stderr, f"the problem is named: {c.stderr}")
    check(os.path.exists(raw), "raw/ kept: the conversion was partial")


def test_readers_work_without_raw():
    r = syscope("sample", "--", fixture("instrumented"), keep_raw=False)
    check_eq(r.rc, 0, r.describe())
    check(not os.path.exists(r.path("raw")), r.files())
    s = run_syscope("summary", "--format", "json", r.session)
    check_eq(s.returncode, 0, s.stderr)
    doc = json.loads(s.stdout)
    check_eq([p["pid"] for p in doc["processes"]], [r.main_pid()], "the process")
    check("add" in s.stdout, f"the summary names the functions: {s.stdout[:3000]}")
    s = run_syscope("summary", r.session)
    check(s.returncode == 0 and "PROCESSES" in s.stdout, s.stdout[-2000:] + s.stderr)
    out = os.path.join(r.workdir, "merged")
    m = run_syscope("merge", "-o", out, r.session)
    check_eq(m.returncode, 0, m.stderr)
    db = sqlite3.connect(os.path.join(out, "rocpd-merged.db"))
    check_eq(db.execute("SELECT COUNT(*) FROM regions WHERE name = 'fact'").fetchall(),
             [(10,)], "the merged database holds every call")
    h = run_syscope("report", r.session)
    check_eq(h.returncode, 0, h.stderr)
    page = open(r.path("report.html")).read()
    check("sum_loop" in page, "the report names the functions")
    w = run_syscope("summary", "--why-idle", r.session)
    check(w.returncode == 0 and "Traceback" not in w.stderr, w.stdout + w.stderr)


def test_launcher_refuses_a_converted_session_folder():
    d = os.path.join(syscope("sample", "--", "true").workdir, "same")
    first = run_syscope("sample", "--no-time-output", "-o", d, "--", fixture("instrumented"))
    check_eq(first.returncode, 0, first.stderr)
    check(not os.path.exists(os.path.join(d, "raw")), os.listdir(d))
    again = run_syscope("sample", "--no-time-output", "-o", d, "--", fixture("instrumented"))
    check_eq(again.returncode, 1, again.stderr)
    check("already holds a session" in again.stderr, again.stderr)


if __name__ == "__main__":
    harness.main(globals())
