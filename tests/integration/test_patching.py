"""syscope instrument: runtime patching of unmodified programs (tests/programs/patch_calls.c,
built at -O2, -O0, with endbr64 and with -fpatchable-function-entry). The recorded call tree
must be the real one, function by function and count by count, through recursion 10 001 deep,
longjmp, jump tables, tail calls, calls through pointers, an instrumented signal handler, a
thread, a fork child, exec, a function that never returns, and C++ exceptions; and the
selection and bad-input paths must say what they did."""
import json
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import tempfile

import harness
from harness import Skip, calls_of, check, check_eq, children, count, fixture, syscope

import pftrace
from rocpd_checks import rows

EXPECTED_CALLS = {"main": 1, "run_all": 1, "sum_loop": 1, "add": 1000, "rdepth": 10001,
                  "jumper": 1, "deep1": 1, "deep2": 1, "pick": 8, "tail_a": 1, "tail_b": 1,
                  "call_through": 1, "work": 7, "signaller": 1, "on_usr1": 1,
                  "thread_main": 1, "finish": 1}


def instrument(*args):
    return syscope("instrument", "--min-instructions", "0", *args)


def check_tree(name, tiny_patched):
    """`tiny_patched`: whether the 4-byte function `tiny` can be patched in this build."""
    r = instrument("--output-format", "json rocpd pftrace", "--", fixture(name))
    check_eq(r.rc, 0, r.describe())
    check("patch_calls ok" in r.out, r.describe())
    check("left unpatched" not in r.err and "threads were already running" not in r.err and
          r.err.count("instrument: 20 functions patched") + r.err.count("instrument: 21 "
                                                                        "functions patched")
          == 1, f"{name}: patched once, nothing refused at run time: {r.err}")
    info = json.load(open(r.path("instrumentation.json")))["modules"][0]
    by_name = {f["name"]: f for f in info["functions"]}
    for fn in list(EXPECTED_CALLS) + ["child_work"]:
        check_eq(by_name[fn]["state"], "instrumented", f"{name}: {fn} patched ({info})")
    expected = dict(EXPECTED_CALLS)
    if tiny_patched:
        expected["tiny"] = 3
        check_eq(by_name["tiny"]["state"], "instrumented", f"{name}: tiny patched")
    else:
        check_eq((by_name["tiny"]["state"], by_name["tiny"]["reason"]),
                 ("unpatchable", "too short: it returns within the bytes a jump needs"),
                 f"{name}: tiny refused, with the reason")
    p = r.profile("wall_clock")
    check_eq(calls_of(p), expected, f"{name}: calls per function")
    trees = p.thread_trees()
    main = children(trees[0])["main"]
    check_eq(sorted(children(main)), ["finish", "run_all"], "main's callees")
    below = children(children(main)["run_all"])
    check_eq(sorted(below), sorted(["call_through", "jumper", "pick", "rdepth", "signaller",
                                    "sum_loop", "tail_a"] + (["tiny"] if tiny_patched else [])),
             "run_all's callees")
    check_eq(count(children(below["sum_loop"])["add"]), 1000, "add under sum_loop")
    check_eq(count(below["pick"]), 8, "pick: a switch through a jump table, 8 calls")
    depth, node = 0, below["rdepth"]
    while "rdepth" in children(node):
        node, depth = children(node)["rdepth"], depth + 1
    check(depth >= 250, f"rdepth nested in itself down to the tree's cut: {depth}")
    deep1 = children(below["jumper"])["deep1"]
    check_eq(list(children(deep1)), ["deep2"], "longjmp: deep1 and deep2 end with jumper")
    check_eq(list(children(below["tail_a"])), ["tail_b"], "a tail call nests its target")
    check_eq(list(children(below["call_through"])), ["work"], "a call through a pointer")
    handler = children(below["signaller"])
    check_eq(list(handler), ["on_usr1"], "the handler runs nested in what it interrupted")
    check_eq(list(children(handler["on_usr1"])), ["work"], "the handler's own calls")
    worker = children(trees[1])
    check_eq((count(worker["thread_main"]), count(children(worker["thread_main"])["work"])),
             (1, 5), "the thread's own tree")
    child = [pid for pid in r.pids() if pid != r.main_pid()]
    check_eq(len(child), 1, f"the fork child's own files: {r.files()}")
    check_eq(calls_of(r.profile("wall_clock", pid=child[0])), {"child_work": 3},
             "the fork child's calls")
    db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
    check_eq(rows(db, "SELECT name, COUNT(*) FROM regions WHERE category = 'HOST_INSTRUMENTED' "
                      "AND name IN ('add', 'rdepth') GROUP BY name ORDER BY name"),
             [("add", 1000), ("rdepth", 10001)], "each call a region in rocpd")
    t = pftrace.Trace(open(r.path(f"perfetto-trace-{r.main_pid()}.pftrace"), "rb").read())
    check_eq(t.errors, [], "valid trace: slices nested per track")
    check_eq(sum(1 for s in t.slices if s[1] == "rdepth"), 10001, "rdepth slices in Perfetto")


