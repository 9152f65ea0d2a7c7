"""The runtime's clock: the timestamps of records agree with CLOCK_MONOTONIC as the program
itself reads it, with the TSC clock (steered every 100 ms) as with clock_gettime, and never
run backwards on a thread."""
import struct

import harness
from harness import check, check_eq, fixture, syscope

import rawdump
import records

MARK = records.MARK
# The TSC clock follows CLOCK_MONOTONIC within the jitter of reading both (tens of ns); the
# bound leaves room for a steering period measured while the machine was very busy.
TSC_TOLERANCE_NS = 20000


def marks_by_thread(r):
    got = {}
    for path in r.raw_files():
        for tid, rtype, _flags, payload in rawdump.records(open(path, "rb").read()):
            if rtype == MARK:
                got.setdefault(tid, []).append(struct.unpack_from("<Q", payload, 0)[0])
    return got


def readings_by_thread(out):
    got = {}
    for line in out.splitlines():
        tid, before, after = (int(x) for x in line.split())
        got.setdefault(tid, []).append((before, after))
    return got


def check_clock(clock, tolerance):
    r = syscope("run", "--no-summary", "--output-format", "json", "--", fixture("clock_marks"),
                "400", env={"SYSCOPE_CLOCK": clock})
    check_eq(r.rc, 0, r.describe())
    marks, readings = marks_by_thread(r), readings_by_thread(r.out)
    check_eq(sorted(marks), sorted(readings), "threads with marks")
    worst = 0
    for tid, stamps in marks.items():
        check_eq(len(stamps), len(readings[tid]), f"marks of thread {tid}")
        check(len(stamps) > 100, f"too few marks to cover the clock's periods: {len(stamps)}")
        check(all(a <= b for a, b in zip(stamps, stamps[1:])),
              f"timestamps of thread {tid} ran backwards")
        for ts, (before, after) in zip(stamps, readings[tid]):
            worst = max(worst, before - ts, ts - after)
            check(before - tolerance <= ts <= after + tolerance,
                  f"clock {clock}: mark at {ts} outside [{before}, {after}] "
                  f"+- {tolerance} ns")
    print(f"clock {clock}: worst distance from the program's readings {max(worst, 0)} ns")


def test_monotonic_clock_is_clock_gettime():
    check_clock("monotonic", 0)


def test_tsc_clock_follows_clock_monotonic():
    check_clock("auto", TSC_TOLERANCE_NS)


harness.main(globals())
