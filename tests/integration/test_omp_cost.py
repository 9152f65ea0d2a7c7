"""OpenMP constructs in one record each (issue 16's cost): a construct whose arguments are
all numbers is one OMP_REGION record, written at its begin, its end stored into it when it
ends (24 bytes, holding the first argument if it fits 32 bits or the first two if both fit
16, and 8 for each other; no
second record; a parallel region's record also holds the implicit task of the thread that
began it, which has none of its own); only when the record has left the thread's current chunk meanwhile does a
REGION_END end it. Such a record comes before what ran inside it, so the readers nest by time: the counts of the profile stay exact, nested
parallel regions stay nested in the Perfetto trace and in rocpd, and a region still open
when the process ends (exit or abort inside it) is shown unterminated, not lost.

Regions ending while another thread writes out every thread's records at the exit keep
their ends (recorder.c: a flush claims its bytes only if no end was stored meanwhile).

Fixtures: tests/programs/omp_team.c (its counts: test_openmp.py), omp_nested.c,
omp_exit.c; each built with gcc (libgomp's wrappers) and clang (libomp's OMPT)."""
import csv
import os
import sqlite3
import struct

import harness
from harness import Skip, check, check_eq, fixture, syscope

import pftrace
import rawdump
import records
from rocpd_checks import rows

QUIET = {"OMP_WAIT_POLICY": "passive"}  # more threads than cores: do not spin
TEAM, ROUNDS, TASKS = 4, 3, 8
REGIONS = ROUNDS + 3  # omp_team.c's parallel regions

# omp_team.c's constructs as OMP_REGION records: (name, record size) -> count. The master's
# implicit task of each parallel region is held by the region's record (size 0 here).
COMPACT = {("omp parallel", 32): REGIONS, ("omp implicit task", 24): REGIONS * (TEAM - 1),
           ("omp implicit task", 0): REGIONS,
           ("omp implicit barrier", 24): REGIONS * TEAM, ("omp barrier", 24): ROUNDS * TEAM,
           ("omp task", 24): TASKS, ("omp taskwait", 24): 1, ("omp critical", 24): TEAM,
           ("omp critical wait", 24): TEAM, ("omp lock", 24): TEAM, ("omp lock wait", 24): TEAM}


def program(name, compiler):
    path = fixture(f"{name}_{compiler}")
    if not os.path.exists(path):
        why = f"{path} not built (clang -fopenmp needs clang and libomp-dev)"
        if os.environ.get("CI") == "true":
            raise AssertionError(why)
        raise Skip(why)
    return path


def run(name, compiler, *formats, args=()):
    return syscope("sample", "--parallel=openmp", "--output-format", *formats, "--",
                   program(name, compiler), *args, env=QUIET)


def raw_openmp(r):
    """OMP_REGION records as (tid, name, size, ts, end), the number of openmp REGION_BEGIN
    records, and the regions no end closed: (tid, name) of the OMP_REGIONs without one in
    the record and the REGION_BEGINs that no REGION_END of their thread followed."""
    compact, full, left = [], 0, []
    for path in r.raw_files():
        stacks = {}
        with open(path, "rb") as f:
            for tid, rtype, flags, payload in rawdump.records(f.read()):
                stack = stacks.setdefault(tid, [])
                if rtype == records.OMP_REGION:
                    # A task its parallel's record holds: size 0, no record of its own.
                    for i, (ts, end, name, _args) in enumerate(
                            records.decode_omp_regions(flags, payload)):
                        compact.append((tid, name, 0 if i else len(payload) + 8, ts, end))
                        if not end:
                            stack.append((tid, name))
                elif rtype == records.REGION_BEGIN:
                    full += b"\0openmp\0" in bytes(payload[32:])
                    stack.append((tid, bytes(payload[32:]).split(b"\0")[0].decode()))
                elif rtype == records.REGION_END and stack:
                    stack.pop()
        for stack in stacks.values():
            left += stack
    return compact, full, left