def test_call_tree_at_O2():
    check_tree("patch_calls", tiny_patched=False)


def test_call_tree_at_O0():
    check_tree("patch_calls_O0", tiny_patched=True)


def test_call_tree_with_endbr64():
    check_tree("patch_calls_cet", tiny_patched=False)


def test_call_tree_with_patchable_function_entries():
    """-fpatchable-function-entry=5: five NOPs at each entry make every function patchable,
    the 4-byte one too, without moving any of its own instructions."""
    check_tree("patch_calls_nops", tiny_patched=True)


def test_vector_registers_survive_the_probes():
    """ymm upper halves, zmm16-31 and the AVX-512 mask registers, which the probes do not
    save, stay as the patched function left them, through chunk exchanges and flushes."""
    r = instrument("-R", "^leaf$", "--output-format", "json", "--", fixture("patch_vector_regs"))
    check_eq(r.rc, 0, r.describe())
    if "no AVX here" in r.out:
        raise Skip("this CPU has no AVX")
    m = re.search(r"vector registers: (\d+) calls, ok", r.out)
    check(m is not None, r.describe())
    check_eq(calls_of(r.profile("wall_clock")), {"leaf": int(m.group(1))}, "every call recorded")


def test_coroutines_switching_inside_patched_calls():
    """ucontext coroutines: calls suspended on one stack while the other stack's calls come
    and go; every call returns where it should and is counted once."""
    r = instrument("-R", "^(main|main_work|co_body|co_work)$", "--output-format", "json",
                   "--", fixture("patch_coroutines"))
    check_eq(r.rc, 0, r.describe())
    check("coroutines ok" in r.out, r.describe())
    check_eq(calls_of(r.profile("wall_clock")),
             {"main": 1, "main_work": 5, "co_body": 1, "co_work": 5}, "calls per function")


def traces(out):
    """The stack traces printed by patch_backtrace, each cut after main (below it, a build
    without tail calls, ASan's, shows syscope's own __libc_start_main wrapper)."""
    return [line.split(" main ")[0] + " main" for line in out.splitlines()
            if line.startswith("trace:")]


def test_stack_traces_the_program_takes():
    """backtrace() inside patched functions sees the real callers, not the exit stub."""
    plain = subprocess.run([fixture("patch_backtrace")], capture_output=True, text=True)
    want = traces(plain.stdout)
    check_eq(want, ["trace: inner middle outer main"], f"plain run: {plain.stdout}")
    r = instrument("-R", "^(main|outer|middle|inner)$", "--output-format", "json", "--",
                   fixture("patch_backtrace"))
    check_eq(r.rc, 0, r.describe())
    check_eq(traces(r.out), want, "the same stack trace when patched")
    check_eq(calls_of(r.profile("wall_clock")), {"main": 1, "outer": 1, "middle": 1,
                                                  "inner": 1}, "and every exit recorded")
    # Not patched, only preloaded: syscope's wrapper does not show either.
    r = syscope("sample", "--output-format", "json", "--", fixture("patch_backtrace"))
    check_eq(traces(r.out), want, "the same stack trace under syscope sample")


