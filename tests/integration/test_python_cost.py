"""syscope python's cost (issue 15, "Performance"): by default a traced function called often
for little time is throttled: its later calls are only counted (FUNC_COUNT, untimed; on
3.12+ sys.monitoring stops reporting its returns once none of its calls is in progress).
With --python-throttle-timed its short calls are timed and aggregated in the process
(FUNC_STATS) and only its calls of --throttle-us or longer recorded one by one;
--no-python-throttle records every call. Either way the wall_clock profile has each
function's exact number of calls, and its self times add up; timed, its call statistics
(mean, min, max) come out right too. /usr/bin/python3 (Debian
12's 3.11, PEP 523) always; the pyenv builds of 3.10, 3.12 and 3.13 (sys.monitoring on
3.12+) where this machine has them."""
import os
import re
import struct

import harness
from harness import Skip, check, check_eq, syscope

import rawdump
import records

PYTHON = "/usr/bin/python3"
PYENV = "/root/.pyenv/versions"
EXTRA_VERSIONS = ("3.10.13", "3.12.1", "3.13.0")
FIXTURE = os.path.join(harness.SOURCE, "tests", "programs", "python", "cost_calls.py")
COUNTED = os.path.join(harness.SOURCE, "tests", "programs", "python", "cost_counted.py")
FORK = os.path.join(harness.SOURCE, "tests", "programs", "python", "cost_fork.py")
COUNTED_KNOWN = {"tiny": 30000, "raiser": 30000, "rec": 2000 * 11, "after": 1, "main": 1,
                 "<module>": 1}
FUNC_PYTHON = 0x2
FIB20 = 21891
KNOWN = {"fib": FIB20, "tiny": 30000, "sometimes_slow": 20000, "main": 1, "<module>": 1}
SLOW_S = 0.02


def need(python):
    if os.access(python, os.X_OK):
        return
    if python == PYTHON and os.environ.get("CI") == "true":
        raise AssertionError(f"{python} is missing (the Makefile's TEST_PACKAGES has python3)")
    raise Skip(f"{python} is not installed")


def interpreters():
    """Debian's, then the pyenv ones present (optional extras: CI has none)."""
    need(PYTHON)
    return [PYTHON] + [p for p in (f"{PYENV}/{v}/bin/python3" for v in EXTRA_VERSIONS)
                       if os.access(p, os.X_OK)]


def run(python, *opts, args=("20",), rc=0, script=FIXTURE,
        out=("fib 6765", "sum 650005000")):
    r = syscope("python", "--no-summary", "--output-format", "json", *opts,
                "--interpreter", python, script, *args)
    check_eq(r.rc, rc, r.describe())
    check(all(o in r.out for o in out), r.out)
    return r


def notes_of(r):
    return r.err + " ".join(n.get("text", "") for n in r.metadata().get("notes", []))


class Raw:
    """The main raw file's Python records: whole calls and aggregates, by qualname."""

    def __init__(self, r):
        files = [p for p in r.raw_files() if "-fork" not in os.path.basename(p)]
        check_eq(len(files), 1, f"one raw file: {files}")
        names, calls, stats, counts = {}, [], [], []
        for _tid, rtype, flags, p in rawdump.records(open(files[0], "rb").read()):
            if rtype == records.PY_CODE:
                code = records.decode_py_code(p)
                names[code["id"]] = code["qualname"]
            elif rtype == records.FUNC_CALL and flags & FUNC_PYTHON:
                calls.append(records.decode_func_call(flags, p))
            elif rtype in (records.FUNC_ENTER, records.FUNC_EXIT) and flags & FUNC_PYTHON:
                cid = (struct.unpack_from("<QQ", p, 0)[1] >> 32) & 0x7fffffff
                calls.append({"id": cid, "pair": True})
            elif rtype == records.FUNC_STATS:
                stats.append(records.decode_func_stats(flags, p))
            elif rtype == records.FUNC_COUNT:
                counts.append(records.decode_func_count(flags, p))
        self.names = set(names.values())
        self.recorded, self.aggregated, self.slow, self.counted = {}, {}, {}, {}
        for c in counts:
            check(c["python"] and c["untimed"] and c["total_ns"] == 0,
                  f"FUNC_COUNT of Python calls counted, not timed: {c}")
            name = names.get(c["id"], "?")
            self.counted[name] = self.counted.get(name, 0) + c["calls"]
        for c in calls:
            name = names.get(c["id"], "?")
            self.recorded[name] = self.recorded.get(name, 0) + (0.5 if c.get("pair") else 1)
            if "end" in c and c["end"] - c["start"] >= SLOW_S * 1e9:
                self.slow[name] = self.slow.get(name, 0) + 1
        for s in stats:
            check(s["python"], f"FUNC_STATS with SC_FUNC_PYTHON: {s}")
            name = names.get(s["id"], "?")
            self.aggregated[name] = self.aggregated.get(name, 0) + s["calls"]


