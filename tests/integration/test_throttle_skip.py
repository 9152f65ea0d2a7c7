"""Throttled instrumented functions cost one count a call (issue 20 goal 1): once a
function is throttled, its patched entry only counts the call (no shadow-stack frame, no
clock, no record) and a compiler-hooked call reads no clock; the profile still has its exact
count, from the recorded calls plus FUNC_COUNT, the notes name it and say its later calls
were not timed, and functions called less often stay recorded call by call
(tests/programs/throttle_skip.c). Counts stay exact across threads and in a fork child.
A throttled function with no instrumented caller keeps its calls timed (its time would be in
no function of the profile otherwise: a library's API under -MI called by the program).
The default selection leaves out small functions that call nothing and have no loop."""
import re
import sqlite3

from harness import calls_of, check, check_eq, fixture, syscope

import rawdump
import records
from rocpd_checks import rows

N = 1000000  # calls of tiny: throttled after the default --throttle-calls (1000)
RECORDED = 1001  # the call past --throttle-calls ends recorded, then tiny is throttled


def run(kind, *args, program=()):
    exe = fixture("throttle_skip" if kind == "patched" else "throttle_skip_hooked")
    verb = ("instrument", "-I", "^(tiny|slow)$") if kind == "patched" else ("sample",)
    r = syscope(*verb, "--output-format", "json rocpd", *args, "--", exe, *program)
    check_eq(r.rc, 0, r.describe())
    check(f"throttle_skip ok {program[0]}" in r.out, r.describe())
    return r


def func_records(r, pid):
    """(FUNC_CALL records by function address, FUNC_COUNT records by function address) of
    process `pid`'s raw file (the program, or its one fork child)."""
    # the program's file is named by its pid, a fork child's after its parent's
    main = r.main_pid()
    path = [p for p in r.raw_files()
            if p.endswith(f"/{main}.sraw") == (pid == main) and f"/{main}" in p]
    check_eq(len(path), 1, f"one raw file of {pid}: {r.raw_files()}")
    ids, calls, counts = {}, {}, {}
    for _tid, rtype, flags, p in rawdump.records(open(path[0], "rb").read()):
        if rtype == records.FUNC_ID:
            f = records.decode_func_id(flags, p)
            ids[f["id"]] = f["addr"]
        elif rtype == records.FUNC_CALL:
            c = records.decode_func_call(flags, p)
            calls[c["id"]] = calls.get(c["id"], 0) + 1
        elif rtype == records.FUNC_COUNT:
            c = records.decode_func_count(flags, p)
            counts[c["id"]] = (c, flags)
    return ({ids[i]: n for i, n in calls.items()}, {ids[i]: c for i, c in counts.items()})


def instrumented_regions(r, pid):
    db = sqlite3.connect(r.path(f"rocpd-{pid}.db"))
    return dict(rows(db, "SELECT name, COUNT(*) FROM regions WHERE category = "
                         "'HOST_INSTRUMENTED' AND name IN ('tiny', 'slow') GROUP BY name"))


def check_throttled(kind, r, pid, n):
    what = f"{kind}, pid {pid}"
    fl = calls_of(r.profile("wall_clock", pid=pid))
    check_eq((fl.get("tiny"), fl.get("slow")), (n, 50),
             f"{what}: exact counts in the profile: {fl}")
    regions = instrumented_regions(r, pid)
    check_eq(regions.get("slow"), 50, f"{what}: slow recorded call by call: {regions}")
    calls, counts = func_records(r, pid)
    check_eq(len(counts), 1, f"{what}: one function throttled: {counts}")
    (addr, (count, flags)), = counts.items()
    check(0 < calls[addr] < n, f"{what}: tiny recorded only until throttled: {calls[addr]}")
    check_eq(regions.get("tiny"), calls[addr], f"{what}: its recorded calls are its regions")
    check_eq(calls[addr] + count["calls"], n, f"{what}: recorded + counted calls of tiny")
    check(flags & 0x8, f"{what}: FUNC_COUNT says some calls were not timed: {flags:#x}")
    return calls[addr], count["total_ns"]


def check_notes(kind, r, n, recorded):
    check(f"throttled: 1 function, {n - recorded} calls counted, not recorded one by one "
          f"(tiny ({n - recorded}))" in r.err, f"{kind}: the reader's note names tiny: {r.err}")
    check("throttling: calls of 1 function counted after throttling, time not" in r.err,
          f"{kind}: the runtime's note says their time was not measured: {r.err}")


def test_patched_tiny_function_counted_slow_one_recorded():
    r = run("patched", program=(N,))
    recorded, ns = check_throttled("patched", r, r.main_pid(), N)
    check_eq(recorded, RECORDED, "patched: one thread records tiny until past the threshold")
    check_eq(ns, 0, "patched: no call was in flight when tiny was throttled: none timed")
    check_notes("patched", r, N, recorded)


def test_hooked_tiny_function_counted_slow_one_recorded():
    r = run("hooked", program=(N,))
    recorded, ns = check_throttled("hooked", r, r.main_pid(), N)
    check_eq(recorded, RECORDED, "hooked: one thread records tiny until past the threshold")
    check_eq(ns, 0, "hooked: no call was in flight when tiny was throttled: none timed")
    check_notes("hooked", r, N, recorded)