def test_exec_instruments_the_new_image_too():
    r = instrument("--output-format", "json", "--", fixture("patch_calls"), "exec")
    check_eq(r.rc, 0, r.describe())
    check_eq(calls_of(r.profile("wall_clock")),
             {"main": 2, "exec_self": 1, "after_exec": 1, "add": 3, "finish": 1},
             "before and after exec, one process")


def test_exceptions_signal_handlers_and_fork():
    r = instrument("--output-format", "json", "--", fixture("patch_calls_cxx"))
    check_eq(r.rc, 0, r.describe())
    check("instrumented_cxx ok 0" in r.out, r.describe())
    parent = r.profile("wall_clock")
    check_eq(calls_of(parent), {"main": 1, "catcher": 1, "thrower": 6, "signaller": 1,
                                "on_usr1": 1}, "calls, each exception-unwound one once")
    main = children(children(parent.thread_trees()[0])["main"])
    depth, node = 0, children(main["catcher"])["thrower"]
    while "thrower" in children(node):
        node, depth = children(node)["thrower"], depth + 1
    check_eq(depth, 5, "six throwers nested, each left by the exception's unwinding")
    child = [pid for pid in r.pids() if pid != r.main_pid()]
    check_eq(calls_of(r.profile("wall_clock", pid=child[0])), {"child_work": 3},
             "the child's calls, in its own profile")


def test_selection_and_reports():
    target = fixture("patch_calls")
    r = syscope("instrument", "--simulate", "--print-instrumented", "functions", "-i", "0",
                "-R", "^(add|work|pick)$", "-E", "^pick$", "--", target)
    check_eq(r.rc, 0, r.describe())
    check("patch_calls ok" not in r.out, "--simulate does not run the program")
    listed = [line.split()[-1] for line in r.out.splitlines()[1:]]
    check_eq(sorted(listed), ["add", "work"], "-R restricts, -E excludes")
    r = syscope("instrument", "--simulate", "--print-excluded", "--min-instructions", "1000",
                "-I", "^sum_loop$", "--dump-info=info.json", "--", target)
    check_eq(r.rc, 0, r.describe())
    check("rdepth  [fewer instructions than --min-instructions]" in r.out, r.out)
    info = json.load(open(os.path.join(r.workdir, "info.json")))["modules"][0]
    by_name = {f["name"]: f for f in info["functions"]}
    check_eq(by_name["sum_loop"]["state"], "instrumented", "-I overrides the heuristics")
    check_eq(by_name["_start"]["state"], "excluded", "start-up code is never probed")
    check(by_name["add"]["instructions"] > 0 and by_name["sum_loop"]["loops"] >= 1,
          f"instruction and loop counts: {by_name['sum_loop']}")
    r = syscope("instrument", "--simulate", "-I", "nothing_like_this", "--", target)
    check("no function matches --function-include" in r.err, r.err)
    r = syscope("instrument", "-E", "(", "--", target)
    check_eq(r.rc, 2, r.describe())
    check("invalid regular expression '('" in r.err and "patch_calls ok" not in r.out, r.err)


def test_default_size_heuristic_and_combined_sampling():
    r = syscope("instrument", "--cpu", "--output-format", "json", "--", fixture("hot"), "0.3")
    check_eq(r.rc, 0, r.describe())
    check("hot_loop" in calls_of(r.profile("wall_clock")), "instrumented: hot_loop's calls")
    sampled = r.profile("sampling_cpu_clock")
    check(sampled.samples("hot_loop") > 0, "--cpu samples too (combined mode)")
    r = syscope("instrument", "-M", "sampling", "--output-format", "json", "--", fixture("hot"),
                "0.3")
    check_eq(r.rc, 0, r.describe())
    check(r.profile("sampling_cpu_clock").samples("hot_loop") > 0 and
          not os.path.exists(r.path(f"wall_clock-{r.main_pid()}.json")),
          f"-M sampling: sampled, nothing patched: {r.files()}")
    check(sampled.samples("main") >= sampled.samples("hot_loop"),
          "stacks walk past the swapped return addresses: hot_loop's samples are under main "
          f"({sampled.samples('main')} vs {sampled.samples('hot_loop')})")