def check_profile(r, what):
    """Exact calls of the known functions; sometimes_slow's max is its 20 ms call, its min
    one of its fast ones; the functions' self times add up to the time in regions."""
    p = r.profile("wall_clock")
    for name, n in KNOWN.items():
        f = p.function(name)
        check(f, f"{what}: {name} in the profile: {p.function_names()}")
        check_eq(f["calls"], n, f"{what}: calls of {name}")
    slow = p.function("sometimes_slow")["call_stats"]
    check_eq(slow["count"], 20000, f"{what}: sometimes_slow's calls, none inside another")
    check(SLOW_S <= slow["max"] < 1.0, f"{what}: sometimes_slow's max is the sleep: {slow}")
    check(slow["min"] < SLOW_S / 20, f"{what}: its min is a fast call: {slow}")
    check(slow["min"] <= slow["mean"] <= slow["max"], f"{what}: min <= mean <= max: {slow}")
    check(SLOW_S / 20000 <= slow["mean"], f"{what}: the sleep is in the mean: {slow}")
    tiny = p.function("tiny")["call_stats"]
    check_eq(tiny["count"], 30000, f"{what}: tiny's calls")
    check(0 < tiny["min"] <= tiny["mean"] <= tiny["max"], f"{what}: tiny's stats: {tiny}")
    fib = p.function("fib")["call_stats"]
    check_eq(fib["count"], 1, f"{what}: fib's outermost call is its one non-recursive call")
    main = p.function("main")
    self_sum = sum(f["exclusive"] for f in p.meta["functions"])
    outer = p.function("<module>")["inclusive"]
    check(abs(self_sum - outer) <= 0.02 * outer + 1e-4,
          f"{what}: self times add up to the script's time: {self_sum} vs {outer}")
    check(main["exclusive"] < main["inclusive"] - SLOW_S,
          f"{what}: main's self time leaves out the calls it made: {main}")
    return p


def test_timed_aggregates_short_calls_exactly():
    for python in interpreters():
        r = run(python, "--python-throttle-timed")
        raw = Raw(r)
        check_eq(raw.counted, {}, f"{python}: nothing counted untimed")
        for name in ("fib", "tiny", "sometimes_slow"):
            # fib's mean (it holds its callees) may pass 10 us on a loaded machine
            check(name == "fib" or raw.aggregated.get(name, 0) > 0,
                  f"{python}: {name} aggregated: {raw.aggregated}")
            check_eq(raw.recorded.get(name, 0) + raw.aggregated.get(name, 0), KNOWN[name],
                     f"{python}: {name}'s recorded and aggregated calls")
            check(raw.recorded[name] > 10000,
                  f"{python}: {name}'s first 10 000 calls recorded: {raw.recorded}")
        # at least the sleeping one (a loaded machine may hold another that long)
        check(raw.slow.get("sometimes_slow", 0) >= 1,
              f"{python}: the slow call is recorded one by one: {raw.slow}")
        check_eq(raw.recorded.get("main"), 1, f"{python}: main recorded")
        check_profile(r, f"{python} --python-throttle-timed")
        notes = notes_of(r)
        m = re.search(r"throttled: ([23]) functions, \d+ calls counted, not recorded one by "
                      r"one \(([^)]*\(\d+\)(, [^)]*\(\d+\))*)\)", notes)
        check(m and "tiny (" in m.group(2) and "sometimes_slow (" in m.group(2),
              f"{python}: a note names them: {notes}")


