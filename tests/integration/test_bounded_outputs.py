"""Outputs and conversion memory follow what is distinct (call paths, functions, threads), not
how much happened (issue 20 goal 2, issue 17 item 10): a recursion 5 000 deep makes a folded
file of a bounded number of lines with every count kept, a sampled run of deep stacks in
several threads a JSON profile of a few hundred kilobytes that still names its hot function,
2 M regions convert through the bounded sorter to exact counts, and CPU counter reads at
region boundaries past the bound of their table (spilled to disk) to exact counts. Peak memory is measured
in bench/convert-bench, not here (one loose bound only)."""
import os
import resource
import subprocess

import harness
from harness import SYSCOPE, check, check_eq, children, count, fixture, gen_session, syscope

TREE_MAX_DEPTH = 256  # SC_TREE_MAX_DEPTH (src/model/profile.h)
DEEPER = "[deeper calls not shown]"


def folded_lines(path):
    """[(frames, value)] of a folded file."""
    out = []
    with open(path) as f:
        for line in f:
            stack, value = line.rstrip("\n").rsplit(" ", 1)
            out.append((stack.split(";"), int(value)))
    return out


def test_deep_recursion_folded_is_bounded_and_keeps_counts():
    depth, reps = 5000, 4
    r = syscope("run", "--no-throttle", "--output-format", "folded json", "--",
                fixture("deep_recursion"), "calls", depth, reps)
    check_eq(r.rc, 0, r.describe())
    check(f"deep_recursion: {reps} x {depth}" in r.out, r.describe())
    p = r.profile("wall_clock")
    calls = {f["name"]: f["calls"] for f in p.meta["functions"]}
    check_eq((calls.get("main"), calls.get("descend"), calls.get("leaf_work")),
             (1, reps * (depth + 1), reps), "every call counted in the flat table")
    path = r.path(f"wall_clock-{r.main_pid()}.folded")
    lines = folded_lines(path)
    # One line per node with time of its own down to the cut (main + 256 levels at most),
    # then one per function below it: not one per level of the recursion.
    check(len(lines) <= TREE_MAX_DEPTH + 3, f"{len(lines)} lines")
    check(max(len(frames) for frames, _ in lines) <= TREE_MAX_DEPTH + 2,
          "no path longer than the cut and its marker")
    deeper = {frames[-1]: value for frames, value in lines if DEEPER in frames}
    check_eq(sorted(deeper), ["descend", "leaf_work"], "the functions below the cut")
    check(all(frames[:2] == ["main", "descend"] for frames, _ in lines[1:]),
          f"paths start at main: {[frames[:3] for frames, _ in lines[:3]]}")
    check(os.path.getsize(path) < 2 << 20, f"{os.path.getsize(path)} bytes")
    # Microseconds of exclusive time: together, main's inclusive time (each line rounded).
    total = sum(value for _, value in lines)
    main_us = p.function("main")["inclusive"] * 1e6
    check(abs(total - main_us) <= 0.5 * len(lines) + 0.02 * main_us + 2,
          f"folded total {total} us against main's {main_us:.0f} us")


def test_sampled_deep_threads_json_stays_small():
    r = syscope("sample", "-f", "500", "--sampling-max-depth", "1024", "--output-format",
                "json folded", "--", fixture("deep_threads"), "spin", 4, "0.5", 1000)
    check_eq(r.rc, 0, r.describe())
    check("deep_threads: 4 threads" in r.out, r.describe())
    p = r.profile()
    check(p.total >= 100, f"{p.total} samples")
    check(p.self_samples("leaf_work") >= 0.5 * p.total, "the hot function is named")
    trees = p.roots()
    check(len([t for t in trees if t["children"]]) >= 4, "a tree per worker thread")

    def nodes(n):
        return 1 + sum(nodes(c) for c in n["children"])
    n = sum(nodes(t) for t in trees)
    check(n <= 4 * (TREE_MAX_DEPTH + 8) + 64, f"{n} nodes: cut at the tree depth limit")
    size = os.path.getsize(p.path)
    # Proportional to the tree: about a kilobyte a node (indented, a node 256 deep took 27).
    check(size <= 2048 * n + (256 << 10), f"{size} bytes for {n} nodes, {p.total} samples")
    lines = folded_lines(r.path(f"sampling_cpu_clock-{r.main_pid()}.folded"))
    check_eq(sum(v for _, v in lines), p.total, "folded counts add up to the samples")
    check(any(frames[-1] == "leaf_work" and DEEPER in frames for frames, _ in lines),
          "the hot leaf below the cut keeps its name")


def test_two_million_regions_convert_to_exact_counts():
    pairs = 1_000_000  # 2 M regions: 96 MB of intervals, sorted in runs on disk
    session = gen_session("--regions", pairs)
    out = os.path.join(os.path.dirname(session), "out")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    c = subprocess.run([SYSCOPE, "convert", "--no-summary", "--output-format", "json", "-o",
                        out, session], capture_output=True, text=True, timeout=900)
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    check_eq(c.returncode, 0, c.stderr)
    pid = [f for f in os.listdir(out) if f.startswith("wall_clock-")][0][11:-5]
    p = harness.Profile(os.path.join(out, f"wall_clock-{pid}.json"))
    calls = {f["name"]: f["calls"] for f in p.meta["functions"]}
    check_eq((calls["outer"], calls["inner"]), (pairs, pairs), "calls")
    outer = children(p.thread_trees()[0])["outer"]
    check_eq((count(outer), count(children(outer)["inner"])), (pairs, pairs),
             "every inner region nested in its outer one")
    if peak_kb > before:  # the largest child so far is this conversion
        check(peak_kb < 1 << 20, f"peak {peak_kb} KB for 2 M regions")


def test_cpu_reads_past_their_bound_count_exactly():
    # 3 threads x 40 000 region pairs x 4 reads (88 bytes each): 42 MB of reads, past the
    # 8 MiB a table keeps in memory and the 16 MiB of a sorted run.
    pairs, threads = 40000, 3
    session = gen_session("--regions", pairs, "--threads", threads, "--cpu-reads")
    out = os.path.join(os.path.dirname(session), "out")
    c = subprocess.run([SYSCOPE, "convert", "--no-summary", "--output-format", "json", "-o",
                        out, session], capture_output=True, text=True, timeout=900)
    check_eq(c.returncode, 0, c.stderr)
    pid = [f for f in os.listdir(out) if f.startswith("wall_clock-")][0][11:-5]
    p = harness.Profile(os.path.join(out, f"wall_clock-{pid}.json"))
    n = pairs * threads
    # gen_session counts 1 000 instructions and 700 cycles a microsecond: "outer" is 5 us
    # with "inner" (3 us) inside.
    want = {"inner": {"instructions": (3000 * n, 3000 * n), "cycles": (2100 * n, 2100 * n)},
            "outer": {"instructions": (5000 * n, 2000 * n), "cycles": (3500 * n, 1400 * n)}}
    for name, events in want.items():
        got = p.function(name)["cpu_counters"]
        check_eq({e: (v["inclusive"], v["self"]) for e, v in got.items()}, events, name)
    check_eq({e["name"]: e["total"] for e in p.meta["cpu_events"]},
             {"instructions": 5000 * n, "cycles": 3500 * n}, "the totals")


if __name__ == "__main__":
    harness.main(globals())
