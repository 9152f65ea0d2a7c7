"""syscope merge: processes, ranks and nodes into one rocpd database (views show every
process, counts are the sum of the inputs) and one Perfetto trace (a process each, named
with its rank, kept apart even when two nodes reuse a pid)."""
import json
import os
import sqlite3
import tempfile

import harness
from harness import check, check_eq, fixture, gen_session, syscope

import pftrace
from rocpd_checks import check_conventions, rows

VIEWS = ["regions", "samples", "kernels", "memory_copies", "memory_allocations", "threads",
         "processes", "region_args"]


def counts(path):
    db = sqlite3.connect(path)
    got = {v: rows(db, f"SELECT COUNT(*) FROM {v}")[0][0] for v in VIEWS}
    db.close()
    return got


def make_ranks(workdir):
    """Three ranks: two on nodeA, one on nodeB with the same pid as one on nodeA."""
    return [
        gen_session("--pid", 100, "--rank", 0, "--hostname", "nodeA", "--regions", 5,
                    "--samples", 10, "--kernels", 3, "--marks", 2, workdir=workdir),
        gen_session("--pid", 100, "--rank", 1, "--hostname", "nodeB", "--regions", 7,
                    "--samples", 12, "--kernels", 2, "--copies", 1, "--allocs", 1,
                    workdir=workdir),
        gen_session("--pid", 200, "--rank", 2, "--hostname", "nodeA", "--threads", 2,
                    "--regions", 2, "--samples", 3, "--counters", 4, workdir=workdir),
    ]


def test_two_files_give_the_sum():
    r = syscope("convert", "--help")  # a work folder
    sessions = make_ranks(r.workdir)
    out = os.path.join(r.workdir, "merged")
    m = syscope("merge", "-o", out, *sessions)
    check_eq(m.rc, 0, m.describe())
    check("merged 3 databases into" in m.err, m.err)
    merged = os.path.join(out, "rocpd-merged.db")
    db = sqlite3.connect(merged)
    check_conventions(db)
    inputs = [os.path.join(s, f) for s in sessions for f in os.listdir(s) if f.endswith(".db")]
    check_eq(len(inputs), 3, "each session was converted to rocpd first")
    total = {v: sum(counts(p)[v] for p in inputs) for v in VIEWS}
    check_eq(counts(merged), total, "every row of every input, through the views")
    check_eq(rows(db, "SELECT pid, hostname FROM processes ORDER BY hostname, pid"),
             [(100, "nodeA"), (200, "nodeA"), (100, "nodeB")], "processes")
    check_eq(rows(db, "SELECT COUNT(DISTINCT nid) FROM processes"), [(2,)], "two nodes")
    # Each thread under its process's OS pid, though the merge renumbered the row ids (the
    # threads view gave the row id: 101 for nodeB's pid 100), and summary counts them so.
    check_eq(rows(db, "SELECT hostname, pid, COUNT(*) FROM threads GROUP BY hostname, pid "
                      "ORDER BY hostname, pid"),
             [("nodeA", 100, 1), ("nodeA", 200, 2), ("nodeB", 100, 1)], "threads by process")
    s = syscope("summary", "-F", "json", merged)
    check_eq(s.rc, 0, s.describe())
    check_eq(sorted((p["hostname"], p["pid"], p["threads"]) for p in json.loads(s.out)["processes"]),
             [("nodeA", 100, 1), ("nodeA", 200, 2), ("nodeB", 100, 1)], "summary's threads")
    # The merge's folder is taken as its databases, as the session folders are.
    f = syscope("summary", "-F", "json", out)
    check_eq(f.rc, 0, f.describe())
    check_eq(json.loads(f.out), json.loads(s.out), "summary of the folder and of its database")
    guids = {g for (g,) in rows(db, "SELECT DISTINCT guid FROM rocpd_region")}
    check_eq(len(guids), 1, "one guid in the merged file")
    # Host calls and their kernels stay linked within each process.
    links = rows(db, "SELECT K.pid, K.nid, COUNT(*) FROM kernels K JOIN regions R ON "
                     "R.stack_id = K.stack_id AND R.pid = K.pid AND R.nid = K.nid AND "
                     "R.category = 'CUDA_RUNTIME_API' GROUP BY K.nid, K.pid ORDER BY 3 DESC")
    check_eq([n for _, _, n in links], [3, 2], "kernels linked to their launches")

    t = pftrace.Trace(open(os.path.join(out, "perfetto-trace-merged.pftrace"), "rb").read())
    check_eq(t.errors, [], "valid merged trace")
    procs = sorted((i["name"], i["pid"]) for i in t.tracks.values() if i["kind"] == "process")
    check_eq([n for n, _ in procs], ["rank 0: gen_session (nodeA)",
                                     "rank 1: gen_session (nodeB)",
                                     "rank 2: gen_session (nodeA)"], "named with their rank")
    check_eq(len({p for _, p in procs}), 3, "three distinct pids in the trace")
    threads = [i for i in t.tracks.values() if i["kind"] == "thread"]
    check_eq(len(threads), 4, "threads of every rank")
    check_eq(len([s for s in t.slices if s[2] == "KERNEL_DISPATCH"]), 5, "kernels")
    check_eq(len(t.flows), 3 + 2 + 1 + 2, "host -> device flows of every rank")
    check_eq(len(t.samples), 10 + 12 + 2 * 3, "samples")