def check_loops(name):
    r = instrument("-l", "--output-format", "json", "--", fixture(name), "5")
    check_eq(r.rc, 0, r.describe())
    check("patch_loops ok" in r.out, r.describe())
    info = json.load(open(r.path("instrumentation.json")))["modules"][0]
    recorded = {f["name"]: [lp["recorded"] for lp in f.get("loop_regions", [])]
                for f in info["functions"]}
    for f in info["functions"]:
        for lp in f.get("loop_regions", []):
            check(lp["recorded"] or lp.get("reason"), f"{name}: a loop left out says why: {f}")
    p = r.profile("wall_clock")
    calls = calls_of(p)
    check_eq({k: v for k, v in calls.items() if not k.startswith("[loop]")},
             {"main": 1, "simple": 1, "nested": 1, "early": 1, "escape": 1, "work": 27},
             f"{name}: loops change no function's calls")
    main = children(children(p.thread_trees()[0])["main"])
    check_eq(recorded["simple"], [True], f"{name}: simple's loop is recorded")
    loop = children(main["simple"])
    check_eq(len(loop), 1, f"{name}: one loop region in simple: {list(loop)}")
    name_, node = next(iter(loop.items()))
    check(re.fullmatch(r"\[loop\] simple:\d+", name_), name_)
    check_eq((count(node), count(children(node)["work"])), (1, 5),
             f"{name}: one instance of simple's loop, with its 5 calls")
    outer = children(main["nested"])
    check_eq(len(outer), 1, f"{name}: nested's outer loop {list(outer)}")
    outer = next(iter(outer.values()))
    check_eq(count(outer), 1, "the outer loop, entered once")
    if recorded["nested"] == [True, True]:
        inner = [c for n, c in children(outer).items() if n.startswith("[loop]")]
        check_eq([count(c) for c in inner], [3], "the inner loop, entered 3 times")
        check_eq(count(children(inner[0])["work"]), 12, "its 12 calls")
    else:
        check_eq(count(children(outer)["work"]), 12, "12 calls in the outer loop")


def test_loops_at_O2():
    check_loops("patch_loops")


def test_loops_at_O0():
    check_loops("patch_loops_O0")


def coverage_of(r, pid):
    with open(r.path(f"coverage-{pid}.json")) as f:
        doc = json.load(f)["syscope"]
    return {f["name"]: f["calls"] for f in doc["functions"]}, doc


def test_coverage_mode():
    r = instrument("--mode", "coverage", "--output-format", "json text", "--",
                   fixture("patch_calls"))
    check_eq(r.rc, 0, r.describe())
    calls, doc = coverage_of(r, r.main_pid())
    check_eq({k: v for k, v in calls.items() if v}, EXPECTED_CALLS,
             "coverage counts every call of every function that ran")
    check_eq(sorted(k for k, v in calls.items() if not v),
             ["after_exec", "child_work", "exec_self"], "and names those that never ran")
    check_eq((doc["functions_instrumented"], doc["functions_run"]), (20, 17), "totals")
    child = [pid for pid in r.pids() if pid != r.main_pid()][0]
    check_eq({k: v for k, v in coverage_of(r, child)[0].items() if v}, {"child_work": 3},
             "a fork child counts its own calls")
    check(not os.path.exists(r.path(f"wall_clock-{r.main_pid()}.json")),
          "coverage mode records no regions")
    check("instrumented functions ran" in r.err and
          "Coverage: 17 of 20" in open(r.path(f"coverage-{r.main_pid()}.txt")).read(), r.err)


