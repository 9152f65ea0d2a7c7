"""Programs built with -finstrument-functions: every function's entries and exits become
regions (category 'instrumented'), and the wall_clock profile is the real call tree, count by
count, at -O2 and at -O0 (tests/programs/instrumented.c)."""
import harness
from harness import check, check_eq, children, count, fixture, syscope

import pftrace
from rocpd_checks import rows

import sqlite3

EXPECTED_CALLS = {"main": 1, "run_all": 1, "sum_loop": 1, "add": 1000, "fact": 10,
                  "jumper": 1, "deep1": 1, "deep2": 1, "thread_main": 1, "work": 5}


def check_tree(name):
    r = syscope("sample", "--output-format", "json rocpd pftrace", "--", fixture(name))
    check_eq(r.rc, 0, r.describe())
    check("instrumented ok" in r.out, r.describe())
    p = r.profile("wall_clock")
    calls = {f["name"]: f["calls"] for f in p.meta["functions"] if f["module"] == "instrumented"}
    check_eq(calls, EXPECTED_CALLS, f"{name}: calls per function")
    check("top regions by time inside them" in r.err and " 1000  add " in r.err,
          f"the end-of-run summary lists the functions with their calls: {r.err}")
    trees = p.thread_trees()
    run_all = children(children(trees[0])["main"])["run_all"]
    below = children(run_all)
    check_eq(sorted(below), ["fact", "jumper", "sum_loop"], "run_all's callees")
    check_eq(count(children(below["sum_loop"])["add"]), 1000, "add under sum_loop")
    depth, node = 0, below["fact"]
    while "fact" in children(node):
        node, depth = children(node)["fact"], depth + 1
    check_eq(depth, 9, "fact nested ten deep")
    deep1 = children(below["jumper"])["deep1"]
    check_eq(list(children(deep1)), ["deep2"], "longjmp: deep1 and deep2 end with jumper")
    worker = children(trees[1])
    check_eq((count(worker["thread_main"]), count(children(worker["thread_main"])["work"])),
             (1, 5), "the thread's own tree")
    db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
    check_eq(rows(db, "SELECT COUNT(*) FROM regions WHERE category = 'HOST_INSTRUMENTED' "
                      "AND name = 'add'"), [(1000,)], "each call a region in rocpd")
    t = pftrace.Trace(open(r.path(f"perfetto-trace-{r.main_pid()}.pftrace"), "rb").read())
    check_eq(t.errors, [], "valid trace: slices nested per track")
    check_eq(sum(1 for s in t.slices if s[1] == "fact"), 10, "fact slices in Perfetto")


def test_call_tree_at_O2():
    check_tree("instrumented")


def test_call_tree_at_O0():
    check_tree("instrumented_O0")


def test_exceptions_signal_handlers_and_fork():
    r = syscope("sample", "--output-format", "json", "--", fixture("instrumented_cxx"))
    check_eq(r.rc, 0, r.describe())
    check("instrumented_cxx ok 0" in r.out, r.describe())
    parent = r.profile("wall_clock")
    main = children(children(parent.thread_trees()[0])["main"])
    depth, node = 0, children(main["catcher"])["thrower"]
    while "thrower" in children(node):
        node, depth = children(node)["thrower"], depth + 1
    check_eq(depth, 5, "six throwers nested, each left by the exception's unwinding")
    check_eq(list(children(main["signaller"])), ["on_usr1"],
             "the signal handler runs nested in the function it interrupted")
    calls = {f["name"]: f["calls"] for f in parent.meta["functions"]}
    check("child_work" not in calls, f"the parent never calls child_work: {calls}")
    child_pid = [p for p in r.pids() if p != r.main_pid()]
    check_eq(len(child_pid), 1, f"the fork child's own files: {r.files()}")
    child = r.profile("wall_clock", pid=child_pid[0])
    check_eq({f["name"]: f["calls"] for f in child.meta["functions"]}, {"child_work": 3},
             "the child's calls, in its own profile")


def test_function_filters():
    r = syscope("sample", "--function-exclude", "^(add|fact)$", "--output-format", "json", "--",
                fixture("instrumented"))
    check_eq(r.rc, 0, r.describe())
    p = r.profile("wall_clock")
    calls = {f["name"]: f["calls"] for f in p.meta["functions"]}
    check("add" not in calls and "fact" not in calls and calls["sum_loop"] == 1,
          f"excluded functions left out, the rest kept: {calls}")
    sum_loop = next(f for f in p.meta["functions"] if f["name"] == "sum_loop")
    check_eq(sum_loop["inclusive"], sum_loop["exclusive"], "add's time is sum_loop's own now")
    r = syscope("sample", "--function-include", "^work$", "--output-format", "json", "--",
                fixture("instrumented"))
    calls = {f["name"]: f["calls"] for f in r.profile("wall_clock").meta["functions"]}
    check_eq(calls, {"work": 5}, "--function-include keeps only the matching functions")
    r = syscope("sample", "--function-include", "nomatch", "--output-format", "json", "--",
                fixture("instrumented"))
    check("--function-include 'nomatch' matched none of the instrumented functions" in r.err,
          r.err)
    r = syscope("sample", "--function-exclude", "(", "--", fixture("instrumented"))
    check_eq(r.rc, 2, r.describe())
    check("'(' is not a valid extended regular expression" in r.err, r.err)
    check("instrumented ok" not in r.out, "refused before the program ran")


def test_switched_off():
    r = syscope("sample", "--no-compiler-hooks", "--output-format", "rocpd", "--",
                fixture("instrumented"))
    check_eq(r.rc, 0, r.describe())
    db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
    check_eq(rows(db, "SELECT COUNT(*) FROM regions WHERE category = 'HOST_INSTRUMENTED'"), [(0,)],
             "--no-compiler-hooks records none")


if __name__ == "__main__":
    harness.main(globals())
