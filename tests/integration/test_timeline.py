"""Timeline outputs: the Perfetto trace of regions, marks, counters and samples, checked by an
independent decoder for what trace_processor would reject, and for content."""
import os

import harness
from harness import check, check_eq, fixture, syscope

import pftrace
import rawdump
import records


def trace_of(r, pid=None):
    pid = pid or r.main_pid()
    path = r.path(f"perfetto-trace-{pid}.pftrace")
    check(os.path.exists(path), f"no trace in {r.files()}")
    with open(path, "rb") as f:
        t = pftrace.Trace(f.read())
    check_eq(t.errors, [], "trace problems")
    return t


def raw_samples(r):
    n = 0
    for path in r.raw_files():
        with open(path, "rb") as f:
            for _tid, rtype, _flags, payload in rawdump.records(f.read()):
                n += rtype == records.SAMPLE
    return n


def test_regions_marks_counters_in_perfetto():
    r = syscope("sample", "-f", "1000", "--output-format", "pftrace", "--", fixture("regions"))
    check_eq(r.rc, 0, r.describe())
    t = trace_of(r)
    pid = r.main_pid()
    process = [u for u, i in t.tracks.items() if i["kind"] == "process"]
    check_eq(len(process), 1, "one process track")
    check_eq(t.tracks[process[0]]["pid"], pid, "process pid")
    threads = {i["tid"]: u for u, i in t.tracks.items() if i["kind"] == "thread"}
    check_eq(len(threads), 2, "main and worker thread tracks")
    main_track = threads[pid]
    worker_track = [u for tid, u in threads.items() if tid != pid][0]

    main_slices = sorted((s for s in t.slices if s[0] == main_track), key=lambda s: s[3])
    check_eq([s[1] for s in main_slices], ["phase A", "inner", "inner", "inner"],
             "main thread slices in time order")
    phase = main_slices[0]
    check_eq(phase[5], {"items": 42, "label": "alpha"}, "typed arguments")
    check_eq(phase[2], "user", "category")
    for inner in main_slices[1:]:
        check(phase[3] <= inner[3] and inner[4] <= phase[4], "inner nested in phase A")
    worker = [s for s in t.slices if s[0] == worker_track]
    check_eq([(s[1], s[2]) for s in worker], [("worker", "compute")], "worker slice")
    check_eq([(i[1], i[0]) for i in t.instants], [("checkpoint", main_track)], "mark")
    counter_tracks = [u for u, i in t.tracks.items() if i["kind"] == "counter"]
    check_eq([(t.tracks[u]["name"], t.tracks[u]["unit"]) for u in counter_tracks],
             [("queue depth", "items")], "counter track")
    check_eq([c[2] for c in sorted(t.counters, key=lambda c: c[1])],
             [float(i) for i in range(1, 11)], "counter values")
    check_eq(len(t.samples), raw_samples(r), "every sample is in the trace")
    check(any(f[-1][0] == "spin" for _p, _t, _ts, f in t.samples if f), "leaf frames named")


def test_samples_carry_symbolized_callstacks():
    r = syscope("sample", "-f", "1000", "--output-format", "pftrace", "json", "--",
                fixture("hot"), "0.5")
    check_eq(r.rc, 0, r.describe())
    t = trace_of(r)
    p = r.profile()
    check_eq(len(t.samples), p.total, "samples in trace and profile")
    hot = [s for s in t.samples if s[3] and s[3][-1][0] == "hot_loop"]
    check(len(hot) > 0.9 * len(t.samples), f"{len(hot)} of {len(t.samples)} in hot_loop")
    leaf = hot[0][3][-1]
    check(leaf[1].endswith("hot.c") and leaf[2] > 0, f"leaf frame has file and line: {leaf}")
    check_eq(hot[0][3][-2][0], "main", "caller frame")
    pid = r.main_pid()
    check(all(s[0] == pid and s[1] == pid for s in t.samples), "pid and tid of samples")


def test_trace_per_process_for_fork_and_exec():
    r = syscope("sample", "-f", "500", "--output-format", "pftrace", "--", fixture("fork_exec"),
                fixture("exec_child"), "0.3")
    check_eq(r.rc, 0, r.describe())
    pids = r.pids()
    check_eq(len(pids), 2, r.files())
    for pid in pids:
        t = trace_of(r, pid)
        names = [i.get("name") for i in t.tracks.values() if i["kind"] == "process"]
        check_eq(len(names), 1, "one process track per file")
    child = [p for p in pids if p != r.main_pid()][0]
    t = trace_of(r, child)
    check_eq([i["name"] for i in t.tracks.values() if i["kind"] == "process"], ["exec_child"],
             "the child is named after the program it became")


def test_unterminated_regions_are_closed():
    # A region still open when the program is killed ends at the last thing recorded.
    r = syscope("sample", "-f", "1000", "--output-format", "pftrace", "--", fixture("regions"),
                "die")
    check_eq(r.rc, 137, r.describe())
    t = trace_of(r)
    check_eq([s[1] for s in t.slices], ["doomed"], "the open region")
    doomed = t.slices[0]
    last = max([s[2] for s in t.samples] or [0])
    check(doomed[4] >= last and doomed[4] > doomed[3], "it ends at the last record")


harness.main(globals())