def test_shared_libraries():
    prog = fixture("patch_lib_main")
    r = instrument("-MI", "patch_lib", "--output-format", "json", "--", prog)
    check_eq(r.rc, 0, r.describe())
    check("patch_lib ok" in r.out, r.describe())
    p = r.profile("wall_clock")
    check_eq(calls_of(p), {"main": 1, "use_lib": 2, "lib_outer": 2, "lib_inner": 8},
             "-MI: the library's functions too")
    outer = children(children(children(p.thread_trees()[0])["main"])["use_lib"])["lib_outer"]
    check_eq(count(children(outer)["lib_inner"]), 8, "calls into the library nest")
    info = json.load(open(r.path("instrumentation.json")))["modules"]
    check_eq([os.path.basename(m["path"]) for m in info], ["patch_lib_main", "libpatch_lib.so"],
             "both modules analyzed")
    r = instrument("--output-format", "json", "--", prog)
    check_eq(calls_of(r.profile("wall_clock")), {"main": 1, "use_lib": 2},
             "by default only the program")
    r = instrument("--label", "file", "line", "-MI", "patch_lib", "--output-format", "json",
                   "--", prog)
    names = sorted(calls_of(r.profile("wall_clock")))
    check(len(names) == 4 and all(re.fullmatch(r"\w+ \[(patch_lib_main|patch_lib)\.c:\d+\]", n)
                                  for n in names), f"--label file,line: {names}")
    r = instrument("-MR", "^libpatch_lib", "--output-format", "json", "--", prog)
    check_eq(calls_of(r.profile("wall_clock")), {"lib_outer": 2, "lib_inner": 8},
             "-MR: only the library")
    r = instrument("-MI", "^libc", "--simulate", "--", prog)
    check(re.search(r"--module-include matches \d+ libraries the program does not load at "
                    r"start .*; none of them is instrumented: name the ones it opens with "
                    r"dlopen more narrowly", r.err), f"a regex too wide for dlopen: {r.err}")
    r = instrument("-MI", "nosuchlib", "--simulate", "--", prog)
    check("no library matches --module-include or --module-restrict: none of the" in r.err,
          r.err)
    # By name: a library the program may dlopen later (here in its own folder and named by
    # its argument) is found before the run, analyzed, and patched when it loads.
    lib = fixture("libhotlib.so")
    r = instrument("-MI", "hotlib", "--output-format", "json", "--", fixture("dlopen_main"),
                   lib, "0.2")
    check_eq(r.rc, 0, r.describe())
    calls = calls_of(r.profile("wall_clock"))
    check(calls.get("lib_run") == 1 and calls.get("lib_hot_work", 0) > 10,
          f"-MI NAME of a library opened with dlopen: patched when loaded: {calls}")
    info = json.load(open(r.path("instrumentation.json")))
    check_eq(sorted(os.path.basename(m["path"]) for m in info["modules"]),
             ["dlopen_main", "libhotlib.so"], "analyzed before the run")
    r = instrument("-MI", lib, "--output-format", "json", "--", fixture("dlopen_main"), lib,
                   "0.2")
    check_eq(r.rc, 0, r.describe())
    calls = calls_of(r.profile("wall_clock"))
    check(calls.get("lib_run") == 1 and calls.get("lib_hot_work", 0) > 10,
          f"a library opened with dlopen is patched when it is loaded, and named: {calls}")