def test_no_throttle_records_every_call():
    n = 200000  # over --throttle-calls: throttled without --no-throttle
    for kind in ("patched", "hooked"):
        r = run(kind, "--no-throttle", program=(n,))
        calls, counts = func_records(r, r.main_pid())
        check_eq(counts, {}, f"{kind}: nothing throttled")
        check_eq(sorted(calls.values())[-2:], [50, n], f"{kind}: every call a FUNC_CALL")
        check_eq(instrumented_regions(r, r.main_pid()), {"tiny": n, "slow": 50},
                 f"{kind}: every call a region in rocpd")
        check("counted after throttling" not in r.err, f"{kind}: no throttling note: {r.err}")


def test_threads_keep_an_exact_total():
    for kind in ("patched", "hooked"):
        r = run(kind, program=(N, "threads", 4))
        check_throttled(kind, r, r.main_pid(), N)


def test_fork_child_keeps_counting():
    for kind in ("patched", "hooked"):
        r = run(kind, program=(N, "fork"))
        pids = r.pids()
        check_eq(len(pids), 2, f"{kind}: parent and child: {r.files()}")
        for pid in pids:
            check_eq(check_throttled(kind, r, pid, N)[0], RECORDED,
                     f"{kind}: pid {pid} records tiny until past the threshold")


def test_throttled_function_without_instrumented_caller_keeps_its_time():
    n = 5000  # quick calls: throttled; then 20 calls of 10 ms, recorded whole all the same
    for kind in ("patched", "hooked"):
        exe = fixture("throttle_skip" if kind == "patched" else "throttle_skip_hooked")
        verb = (("instrument", "-R", "^late_long$", "-I", "^late_long$") if kind == "patched"
                else ("sample",))
        r = syscope(*verb, "--output-format", "json rocpd", "--", exe, n, "late")
        check_eq(r.rc, 0, r.describe())
        calls, counts = func_records(r, r.main_pid())
        check_eq(len(counts), 1, f"{kind}: late_long throttled: {counts}")
        (addr, (count, flags)), = counts.items()
        check_eq(calls[addr] + count["calls"], n + 20, f"{kind}: recorded + counted calls")
        check(not flags & 0x8, f"{kind}: every counted call timed: {flags:#x}")
        # The 20 calls of 10 ms, made after throttling, are long enough to be recorded whole
        # (100 x --throttle-us and more): on the timeline, not only in FUNC_COUNT.
        db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
        long_calls = rows(db, "SELECT COUNT(*) FROM regions WHERE name = 'late_long' AND "
                              "category = 'HOST_INSTRUMENTED' AND duration >= 10000000")
        check_eq(long_calls, [(20,)], f"{kind}: the long calls on the timeline")
        check(count["total_ns"] < 100e6, f"{kind}: only quick calls counted: {count}")
        fl = {f["name"]: f for f in r.profile("wall_clock").meta["functions"]}
        late = fl.get("late_long", {})
        check_eq(late.get("calls"), n + 20, f"{kind}: exact count in the profile: {late}")
        check(late.get("inclusive", 0) >= 0.2, f"{kind}: its time in the profile: {late}")
        check("throttling: calls of 1 function counted after throttling, time not"
              not in r.err, f"{kind}: no untimed calls said: {r.err}")


def selected(*flags):
    """{function: reason or None} of the fixture's functions under `flags` (--simulate)."""
    out = {}
    for what in ("instrumented", "excluded"):
        r = syscope("instrument", "--simulate", f"--print-{what}", *flags, "--",
                    fixture("throttle_skip"))
        check_eq(r.rc, 0, r.describe())
        for m in re.finditer(r"\d+ insns  (\w+)(?:  \[(.*)\])?$", r.out + r.err, re.M):
            out[m.group(1)] = m.group(2)
    return {f: out.get(f, "missing") for f in ("tiny", "leaf_mix", "small_caller", "slow")}


def test_default_selection_leaves_out_small_leaf_functions():
    leaf = "calls nothing, no loop, fewer instructions than --min-leaf-instructions"
    small = "fewer instructions than --min-instructions"
    check_eq(selected(), {"tiny": small, "leaf_mix": leaf, "small_caller": None, "slow": None},
             "default: a leaf of 38 instructions is left out, a caller of 10 and a loop kept")
    check_eq(selected("--min-leaf-instructions", "30"),
             {"tiny": small, "leaf_mix": None, "small_caller": None, "slow": None},
             "--min-leaf-instructions 30")
    check_eq(selected("-i", "0"),
             {"tiny": None, "leaf_mix": None, "small_caller": None, "slow": None},
             "-i 0 alone: every function")
    r = syscope("instrument", "--min-leaf-instructions", "many", "--", fixture("throttle_skip"))
    check_eq(r.rc, 2, r.describe())
    check("--min-leaf-instructions many: expected a count (0 or more)" in r.err, r.err)


if __name__ == "__main__":
    import harness
    harness.main(globals())
