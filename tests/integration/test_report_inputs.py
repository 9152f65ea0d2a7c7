"""syscope report takes what summary takes: a folder of sessions, a folder of rocpd
databases, several databases; every process of them is in the one page."""
import glob
import json
import os
import re
import shutil

import harness
from harness import check, check_eq, fixture, syscope

DATA = re.compile(r'<script type="application/json" id="syscope-data">(.*?)</script>', re.S)


def report_pids(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        m = DATA.search(f.read())
    check(m, f"{path} embeds its data")
    return sorted(p["pid"] for p in json.loads(m.group(1))["summary"]["processes"])


def three_processes():
    hot = fixture("hot")
    r = syscope("run", "--output-format", "rocpd", "--", "/bin/sh", "-c",
                f"{hot} 0.2 & {hot} 0.2; wait")
    check_eq(r.rc, 0, r.describe())
    dbs = sorted(glob.glob(os.path.join(r.session, "rocpd-*.db")))
    check_eq(len(dbs), 3, f"the shell and its two children: {dbs}")
    pids = sorted(int(re.search(r"rocpd-(\d+)\.db", d).group(1)) for d in dbs)
    return r.session, dbs, pids


def test_a_folder_of_sessions():
    session, _, pids = three_processes()
    parent = os.path.dirname(session)
    r = syscope("report", parent)
    check_eq(r.rc, 0, r.describe())
    out = os.path.join(parent, "report.html")
    check(out in r.out, r.out)
    check_eq(report_pids(out), pids, "every process of the sessions")


def test_several_databases_and_a_folder_of_them():
    session, dbs, pids = three_processes()
    r = syscope("report", *dbs[:2])
    check_eq(r.rc, 0, r.describe())
    out = os.path.join(session, "report.html")
    check(out in r.out, r.out)
    check_eq(report_pids(out), pids[:2], "the two databases given")
    folder = os.path.join(harness.tempfile.mkdtemp(), "dbs")
    os.mkdir(folder)
    for d in dbs:
        shutil.copy(d, folder)
    r = syscope("report", "-o", os.path.join(folder, "all.html"), folder)
    check_eq(r.rc, 0, r.describe())
    check_eq(report_pids(os.path.join(folder, "all.html")), pids, "every database of the folder")


def test_what_is_not_an_input_is_named():
    empty = harness.tempfile.mkdtemp()
    r = syscope("report", empty)
    check_eq(r.rc, 1, r.describe())
    check(f"{empty} is neither a rocpd database, nor a session folder, nor a folder of "
          "sessions or of rocpd-*.db files" in r.err, r.err)
    r = syscope("report")
    check_eq(r.rc, 2, r.describe())
    check("report: give a session folder, a folder of sessions or of rocpd databases, or "
          "rocpd databases" in r.err, r.err)


harness.main(globals())
