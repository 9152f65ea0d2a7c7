"""Instrumented calls written whole (FUNC_CALL, 24 bytes a call, function ids announced once
by FUNC_ID) and throttled functions (FUNC_COUNT): exact counts by record type in the raw
files, exact call counts in the profiles of patched, compiler-hooked and Python functions,
throttling with its note and --no-throttle, and the calls still open at a crash
(tests/programs/calls_compact.c)."""
import os
import re

import harness
from harness import check, check_eq, children, count, fixture, syscope

import rawdump
import records

CALLS = os.path.join(harness.SOURCE, "tests", "programs", "python", "trace_calls.py")
PYTHON = "/usr/bin/python3"
N = 300000  # calls of tick: over the default --throttle-calls (1000)


def raw_records(r):
    """Per raw file of the session: (records by type name, FUNC_ID id -> addr, FUNC_CALL
    records decoded, FUNC_COUNT records decoded, file size)."""
    out = []
    for path in r.raw_files():
        data = open(path, "rb").read()
        by_type, ids, calls, counts = {}, {}, [], []
        for _tid, rtype, flags, p in rawdump.records(data):
            name = records.NAMES.get(rtype, str(rtype))
            by_type[name] = by_type.get(name, 0) + 1
            if rtype == records.FUNC_ID:
                f = records.decode_func_id(flags, p)
                ids[f["id"]] = f["addr"]
            elif rtype == records.FUNC_CALL:
                calls.append(records.decode_func_call(flags, p))
            elif rtype == records.FUNC_COUNT:
                counts.append(records.decode_func_count(flags, p))
        out.append((by_type, ids, calls, counts, len(data)))
    return out


def flat_calls(r, module=None):
    p = r.profile("wall_clock")
    return {f["name"]: f["calls"] for f in p.meta["functions"]
            if module is None or f["module"] == module}


def run_native(kind, *args):
    exe = fixture("calls_compact" if kind == "patched" else "calls_compact_hooked")
    verb = ("instrument", "--min-instructions", "0") if kind == "patched" else ("sample",)
    r = syscope(*verb, "--output-format", "json", *args, "--", exe, N)
    check_eq(r.rc, 0, r.describe())
    check(f"calls_compact ok {N}" in r.out, r.describe())
    return r


def check_every_call_recorded(kind):
    r = run_native(kind, "--no-throttle")
    (by_type, ids, calls, counts, size), = raw_records(r)
    # tick N times, slow 3, run and main once each (the hooks see the same functions)
    check_eq(by_type.get("FUNC_CALL"), N + 5, f"{kind}: one FUNC_CALL per call")
    check_eq((by_type.get("FUNC_ENTER", 0), by_type.get("FUNC_EXIT", 0)), (0, 0),
             f"{kind}: no FUNC_ENTER/EXIT pairs")
    check_eq(len(counts), 0, f"{kind}: nothing throttled with --no-throttle")
    check_eq(len(set(c["id"] for c in calls)), 4, f"{kind}: four functions called")
    check(set(c["id"] for c in calls) <= set(ids), f"{kind}: every id announced by FUNC_ID")
    check_eq(by_type.get("FUNC_ID"), len(ids), f"{kind}: each id announced once")
    func_bytes = 24 * (by_type["FUNC_CALL"] + by_type["FUNC_ID"])
    check(func_bytes / (N + 5) <= 24.01, f"{kind}: record bytes a call {func_bytes / (N + 5)}")
    # the whole raw file: the calls plus a fixed part (header, modules, environment, chunk
    # ends), far less than a call's worth each
    check(size / (N + 5) <= 24.5, f"{kind}: raw file bytes a call: {size / (N + 5):.2f}")
    check_eq(sum(1 for c in calls if c["open"]), 0, f"{kind}: nothing open at a clean exit")
    fl = flat_calls(r)
    check_eq((fl.get("tick"), fl.get("slow"), fl.get("run"), fl.get("main")), (N, 3, 1, 1),
             f"{kind}: exact calls in the profile: {fl}")
    tree = children(children(r.profile("wall_clock").thread_trees()[0])["main"])
    check_eq(count(children(tree["run"])["tick"]), N, f"{kind}: tick under run")
    check_eq(count(children(tree["run"])["slow"]), 3, f"{kind}: slow under run")


def test_patched_calls_are_24_bytes_and_exact():
    check_every_call_recorded("patched")


def test_compiler_hooked_calls_are_24_bytes_and_exact():
    check_every_call_recorded("hooked")


