"""Issue 14, calls: profiling never breaks the program and never loses its calls.
A C++ library that throws, loaded RTLD_LOCAL by Python's ctypes, under sample, run and
instrument; longjmp/siglongjmp out of deep patched and compiler-hooked frames, 100 and
20 000 times (the tree stays as deep as the calls, every call counted once); coroutines
(swapcontext) drawn under their real callers; a library opened and closed 100 times, every
load patched; a timer's handler calling the program's functions while its threads end."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import harness
import pftrace
from harness import Skip, calls_of, check, check_eq, children, count, fixture, syscope


THROWER = r"""
#include <stdexcept>
extern "C" int f() {
	try {
		throw std::runtime_error("thrown and caught inside the library");
	} catch (const std::exception &e) {
		return 7;
	}
}
"""


def cxx_library():
    """libthr.so, whose f() throws and catches a std::runtime_error; and a python3 with
    ctypes, as a real executable (instrument patches an ELF file, not a launcher script):
    Debian's, whose own functions are in the executable, else the one running the tests."""
    gxx = shutil.which("g++")
    if not gxx:
        raise Skip("g++ is missing: cannot build the C++ library python loads")
    python = os.path.realpath("/usr/bin/python3" if os.path.exists("/usr/bin/python3")
                              else sys.executable)
    probe = subprocess.run([python, "-c", "import ctypes"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise Skip(f"{python} has no ctypes: {probe.stderr.strip()}")
    d = tempfile.mkdtemp(prefix="syscope-cxx-")
    src = os.path.join(d, "thr.cpp")
    with open(src, "w") as f:
        f.write(THROWER)
    lib = os.path.join(d, "libthr.so")
    subprocess.run([gxx, "-shared", "-fPIC", "-O2", "-o", lib, src], check=True)
    return python, lib


def test_cxx_extension_throwing_from_python():
    """ctypes loads the library RTLD_LOCAL, so libstdc++ and libgcc_s are in no global
    scope: syscope's unwinding hooks must still reach the real unwinder (it crashed with
    SIGSEGV under every verb)."""
    python, lib = cxx_library()
    code = f"import ctypes; print(ctypes.CDLL({lib!r}).f())"
    plain = subprocess.run([python, "-c", code], capture_output=True, text=True)
    check_eq((plain.returncode, plain.stdout), (0, "7\n"), f"plain run: {plain.stderr}")
    for verb in (["sample", "--no-cuda"], ["run"], ["instrument"]):
        r = syscope(*verb, "--output-format", "json", "--", python, "-c", code)
        check_eq((r.rc, r.out), (0, "7\n"), f"{verb[0]}: as without syscope\n{r.describe()}")
        check("defined by no loaded object" not in r.err, f"{verb[0]}: {r.err}")
        check(r.metadata() is not None and r.metadata()["exit"] == {"reason": "exit",
                                                                   "status": 0},
              f"{verb[0]}: the recorded end: {r.metadata().get('exit')}")
    calls = calls_of(r.profile("wall_clock"))
    check(sum(calls.values()) > 100 and any(n.startswith("Py") for n in calls),
          f"instrument: python's patched functions recorded: {sorted(calls)[:20]}")


JUMPERS = ("jump_outer", "jump_middle", "jump_inner")


def check_jumps(r, rounds, how):
    check_eq(r.rc, 0, f"{how}: {r.describe()}")
    check(f"jumps ok {rounds}" in r.out, f"{how}: {r.out}")
    p = r.profile("wall_clock")
    calls = {n: c for n, c in calls_of(p).items() if n in JUMPERS + ("main", "jump_after")}
    check_eq(calls, {"main": 1, "jump_outer": rounds, "jump_middle": rounds,
                     "jump_inner": rounds, "jump_after": 1}, f"{how}: calls per function")
    main = children(p.thread_trees()[0])["main"]
    below = children(main)
    check_eq(sorted(below), ["jump_after", "jump_outer"], f"{how}: main's callees")
    check_eq(count(below["jump_outer"]), rounds, f"{how}: every round under main")
    inner = children(children(below["jump_outer"])["jump_middle"])["jump_inner"]
    check_eq((count(inner), inner["children"]), (rounds, []), f"{how}: the jumps' leaves")
    # The thread's root, main, three callers deep: nothing left open piles up.
    check_eq(p.max_depth(), 4, f"{how}: the tree is as deep as the calls")
    folded = [f for f in r.files() if f.startswith("wall_clock-") and f.endswith(".folded")]
    check_eq(len(folded), 1, f"{how}: one folded file: {r.files()}")
    with open(r.path(folded[0])) as f:
        lines = f.read().splitlines()
    check(len(lines) <= 6 and all(line.count(";") <= 3 for line in lines),
          f"{how}: the folded stacks are the five real ones: {lines[:8]}")


def test_longjmp_out_of_patched_frames():
    for rounds in (100, 20000):
        r = syscope("instrument", "--min-instructions", "0", "-R", "^(main|jump_.*)$",
                    "--output-format", "json folded", "--", fixture("guarantee_jumps"),
                    rounds)
        check_jumps(r, rounds, f"instrument, {rounds} jumps")


def test_longjmp_ends_the_calls_it_leaves_when_the_catcher_is_throttled():
    """jump_throttled: thrower's 1000 calls each end at their longjmp. Once attempt, the
    function the jump returns to, is throttled, the next patched entry comes five rounds of
    main's work later; thrower's calls lasted until then (79% of the run under thrower,
    main's own loop 21%; `syscope instrument -- lua5.4` gave lua_error 80%)."""
    r = syscope("instrument", "--min-instructions", "0", "-R", "^(main|attempt|thrower)$",
                "--output-format", "json", "--", fixture("jump_throttled"))
    check_eq(r.rc, 0, r.describe())
    check("thrown 1000" in r.out, r.out)
    p = r.profile("wall_clock")
    check_eq(calls_of(p), {"main": 1, "attempt": 5000, "thrower": 1000}, "calls")
    thrower, main = p.function("thrower"), p.function("main")
    # thrower does a longjmp; main's loop between attempts is nearly all the work.
    check(thrower["inclusive"] < 0.1 * main["exclusive"],
          f"thrower {thrower['inclusive']} s against main's own {main['exclusive']} s")


def test_longjmp_out_of_compiler_hooked_frames():
    for rounds in (100, 20000):
        r = syscope("sample", "--output-format", "json folded", "--",
                    fixture("guarantee_jumps_hooks"), rounds)
        check_jumps(r, rounds, f"-finstrument-functions, {rounds} jumps")


def check_coroutines(r, how, entry):
    """patch_coroutines: main -> main_work x 5 on the thread's stack; on the coroutine's
    stack, [entry ->] co_body -> co_work x 5, each co_work suspended in its middle while
    main_work returns and the next one begins."""
    check_eq(r.rc, 0, f"{how}: {r.describe()}")
    check("coroutines ok" in r.out, f"{how}: {r.out}")
    p = r.profile("wall_clock")
    expected = {"main": 1, "main_work": 5, "co_body": 1, "co_work": 5}
    if entry:
        expected[entry] = 1
    check_eq(calls_of(p), expected, f"{how}: calls per function")
    roots = children(p.thread_trees()[0])
    check_eq(sorted(roots), sorted(["main", entry or "co_body"]),
             f"{how}: the coroutine's calls are not under the call that resumed them")
    main_work = children(roots["main"])["main_work"]
    check_eq((list(children(roots["main"])), count(main_work), main_work["children"]),
             (["main_work"], 5, []), f"{how}: main -> main_work x 5, nothing under it")
    body = children(roots[entry])["co_body"] if entry else roots["co_body"]
    co_work = children(body)["co_work"]
    check_eq((count(body), list(children(body)), count(co_work), co_work["children"]),
             (1, ["co_work"], 5, []), f"{how}: co_body -> co_work x 5, all five")
    # The timeline: the coroutine's calls on a track of their own under the thread, each
    # slice at its own bounds (the decoder checks nesting per track).
    t = pftrace.Trace(open(r.path(next(f for f in r.files() if f.endswith(".pftrace"))),
                           "rb").read())
    check_eq(t.errors, [], f"{how}: valid trace")
    track_of = {}
    for track, name, _cat, _start, _end, _args in t.slices:
        track_of.setdefault(name, set()).add(track)
    check(track_of["main_work"] == track_of["main"], f"{how}: main's calls on one track")
    check(track_of["co_work"] == track_of["co_body"] and
          not track_of["co_work"] & track_of["main"], f"{how}: the coroutine's own track")
    names = [s[1] for s in t.slices]
    check_eq((names.count("main_work"), names.count("co_work")), (5, 5), f"{how}: slices")


def test_coroutines_under_their_real_callers():
    r = syscope("instrument", "--min-instructions", "0", "-R",
                "^(main|main_work|co_body|co_work)$", "--output-format", "json pftrace", "--",
                fixture("patch_coroutines"))
    check_coroutines(r, "patched", None)
    r = syscope("sample", "--output-format", "json pftrace", "--",
                fixture("guarantee_coroutines_hooks"))
    check_coroutines(r, "-finstrument-functions", "co_entry")


def test_library_patched_at_every_load():
    """-MI names a library the program opens, calls and closes 100 times: each load is a
    new image of it (perhaps at the same address) and is patched again."""
    lib = fixture("libpatch_lib.so")
    r = syscope("instrument", "--min-instructions", "0", "-MI", lib, "--output-format",
                "json", "--", fixture("guarantee_reload"), lib, 100)
    check_eq(r.rc, 0, r.describe())
    check("reload ok 100" in r.out, r.describe())
    p = r.profile("wall_clock")
    check_eq(calls_of(p), {"main": 1, "lib_outer": 100, "lib_inner": 400},
             "every call of every load")
    outer = children(children(p.thread_trees()[0])["main"])["lib_outer"]
    check_eq((count(outer), count(children(outer)["lib_inner"])), (100, 400),
             "main -> lib_outer -> lib_inner")
    check("instrument: 99 loads of libraries opened again after dlclose were patched again "
          "(198 functions in all)" in r.err, f"the later loads are said once: {r.err}")
    check_eq(r.err.count("functions patched in"), 2, f"no note per load: {r.err}")


def check_timer_calls(r, how):
    """timer_calls: 4 threads call leaf() 200 000 times each while a 100 us timer's handler
    calls it too, on whichever thread runs, also one that is ending: the program runs as it
    does alone, and every call of leaf() it made is in the profile or in the LOST count (a
    call on a thread past its end cannot be recorded: it must be said)."""
    check_eq(r.rc, 0, f"{how}: the program's status\n{r.describe()}")
    m = re.search(r"timer_calls: (\d+) calls of leaf", r.out)
    check(m, f"{how}: the program's output\n{r.describe()}")
    made = int(m.group(1))
    got = calls_of(r.profile("wall_clock")).get("leaf", 0)
    check(got <= made, f"{how}: {got} calls recorded of {made} made")
    lost = re.search(r"(\d+) because the thread had already ended", r.err)
    check(got == made or (lost and int(lost.group(1)) >= made - got),
          f"{how}: {made - got} calls of leaf neither recorded nor counted lost\n{r.err}")


def test_timer_handler_calls_on_ending_threads():
    r = syscope("instrument", "--no-throttle", "--output-format", "json", "--",
                fixture("timer_calls"))
    check_timer_calls(r, "instrument")
    r = syscope("run", "--no-throttle", "--no-sample", "--output-format", "json", "--",
                fixture("timer_calls_hooked"))
    check_timer_calls(r, "compiler hooks")


if __name__ == "__main__":
    harness.main(globals())