def check_one_record_each(compiler):
    r = run("omp_team", compiler, "json")
    check_eq(r.rc, 0, r.describe())
    compact, full, left = raw_openmp(r)
    sizes = {}
    for _tid, name, size, _ts, _end in compact:
        sizes[(name, size)] = sizes.get((name, size), 0) + 1
    want = dict(COMPACT)
    if compiler == "clang":  # OMPT: the loops' iterations are numbers; a single construct
        want.update({("omp loop", 24): TEAM, ("omp single", 24): 1})
    check_eq(sizes, want, f"{compiler}: one OMP_REGION per construct, by name and size")
    check_eq(full, 0 if compiler == "clang" else TEAM,
             f"{compiler}: REGION_BEGIN only for libgomp's loops (a schedule name)")
    # libomp reports a worker's last implicit barrier and task ends only at the next fork.
    never = sorted([("omp implicit task",), ("omp implicit barrier",)] * (TEAM - 1))
    check_eq(sorted((name,) for _tid, name in left), never if compiler == "clang" else [],
             f"{compiler}: every other region ended, in its record or by a REGION_END")
    ended_apart = len([x for x in compact if not x[4]]) - len(left)
    check(ended_apart <= 2, f"{compiler}: nearly every end stored in its record: "
          f"{ended_apart} of {len(compact)} not")
    check(all(end >= ts for _t, _n, _s, ts, end in compact if end), "no end before its begin")
    funcs = harness.calls_of(r.profile("wall_clock"))
    parallel = sum(c for n, c in funcs.items() if n.startswith("omp parallel @ main"))
    got = {"omp parallel": parallel}
    got.update({n: funcs.get(n) for n in ("omp implicit task", "omp barrier",
                                          "omp implicit barrier", "omp loop", "omp task",
                                          "omp taskwait", "omp critical")})
    check_eq(got, {"omp parallel": REGIONS, "omp implicit task": REGIONS * TEAM,
                   "omp barrier": ROUNDS * TEAM, "omp implicit barrier": REGIONS * TEAM,
                   "omp loop": TEAM, "omp task": TASKS, "omp taskwait": 1,
                   "omp critical": TEAM},
             f"{compiler}: calls in the wall_clock profile")


def test_one_record_per_construct_gcc():
    check_one_record_each("gcc")


def test_one_record_per_construct_clang():
    check_one_record_each("clang")


def check_implicit_task_args(compiler):
    """An implicit task's member id and team size share its record's spare half word (both
    fit 16 bits): the reader gives them back as the arguments, every member of every team."""
    r = run("omp_team", compiler, "csv")
    check_eq(r.rc, 0, r.describe())
    got = {}
    with open(r.path(f"regions-{r.main_pid()}.csv")) as f:
        for row in csv.reader(f):
            if len(row) > 2 and row[2] == "omp implicit task":
                got[row[-1]] = got.get(row[-1], 0) + 1
    check_eq(got, {f"thread={i};team={TEAM}": REGIONS for i in range(TEAM)},
             f"{compiler}: implicit tasks' arguments in regions.csv")


def test_implicit_task_args_gcc():
    check_implicit_task_args("gcc")


def test_implicit_task_args_clang():
    check_implicit_task_args("clang")


def inside(a, b):
    """Interval a (start, end) within b."""
    return b[0] <= a[0] and a[1] <= b[1]


def around(a, b):
    """Interval b holds a and is not a's own: the master's implicit task has its parallel
    region's times (omp_record.c: task_of_own_region)."""
    return inside(a, b) and tuple(a) != tuple(b)