def test_trace_all_records_every_call():
    for python in interpreters():
        r = run(python, "--no-python-throttle")
        raw = Raw(r)
        check_eq(raw.aggregated, {}, f"{python}: nothing aggregated")
        for name, n in KNOWN.items():
            check_eq(raw.recorded.get(name), n, f"{python}: every call of {name} recorded")
        check_profile(r, f"{python} --no-python-throttle")


def test_slow_call_aggregated_keeps_max():
    """With --throttle-us above the sleep, the slow call is aggregated too: the maximum
    comes from the process's own statistics."""
    for python in interpreters():
        r = run(python, "--python-throttle-timed", "--throttle-us", "1000000",
                "--python-throttle-calls", "100")
        raw = Raw(r)
        check_eq(raw.slow.get("sometimes_slow"), None, f"{python}: the slow call aggregated")
        for name in ("tiny", "sometimes_slow"):
            # the first 101, and any call a loaded machine held for a second
            check(101 <= raw.recorded.get(name, 0) < 110,
                  f"{python}: {name}'s first 101 calls recorded: {raw.recorded}")
            check_eq(raw.recorded[name] + raw.aggregated.get(name, 0), KNOWN[name],
                     f"{python}: {name}'s recorded and aggregated calls")
        check_profile(r, f"{python} --throttle-us 1000000")


def test_kill_keeps_aggregated_calls():
    """The slots are written every second while the program runs: a kill -9 after a pause
    leaves tiny's and sometimes_slow's exact counts in the profile."""
    python = interpreters()[0]
    r = run(python, args=("20", "kill"), rc=128 + 9)
    raw = Raw(r)
    check(raw.counted.get("tiny", 0) > 0, f"tiny counted before the kill: {raw.counted}")
    calls = harness.calls_of(r.profile("wall_clock"))
    for name in ("fib", "tiny", "sometimes_slow"):
        check_eq(calls.get(name), KNOWN[name], f"calls of {name} after kill -9: {calls}")
    check_eq(calls.get("pause"), 1, f"the pause: {calls}")


def test_default_counts_hot_calls_exactly():
    """By default tiny and sometimes_slow are only counted after their first 10 001 calls:
    exact calls in the profile, call_stats of the timed calls only (the choice shows: with
    --python-throttle-timed call_stats has all 30 000), self times adding up."""
    for python in interpreters():
        r = run(python)
        raw = Raw(r)
        for name in ("tiny", "sometimes_slow"):
            check(raw.counted.get(name, 0) > 0, f"{python}: {name} counted: {raw.counted}")
            check(raw.recorded.get(name, 0) > 10000,
                  f"{python}: {name}'s first 10 000 calls recorded: {raw.recorded}")
        for name in ("fib", "tiny", "sometimes_slow"):
            got = (raw.recorded.get(name, 0) + raw.aggregated.get(name, 0) +
                   raw.counted.get(name, 0))
            check_eq(got, KNOWN[name], f"{python}: {name}'s recorded, aggregated and counted")
        p = r.profile("wall_clock")
        for name, n in KNOWN.items():
            check_eq(p.function(name)["calls"], n, f"{python}: calls of {name}")
        tiny = p.function("tiny")["call_stats"]
        timed = raw.recorded["tiny"] + raw.aggregated.get("tiny", 0)
        check_eq(tiny["count"], timed, f"{python}: tiny's call_stats are its timed calls")
        check(0 < tiny["min"] <= tiny["mean"] <= tiny["max"], f"{python}: tiny's stats: {tiny}")
        check_eq(p.function("fib")["call_stats"]["count"], 1, f"{python}: fib's outermost call")
        self_sum = sum(f["exclusive"] for f in p.meta["functions"])
        outer = p.function("<module>")["inclusive"]
        check(abs(self_sum - outer) <= 0.02 * outer + 1e-4,
              f"{python}: self times add up to the script's time: {self_sum} vs {outer}")
        notes = notes_of(r)
        check("only counted from then on, not timed" in notes, f"{python}: said: {notes}")
        timed_run = run(python, "--python-throttle-timed").profile("wall_clock")
        check_eq(timed_run.function("tiny")["call_stats"]["count"], 30000,
                 f"{python}: --python-throttle-timed times every call of tiny")