def test_rewrite_then_run_many_times():
    work = tempfile.mkdtemp(prefix="syscope-rewrite-")
    try:
        inst = os.path.join(work, "patch_calls.inst")
        r = instrument("-o", inst, "--", fixture("patch_calls"))
        check_eq(r.rc, 0, r.describe())
        check("patch_calls ok" not in r.out, "-o rewrites, it does not run the program")
        check("with 20 functions instrumented" in r.err, r.err)
        plain = subprocess.run([inst], capture_output=True, text=True, cwd=work,
                               env=dict(os.environ, SYSCOPE_ENABLED="false"))
        check_eq((plain.returncode, plain.stdout.split()[:2], os.listdir(work)),
                 (0, ["patch_calls", "ok"], ["patch_calls.inst"]),
                 "SYSCOPE_ENABLED=false: the copy runs plain, writes nothing")
        alone = subprocess.run([inst, "x"], capture_output=True, text=True, cwd=work)
        check_eq((alone.returncode, alone.stdout.split()[:2]), (0, ["patch_calls", "ok"]),
                 f"the copy runs by itself: {alone.stderr}")
        runs = [d for d in os.listdir(work) if d.startswith("syscope-")]
        check_eq(runs, ["syscope-patch_calls.inst-output"], "it profiled itself")
        own = harness.Result(alone, work, os.path.join(
            work, runs[0], os.listdir(os.path.join(work, runs[0]))[0]), 0)
        check_eq(calls_of(own.profile("wall_clock")), EXPECTED_CALLS,
                 "instrumented by itself: the carried plan, no analysis")
        for _ in range(2):
            r = syscope("run", "--output-format", "json", "--", inst)
            check_eq(r.rc, 0, r.describe())
            check_eq(calls_of(r.profile("wall_clock")), EXPECTED_CALLS,
                     "under syscope run: the carried plan, no analysis")
            check("instrument: 20 functions patched in 1 module(s)" in r.err, r.err)
        libs = os.path.join(work, "libs") + "/"
        r = instrument("-o", libs, "--", fixture("libpatch_lib.so"))
        check_eq(r.rc, 0, r.describe())
        r = syscope("run", "--output-format", "json", "--", fixture("patch_lib_main"),
                    env={"LD_LIBRARY_PATH": libs})
        calls = calls_of(r.profile("wall_clock"))
        check_eq((calls.get("lib_outer"), calls.get("lib_inner")), (2, 8),
                 f"a rewritten library, loaded by an unchanged program: {calls}")
        r = instrument("-o", libs, "--", fixture("libhotlib.so"))
        check_eq(r.rc, 0, r.describe())
        r = syscope("run", "--output-format", "json", "--", fixture("dlopen_main"),
                    os.path.join(libs, "libhotlib.so"), "0.2")
        calls = calls_of(r.profile("wall_clock"))
        check_eq(calls.get("lib_run"), 1, f"a rewritten library opened with dlopen: {calls}")
        r = instrument("-o", os.path.join(work, "again"), "--", inst)
        check_eq(r.rc, 1, r.describe())
        check("was written by syscope instrument -o already" in r.err, r.err)
        r = instrument("-o", inst, "--", inst)
        check_eq(r.rc, 2, r.describe())
        check("would overwrite the original" in r.err, r.err)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_pushed_regions_and_calls_that_do_not_nest():
    r = instrument("--output-format", "json", "--", fixture("patch_regions"))
    check_eq(r.rc, 0, r.describe())
    p = r.profile("wall_clock")
    main = children(children(p.thread_trees()[0])["main"])
    check_eq(count(main["work"]), 2, f"main keeps both calls of work: {list(main)}")
    check("phase" in calls_of(p), f"the pushed region is there: {calls_of(p)}")


def test_bad_input():
    work = tempfile.mkdtemp(prefix="syscope-patch-")
    try:
        script = os.path.join(work, "script.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\necho hi\n")
        os.chmod(script, 0o755)
        r = syscope("instrument", "--", script)
        check_eq(r.rc, 1, r.describe())
        check("script.sh: not an ELF file" in r.err, r.err)
        foreign = os.path.join(work, "foreign")
        shutil.copy(fixture("patch_calls"), foreign)
        with open(foreign, "r+b") as f:
            f.seek(18)
            f.write((183).to_bytes(2, "little"))  # EM_AARCH64
        r = syscope("instrument", "--", foreign)
        check_eq(r.rc, 1, r.describe())
        check("code for another architecture (ELF machine 183)" in r.err, r.err)
        stripped = os.path.join(work, "stripped")
        subprocess.run(["strip", "-o", stripped, fixture("patch_calls")], check=True)
        r = syscope("instrument", "--output-format", "json", "--", stripped)
        check_eq(r.rc, 0, r.describe())
        check("patch_calls ok" in r.out, "a stripped program still runs")
        check("is stripped (no .symtab)" in r.err, r.err)
        if "exports no function" in r.err:  # a program that exports nothing: said so
            check(f"{stripped} is stripped (no .symtab) and exports no function: none of its "
                  "code can be instrumented" in r.err, r.err)
            check("only its 0 exported functions" not in r.err, r.err)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    r = syscope("instrument", "--", fixture("static_hello"))
    check_eq(r.rc, 1, r.describe())
    check("is a static executable" in r.err, r.err)


if __name__ == "__main__":
    harness.main(globals())