def check_nested(compiler):
    r = run("omp_nested", compiler, "pftrace", "rocpd", "json")
    check_eq(r.rc, 0, r.describe())
    check("inner members 4" in r.out, r.describe())
    pid = r.main_pid()
    with open(r.path(f"perfetto-trace-{pid}.pftrace"), "rb") as f:
        t = pftrace.Trace(f.read())
    check_eq(t.errors, [], f"{compiler}: valid trace, slices nested per track")
    slices = [(t.thread_of(s[0]), s[1], s[3], s[4]) for s in t.slices if s[2] == "openmp"]
    db = sqlite3.connect(r.path(f"rocpd-{pid}.db"))
    regions = rows(db, "SELECT tid, name, start, end FROM regions WHERE category = 'OPENMP_API'")
    for what, got in (("Perfetto", slices), ("rocpd", regions)):
        par = [x for x in got if x[1].startswith("omp parallel")]
        tasks = [x for x in got if x[1] == "omp implicit task"]
        check_eq((len(par), len(tasks)), (3, 6), f"{compiler}, {what}: parallel regions, tasks")
        outer = [p for p in par if not any(around(p[2:], x[2:]) for x in tasks if x[0] == p[0])]
        check_eq(len(outer), 1, f"{compiler}, {what}: one outer region: {par}")
        inner = [p for p in par if p not in outer]
        for p in inner:
            # (begun in the outer region: libomp ends a worker's last task only at exit)
            outer_task = [x for x in tasks if x[0] == p[0] and around(p[2:], x[2:])
                          and outer[0][2] <= x[2] <= outer[0][3]]
            check(outer_task, f"{compiler}, {what}: inner region {p} inside its thread's "
                  f"implicit task of the outer team: {tasks}")
            check_eq(len([b for b in got if b[1] == "omp barrier" and b[0] == p[0]
                          and inside(b[2:], p[2:])]),
                     1, f"{compiler}, {what}: the barrier of the inner team's master inside it")
        check_eq(len([b for b in got if b[1] == "omp barrier"]), 4, f"{compiler}, {what}: "
                 "a barrier per member of the inner teams")
    trees = r.profile("wall_clock").thread_trees()
    main = harness.children(trees[0])
    outer = [n for n in main if n.startswith("omp parallel")]
    check_eq(len(outer), 1, f"{compiler}: the outer region at the master's root: {list(main)}")
    task = harness.children(main[outer[0]])["omp implicit task"]
    inner = [n for n in harness.children(task) if n.startswith("omp parallel")]
    check_eq(len(inner), 1, f"{compiler}: the master's inner region inside its task")


def test_nested_regions_stay_nested_gcc():
    check_nested("gcc")


def test_nested_regions_stay_nested_clang():
    check_nested("clang")


def check_open_at_end(compiler, how):
    r = run("omp_exit", compiler, "rocpd", "json", args=(how,))
    check_eq(r.rc, 3 if how == "exit" else 128 + 6, r.describe())
    check("members 6" in r.out, r.describe())
    _compact, _full, left = raw_openmp(r)
    main = [name for tid, name in left if tid == r.main_pid()]
    check_eq(main, ["omp parallel", "omp implicit task"],
             f"{compiler}, {how}: the last region and its task left without an end")
    db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
    got = rows(db, "SELECT name, extdata LIKE '%unterminated%' FROM regions "
                   "WHERE category = 'OPENMP_API' AND (name LIKE 'omp parallel%' "
                   "OR name = 'omp implicit task')")
    par = [u for n, u in got if n.startswith("omp parallel")]
    tasks = [u for n, u in got if n == "omp implicit task"]
    check_eq((len(par), sum(par)), (4, 1),
             f"{compiler}, {how}: 4 parallel regions, the one left by {how} unterminated")
    # libomp reports a worker's implicit task end only at the next fork: its last one too
    # stays open, as without this change.
    check_eq((len(tasks), sum(tasks)), (7, 2 if compiler == "clang" else 1),
             f"{compiler}, {how}: 7 implicit tasks, the last one unterminated")
    funcs = harness.calls_of(r.profile("wall_clock"))
    check_eq(sum(c for n, c in funcs.items() if n.startswith("omp parallel")), 4,
             f"{compiler}, {how}: the open region counted in the profile too")


def test_region_open_at_exit_shown_unterminated():
    for compiler in ("gcc", "clang"):
        check_open_at_end(compiler, "exit")


def test_region_open_at_abort_shown_unterminated():
    for compiler in ("gcc", "clang"):
        check_open_at_end(compiler, "abort")