def test_counted_calls_pair_exactly():
    """Functions throttled while calls of them are in progress (rec, recursive), left by an
    exception (raiser) or by yield (gen): every count stays exact, and so do the calls
    after them (after, main)."""
    for python in interpreters():
        # --throttle-us 1000: throttled whatever the load (rec's calls hold their callees)
        r = run(python, "--throttle-us", "1000", script=COUNTED, args=(),
                out=("caught 30 sum 1799525031",))
        raw = Raw(r)
        for name in ("tiny", "raiser", "rec"):
            check(raw.counted.get(name, 0) > 0, f"{python}: {name} counted: {raw.counted}")
        p = r.profile("wall_clock")
        for name, n in {**COUNTED_KNOWN, "skipped": 30000}.items():
            check_eq(p.function(name)["calls"], n, f"{python}: calls of {name}")
        check(p.function("gen")["calls"] >= 30000, f"{python}: gen's resumptions")
        main = p.function("main")
        check_eq(main["call_stats"]["count"], 1, f"{python}: main's one call")
        check(main["inclusive"] >= p.function("<module>")["inclusive"] * 0.9,
              f"{python}: main holds the script's time: {main}")


def test_excluded_function_recorded_nowhere():
    """-E skipped: no code record, call, count or aggregate of it, and the others exact."""
    for python in interpreters():
        r = run(python, "-E", "^skipped$", script=COUNTED, args=(),
                out=("caught 30 sum 1799525031",))
        raw = Raw(r)
        check("skipped" not in raw.names, f"{python}: no PY_CODE of skipped: {raw.names}")
        for what in (raw.recorded, raw.aggregated, raw.counted):
            check("skipped" not in what and "?" not in what, f"{python}: {what}")
        p = r.profile("wall_clock")
        check(p.function("skipped") is None, f"{python}: skipped: {p.function_names()}")
        for name, n in COUNTED_KNOWN.items():
            check_eq(p.function(name)["calls"], n, f"{python}: calls of {name}")


def test_recursive_function_throttled_inside_its_calls():
    """fib throttled deep inside its outermost call (--throttle-us 1000: whatever the load):
    exact calls, one outermost call (the second fib is counted from its start), whose time
    is the program's own measure of it, without the sleep and the loop after it."""
    script = os.path.join(harness.SOURCE, "tests", "programs", "python", "cost_orphans.py")
    for python in interpreters():
        r = run(python, "--throttle-us", "1000", script=script, args=(), out=("fib-seconds=",))
        own = float(re.search(r"fib-seconds=([\d.]+)", r.out).group(1))
        raw = Raw(r)
        check(raw.counted.get("fib", 0) > 40000, f"{python}: fib counted: {raw.counted}")
        p = r.profile("wall_clock")
        fib = p.function("fib")
        check_eq(fib["calls"], 57313 + 1973, f"{python}: calls of fib")
        check_eq(fib["call_stats"]["count"], 1, f"{python}: fib's one timed outermost call")
        check(0.5 * own <= fib["inclusive"] <= own + 0.1,
              f"{python}: fib's time is its own ({own} s), not the sleep's: {fib}")
        check(p.function("main")["exclusive"] >= 0.2, f"{python}: the sleep is main's")


def test_fork_child_after_returns_turned_off_pairs_its_calls():
    """tiny is throttled in the parent (on 3.12+ its returns turned off there); a fork child
    inherits those code objects, starts its slots afresh and times tiny again, so it needs
    tiny's returns back: the child's profile has exactly 30 000 tiny, 200 leaf and one
    child_main, leaf under child_main (not paired with tiny's entries)."""
    for python in interpreters():
        r = run(python, script=FORK, args=(), out=("child 450054800", "child status 0"))
        child = [pid for pid in r.pids() if pid != r.main_pid()]
        check_eq(len(child), 1, f"{python}: one child: {r.pids()}")
        p = r.profile("wall_clock", pid=child[0])
        for name, n in (("tiny", 30000), ("leaf", 200), ("child_main", 1)):
            f = p.function(name)
            check(f is not None, f"{python}: {name} in the child's profile: {p.function_names()}")
            check_eq(f["calls"], n, f"{python}: the child's calls of {name}")
        check(p.function("leaf")["inclusive"] <= p.function("child_main")["inclusive"],
              f"{python}: leaf inside child_main")