def check_throttled(kind):
    r = run_native(kind)  # throttling is on by default
    (by_type, ids, calls, counts, _size), = raw_records(r)
    check_eq(len(counts), 1, f"{kind}: one function throttled: {counts}")
    tick = counts[0]["id"]
    recorded = sum(1 for c in calls if c["id"] == tick)
    check_eq(recorded, 1001, f"{kind}: tick recorded until past --throttle-calls")
    check_eq(recorded + counts[0]["calls"], N, f"{kind}: recorded and counted calls of tick")
    check_eq(counts[0]["total_ns"], 0, f"{kind}: the counted calls are not timed: {counts[0]}")
    check_eq(by_type.get("FUNC_CALL"), 1001 + 5, f"{kind}: records of every other call")
    fl = flat_calls(r)
    check_eq((fl.get("tick"), fl.get("slow"), fl.get("run")), (N, 3, 1),
             f"{kind}: the throttled function keeps its exact count: {fl}")
    check(f"throttled: 1 function, {N - 1001} calls counted, not recorded one by one "
          f"(tick ({N - 1001}))" in r.err, f"{kind}: the note names it: {r.err}")
    check("throttling: 1 instrumented function called more than 1000 times" in r.err,
          f"{kind}: the runtime's note: {r.err}")


def test_throttled_patched_function_keeps_its_count():
    check_throttled("patched")


def test_throttled_hooked_function_keeps_its_count():
    check_throttled("hooked")


def test_throttle_settings():
    r = run_native("patched", "--throttle-calls", "1000", "--throttle-us", "1000000")
    (_by_type, _ids, calls, counts, _size), = raw_records(r)
    # every function called more than 1000 times at under a second: only tick
    check_eq(len(counts), 1, f"--throttle-calls 1000: {counts}")
    check_eq(sum(1 for c in calls if c["id"] == counts[0]["id"]), 1001, "recorded calls")
    check_eq(flat_calls(r).get("tick"), N, "exact count")
    r = run_native("patched", "--throttle-us", "0")
    (_by_type, _ids, _calls, counts, _size), = raw_records(r)
    check_eq(counts, [], "--throttle-us 0: no call is that short")


def test_open_calls_at_a_crash():
    for kind in ("patched", "hooked"):
        exe = fixture("calls_compact" if kind == "patched" else "calls_compact_hooked")
        verb = ("instrument", "--min-instructions", "0") if kind == "patched" else ("sample",)
        r = syscope(*verb, "--output-format", "json", "--", exe, 1000, "crash")
        check(r.rc != 0, f"{kind}: the fixture crashed: {r.describe()}")
        (by_type, ids, calls, _counts, _size), = raw_records(r)
        check_eq(by_type.get("FUNC_CALL"), 1000 + 3 + 4, f"{kind}: calls, open ones included")
        opened = [c for c in calls if c["open"]]
        check_eq(len(opened), 4, f"{kind}: main, run, outer, inner open at the crash")
        check_eq(len({c["end"] for c in opened}), 1, f"{kind}: all end at the crash")
        starts = [c["start"] for c in opened]
        check_eq(starts, sorted(starts, reverse=True), f"{kind}: written innermost first")
        tree = children(children(r.profile("wall_clock").thread_trees()[0])["main"])
        outer = children(tree["run"])["outer"]
        check_eq((count(outer), count(children(outer)["inner"])), (1, 1),
                 f"{kind}: main > run > outer > inner, as the crash left them")
        check_eq(count(children(tree["run"])["tick"]), 1000, f"{kind}: the calls before")


def test_python_calls_are_24_bytes_and_exact():
    if not os.access(PYTHON, os.X_OK):
        raise harness.Skip(f"{PYTHON} is not installed")
    r = syscope("python", "--no-summary", "--output-format", "json", "--", PYTHON, CALLS, "15")
    check_eq(r.rc, 0, r.describe())
    files = [p for p in r.raw_files() if "-fork" not in os.path.basename(p)]
    main = [x for p, x in zip(r.raw_files(), raw_records(r)) if p in files]
    by_type, _ids, calls, counts, _size = main[0]
    python = [c for c in calls if c["python"]]
    check(len(python) > 1973, f"Python calls as FUNC_CALL records: {len(python)}")
    check_eq(counts, [], "Python tracing is not throttled unless asked")
    fl = flat_calls(r)
    fib = [n for n in fl if n.startswith("fib")]
    check_eq([fl[n] for n in fib], [1973], f"calls of fib in the profile: {fib}")
    r = syscope("python", "--no-summary", "--output-format", "json", "--python-throttle",
                "--python-throttle-calls", "100", "--", PYTHON, CALLS, "15")
    check_eq(r.rc, 0, r.describe())
    fl = flat_calls(r)
    check_eq([fl[n] for n in fl if n.startswith("fib")], [1973],
             f"fib throttled after 100 calls keeps its count: {fl}")
    named = re.compile(r"throttled: 1 function, \d+ calls counted, not recorded one by one "
                       r"\(fib \(\d+\)\)")
    check(named.search(r.err) or any(
        named.search(n.get("text", "")) for n in r.metadata().get("notes", [])),
        f"a note names fib: {r.err}")


if __name__ == "__main__":
    harness.main(globals())