def check_longer_than_chunks(compiler):
    # 16 KiB chunks: each member's 3000 barriers (72 KB of records) fill several while the
    # region is open; its record's buffer is reused meanwhile, so its end is a REGION_END.
    r = syscope("sample", "--parallel=openmp", "--buffer-chunk-kb", "16", "--output-format",
                "json", "--", program("omp_exit", compiler), "long", env=QUIET)
    check_eq(r.rc, 0, r.describe())
    check("members 2 barriers 3000" in r.out, r.describe())
    compact, _full, left = raw_openmp(r)
    names = {}
    for _tid, name, _size, _ts, _end in compact:
        names[name] = names.get(name, 0) + 1
    check_eq({n: names.get(n) for n in ("omp parallel", "omp implicit task", "omp barrier")},
             {"omp parallel": 1, "omp implicit task": 2, "omp barrier": 6000},
             f"{compiler}: the records, none damaged by an end stored into a reused buffer")
    main = [x for x in compact if x[0] == r.main_pid() and x[1] in ("omp parallel",
                                                                     "omp implicit task")]
    check_eq([x[4] for x in main], [0, 0], f"{compiler}: no end in the long region's records")
    check_eq([n for tid, n in left if tid == r.main_pid()], [],
             f"{compiler}: the long region and the master's task ended by REGION_ENDs")
    trees = r.profile("wall_clock").thread_trees()
    par = [c for n, c in harness.children(trees[0]).items() if n.startswith("omp parallel")]
    check_eq(len(par), 1, f"{compiler}: the region at the master's root")
    task = harness.children(par[0])["omp implicit task"]
    check_eq(harness.count(harness.children(task)["omp barrier"]), 3000,
             f"{compiler}: the master's barriers inside its task")
    funcs = harness.calls_of(r.profile("wall_clock"))
    check_eq(funcs.get("omp barrier"), 6000, f"{compiler}: every barrier in the profile")


def test_region_longer_than_chunks_ends_apart():
    for compiler in ("gcc", "clang"):
        check_longer_than_chunks(compiler)


def omp_records_in_order(r):
    """Per thread, its OpenMP regions in record order as [name, ended], an OMP_REGION ended
    in its record or by a later REGION_END of its thread."""
    threads = {}
    for path in r.raw_files():
        stacks = {}
        with open(path, "rb") as f:
            for tid, rtype, flags, payload in rawdump.records(f.read()):
                got, stack = threads.setdefault(tid, []), stacks.setdefault(tid, [])
                if rtype == records.OMP_REGION:
                    for _ts, end, name, _args in records.decode_omp_regions(flags, payload):
                        got.append([name, bool(end)])
                        if not end:
                            stack.append(got[-1])
                elif rtype == records.REGION_END and stack:
                    stack.pop()[1] = True
    return threads


def check_flush_at_exit(compiler):
    # The second thread's critical sections end while the first thread's exit writes out
    # every thread's records: none may lose its end but those still open at that moment.
    r = run("omp_exit", compiler, "json", args=("flush",))
    check_eq(r.rc, 0, r.describe())
    check("flush after 20000" in r.out, r.describe())
    threads = omp_records_in_order(r)
    main = threads.pop(r.main_pid())
    check_eq([n for n, ended in main if not ended], ["omp parallel", "omp implicit task"],
             f"{compiler}: the region the exit left")
    check_eq(len(threads), 1, f"{compiler}: one other thread: {list(threads)}")
    other = next(iter(threads.values()))
    crit = [ended for n, ended in other if n == "omp critical"]
    check(len(crit) >= 20000, f"{compiler}: {len(crit)} critical sections recorded")
    check_eq(other[0], ["omp implicit task", False], f"{compiler}: the member's task, open")
    late = [(i, n) for i, (n, ended) in enumerate(other[1:], 1) if not ended]
    check(all(i >= len(other) - 2 for i, _n in late),
          f"{compiler}: only the last critical section and its wait may be open, not "
          f"{late[:5]} of {len(other)}")
    funcs = harness.calls_of(r.profile("wall_clock"))
    check_eq(funcs.get("omp critical"), len(crit), f"{compiler}: every one in the profile")


def test_regions_ending_during_the_exit_flush():
    for compiler in ("gcc", "clang"):
        for _ in range(3):
            check_flush_at_exit(compiler)


if __name__ == "__main__":
    harness.main(globals())