def test_mutual_recursion_throttled_keeps_outer_call():
    """a <-> b, both throttled inside the outermost a (--throttle-us 1000: whatever the load):
    exact calls of each; the outermost a is a's one timed outermost call and holds its own
    spin after the recursion: under sys.monitoring a's code is watched for b's orphans while
    a's own orphans run it, and an instruction of a running orphan must not end it."""
    script = os.path.join(harness.SOURCE, "tests", "programs", "python", "cost_mutual.py")
    for python in interpreters():
        r = run(python, "--throttle-us", "1000", script=script, args=(), out=("r=46368",))
        own = float(re.search(r"a-seconds=([\d.]+)", r.out).group(1))
        raw = Raw(r)
        for name in ("a", "b"):
            check(raw.counted.get(name, 0) > 40000, f"{python}: {name} counted: {raw.counted}")
        p = r.profile("wall_clock")
        check_eq(p.function("a")["calls"], 75025, f"{python}: calls of a")
        check_eq(p.function("b")["calls"], 75024, f"{python}: calls of b")
        a = p.function("a")
        check_eq(a["call_stats"]["count"], 1, f"{python}: a's one timed outermost call")
        check(0.8 * own <= a["inclusive"] <= own + 0.1,
              f"{python}: the outermost a lasts as long as the program measured ({own} s): {a}")
        check(p.function("b")["inclusive"] <= a["inclusive"],
              f"{python}: b's calls are inside a's: {p.function('b')}")


def test_caller_watched_twice_ends_orphans_on_time():
    """rec1 then rec2 throttled inside their calls, both called from outer, rec2 from a call
    site outer already ran while watched: rec2's outermost call ends at its return, not
    after outer's spin that follows it (its time is the program's measure of it)."""
    script = os.path.join(harness.SOURCE, "tests", "programs", "python", "cost_rewatch.py")
    for python in interpreters():
        r = run(python, "--throttle-us", "1000", script=script, args=(),
                out=("rec2-seconds=",))
        own = float(re.search(r"rec2-seconds=([\d.]+)", r.out).group(1))
        spun = float(re.search(r"spin-seconds=([\d.]+)", r.out).group(1))
        raw = Raw(r)
        for name in ("rec1", "rec2"):
            check(raw.counted.get(name, 0) > 40000, f"{python}: {name} counted: {raw.counted}")
        p = r.profile("wall_clock")
        check_eq(p.function("rec1")["calls"], 57313, f"{python}: calls of rec1")
        check_eq(p.function("rec2")["calls"], 57313 + 15, f"{python}: calls of rec2")
        rec2 = p.function("rec2")
        check_eq(rec2["call_stats"]["count"], 2, f"{python}: rec2's two outermost calls")
        check(0.5 * own <= rec2["inclusive"] < own + spun / 2,
              f"{python}: rec2's time is its own ({own} s), not the spin's ({spun} s): {rec2}")
        check(p.function("outer")["exclusive"] >= spun,
              f"{python}: the spins are outer's own time: {p.function('outer')}")


def test_recursive_chain_throttled_by_its_own_time():
    """down(199) 500 times at the default rule: a call's inclusive time averages ~100 calls'
    (its callees'), its own time one call's, so down is throttled (its own time, each moment
    counted once, is what the rule measures) and its calls stay exact."""
    script = os.path.join(harness.SOURCE, "tests", "programs", "python", "cost_chain.py")
    for python in interpreters():
        r = run(python, script=script, args=(), out=("sum 99500",))
        raw = Raw(r)
        check(raw.counted.get("down", 0) > 50000, f"{python}: down counted: {raw.counted}")
        check(10000 < raw.recorded.get("down", 0) < 50000,
              f"{python}: down's first calls recorded: {raw.recorded}")
        got = raw.recorded["down"] + raw.aggregated.get("down", 0) + raw.counted["down"]
        check_eq(got, 100000, f"{python}: down's recorded, aggregated and counted calls")
        p = r.profile("wall_clock")
        check_eq(p.function("down")["calls"], 100000, f"{python}: calls of down")
        check_eq(p.function("main")["calls"], 1, f"{python}: calls of main")
        check("only counted from then on, not timed" in notes_of(r), f"{python}: said so")


if __name__ == "__main__":
    harness.main(globals())