def test_merge_of_merged_and_folder_of_sessions():
    r = syscope("convert", "--help")
    root = os.path.join(r.workdir, "runs")
    os.mkdir(root)
    sessions = make_ranks(root)
    first = os.path.join(r.workdir, "first.db")
    m = syscope("merge", "-o", first, sessions[0], sessions[1])
    check_eq(m.rc, 0, m.describe())
    check(os.path.exists(os.path.join(r.workdir, "first.pftrace")), "trace beside the .db")
    again = os.path.join(r.workdir, "all.db")
    m = syscope("merge", "-o", again, first, sessions[2])
    check_eq(m.rc, 0, m.describe())
    whole = os.path.join(r.workdir, "whole.db")
    m = syscope("merge", "-f", "csv", "-o", whole, root)  # the folder holding the sessions
    check_eq(m.rc, 0, m.describe())
    check_eq(counts(again), counts(whole), "merging in steps or at once")
    check(os.path.exists(os.path.join(r.workdir, "kernels-100.csv")), "csv from the merge")


def test_recorded_runs_and_bad_targets():
    a = syscope("sample", "--output-format", "rocpd", "--", fixture("regions"))
    b = syscope("sample", "--output-format", "rocpd", "--", fixture("regions"))
    check_eq((a.rc, b.rc), (0, 0), a.describe())
    out = os.path.join(a.workdir, "both")
    m = syscope("merge", "-o", out, a.session, b.session)
    check_eq(m.rc, 0, m.describe())
    db = sqlite3.connect(os.path.join(out, "rocpd-merged.db"))
    check_eq(sorted(p for (p,) in rows(db, "SELECT pid FROM processes")),
             sorted([a.main_pid(), b.main_pid()]), "both runs")
    check_eq(rows(db, "SELECT COUNT(*) FROM regions WHERE name = 'phase A'"), [(2,)],
             "a region of each run")
    into_input = os.path.join(a.session, f"rocpd-{a.main_pid()}.db")
    m = syscope("merge", "-o", into_input, a.session)
    check_eq(m.rc, 2, m.describe())
    check("is an input" in m.err, m.err)
    empty = os.path.join(a.workdir, "empty")
    os.mkdir(empty)
    m = syscope("merge", "-o", out, empty)
    check_eq(m.rc, 1, m.describe())
    check("neither a rocpd database, nor a session folder" in m.err, m.err)


def test_notes_of_each_process_kept_once():
    """The runtime's notes (here the children --follow-exclude left out, counted by the
    parent, and said by each fork that exec'd one) come through the rocpd databases: a merge
    of one run says each as the run did, once, and a merge of two runs once per process
    (before: rocpd kept no notes, and a merge said none)."""
    d = tempfile.mkdtemp(prefix="syscope-tools-")
    harness._workdirs.append(d)
    ptxas = os.path.join(d, "ptxas")
    os.symlink("/bin/true", ptxas)
    runs = [syscope("sample", "--output-format", "rocpd", "--", fixture("spawn_tools"), ptxas,
                    3, 4, "/bin/true") for _ in range(2)]
    for r in runs:
        check_eq(r.rc, 0, r.describe())
        check("note (process %d): 5 children were not profiled (--follow-exclude): ptxas x5"
              % r.main_pid() in r.err, r.err)
    for inputs in ([runs[0]], runs):
        out = os.path.join(runs[0].workdir, f"merged{len(inputs)}")
        m = syscope("merge", "-o", out, "--output-format", "text", *(r.session for r in inputs))
        check_eq(m.rc, 0, m.describe())
        parents = [line for line in m.err.splitlines()
                   if "5 children were not profiled (--follow-exclude): ptxas x5" in line]
        said = ("(process %d)" % inputs[0].main_pid() if len(inputs) == 1
                else "(2 processes, process ")
        check(len(parents) == 1 and said in parents[0],
              f"the parents' counts after merging {len(inputs)} run(s), once each:\n{m.err}")
        forks = [line for line in m.err.splitlines() if "a child running ptxas" in line]
        check_eq(len(forks), 1, m.err)
        check(f"({2 * len(inputs)} processes," in forks[0],
              f"each fork that exec'd ptxas, once: {forks}")


if __name__ == "__main__":
    harness.main(globals())
