"""syscope python: every Python call traced (FUNC_CALL with SC_FUNC_PYTHON, named by
PY_CODE records), exact counts, pairing through exceptions, generators, threads and fork
children, filters, Python thread names and worker roles, -m/-c, sys.argv as the script
sees it, and clear errors. /usr/bin/python3 (CPython 3.11 on Debian 12); the pyenv
interpreters, when present, are optional extras."""
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile

import harness
from harness import Skip, check, check_eq, syscope

import rawdump
import records

PYTHON = "/usr/bin/python3"
FIXTURES = os.path.join(harness.SOURCE, "tests", "programs", "python")
CALLS = os.path.join(FIXTURES, "trace_calls.py")
FUNC_PYTHON = 0x2
THREAD_NAME_GIVEN = 0x1
PY_TRACING = 0x1
PYENV = "/root/.pyenv/versions"
EXTRA_VERSIONS = ("3.10.13", "3.12.1", "3.13.0")


def need_python(path=PYTHON):
    if not os.access(path, os.X_OK):
        raise Skip(f"{path} is not installed")


class Trace:
    """The Python calls of one raw file: per code id its name, per thread the records."""

    def __init__(self, path):
        self.codes = {}  # id -> (filename, qualname)
        self.calls = []  # (tid, enter?, code id) in file order
        self.names = {}  # tid -> Python name (THREAD_NAME given by the program)
        self.runtime_flags = None  # of the last PY_RUNTIME record
        self.notes = []
        whole, pairs = [], {}  # calls (tid, start, end, code id, arrival), entries open
        for tid, rtype, flags, p in rawdump.records(open(path, "rb").read()):
            if rtype == records.PY_CODE:
                code = records.decode_py_code(p)
                self.codes[code["id"]] = (code["filename"], code["qualname"])
            elif rtype == records.PY_RUNTIME:
                self.runtime_flags = records.decode_py_runtime(p)["flags"]
            elif rtype in (records.FUNC_ENTER, records.FUNC_EXIT) and flags & FUNC_PYTHON:
                ts, addr = struct.unpack_from("<QQ", p, 0)
                check_eq(addr >> 63, 1, "a Python FUNC address has bit 63 set")
                cid = (addr >> 32) & 0x7fffffff
                if rtype == records.FUNC_ENTER:
                    pairs.setdefault(tid, []).append((ts, cid))
                else:
                    check(pairs.get(tid), f"thread {tid}: an exit of {cid} without an entry")
                    start, entered = pairs[tid].pop()
                    check_eq(entered, cid, f"thread {tid}: exit pairs with")
                    whole.append((tid, start, ts, cid, len(whole)))
            elif rtype == records.FUNC_CALL and flags & FUNC_PYTHON:
                call = records.decode_func_call(flags, p)
                check(not call["open"], f"a Python call left open: {call}")
                whole.append((tid, call["start"], call["end"], call["id"], len(whole)))
            elif rtype == records.NOTE:
                self.notes.append(p[16:].split(b"\0")[0].decode())
            elif rtype == records.THREAD_NAME and flags & THREAD_NAME_GIVEN:
                self.names[tid] = p[8:24].split(b"\0")[0].decode()

        for tid, stack in pairs.items():
            check_eq(stack, [], f"thread {tid}: FUNC_ENTER records left open")
        self.calls = entries_and_exits(whole)

    def name(self, cid):
        return self.codes.get(cid, ("?", "?"))[1]

    def entries(self, qualname, filename=None):
        return sum(1 for _t, enter, cid in self.calls
                   if enter and self.name(cid) == qualname
                   and (filename is None or self.codes[cid][0] == filename))

    def qualnames(self):
        return {self.name(cid) for _t, _e, cid in self.calls}

    def threads_calling(self, qualname):
        return {tid for tid, enter, cid in self.calls if enter and self.name(cid) == qualname}

    def check_paired(self):
        """Every exit ends the innermost open call of its thread; nothing stays open."""
        stacks = {}
        for tid, enter, cid in self.calls:
            stack = stacks.setdefault(tid, [])
            if enter:
                stack.append(cid)
                continue
            check(stack, f"thread {tid}: an exit of {self.name(cid)} without an entry")
            check_eq(self.name(stack.pop()), self.name(cid), f"thread {tid}: exit pairs with")
        for tid, stack in stacks.items():
            check_eq([self.name(c) for c in stack], [], f"thread {tid}: calls left open")


def entries_and_exits(whole):
    """Whole calls (FUNC_CALL records arrive callees first) as the (tid, enter?, code id)
    events of each thread in time order, checking that they nest: a call starting inside
    another ends inside it. Threads in the order of their first call."""
    events, by_thread = [], {}
    for c in whole:
        by_thread.setdefault(c[0], []).append(c)
    for tid, calls in by_thread.items():
        stack = []
        # callers first: earlier start, then later end, then later arrival
        for c in sorted(calls, key=lambda c: (c[1], -c[2], -c[4])):
            while stack and stack[-1][2] <= c[1] and stack[-1][1] != c[1]:
                events.append((tid, False, stack.pop()[3]))
            check(not stack or c[2] <= stack[-1][2],
                  f"thread {tid}: call {c} overlaps {stack[-1] if stack else None}")
            stack.append(c)
            events.append((tid, True, c[3]))
        while stack:
            events.append((tid, False, stack.pop()[3]))
    return events


def run_python(*args, env=None):
    r = syscope("python", "--no-summary", "--output-format", "json", *args, env=env)
    return r


def traces(r):
    return {os.path.basename(p): Trace(p) for p in r.raw_files()}


def main_trace(r):
    files = r.raw_files()
    check(files, r.describe())
    main = [p for p in files if "-fork" not in os.path.basename(p)]
    check_eq(len(main), 1, "one main raw file")
    return Trace(main[0])


def minor_of(python):
    out = subprocess.run([python, "-c", "import sys; print(sys.version_info[1])"],
                         capture_output=True, text=True).stdout
    return int(out)


def check_call_counts(t, python=PYTHON, backend="auto"):
    check_eq(t.entries("fib", CALLS), 1973, "calls of fib")
    check_eq(t.entries("fails", CALLS), 7, "calls of fails (each raising)")
    check_eq(t.entries("catches", CALLS), 1, "calls of catches")
    check_eq(t.entries("deep", CALLS), 10, "calls of deep (raising through all of them)")
    # 3.11+ evaluates the call that makes a generator (RETURN_GENERATOR), 3.10 does not;
    # sys.monitoring (the default on 3.12+) sees no call there (no RESUME runs).
    minor = minor_of(python)
    pep523 = backend == "pep523" or (backend == "auto" and minor < 12)
    check_eq(t.entries("countdown", CALLS), 6 + (pep523 and minor >= 11),
             "the generator countdown: [its making,] 5 values, its end")
    check_eq(t.entries("consume", CALLS), 1, "calls of consume")
    check_eq(t.entries("main", CALLS), 1, "calls of main")
    check_eq(t.entries("<module>", CALLS), 1, "the script's own code, from its first line")
    t.check_paired()


def test_exact_counts_and_pairing():
    need_python()
    r = run_python("--", PYTHON, CALLS, "15")
    check_eq(r.rc, 0, r.describe())
    check("fib 610" in r.out, r.out)
    t = main_trace(r)
    check_call_counts(t)
    check_eq(t.codes[t.calls[0][2]], (CALLS, "<module>"),
             "the first call traced: the script, from its first line (not start-up)")
    check_eq(t.runtime_flags, PY_TRACING, "PY_RUNTIME says calls are traced")


def test_argv_path_and_main_as_python_sets_them():
    need_python()
    for opts in ([], ["-X", "dev", "-B"]):
        plain = subprocess.run([PYTHON, *opts, CALLS, "4", "x y"], capture_output=True,
                               text=True)
        r = run_python("--", PYTHON, *opts, CALLS, "4", "x y")
        check_eq(r.rc, 0, r.describe())
        keys = ("argv", "path0", "name", "dev")
        want = [line for line in plain.stdout.splitlines() if line.split()[0] in keys]
        got = [line for line in r.out.splitlines() if line.split()[0] in keys]
        check_eq(len(want), 4, "the fixture's lines")
        check_eq(got, want, f"what the script sees with {opts}, against a plain run")
    work = tempfile.mkdtemp(prefix="syscope-it-")
    rel = os.path.relpath(CALLS, work)
    plain = subprocess.run([PYTHON, rel, "3"], capture_output=True, text=True, cwd=work)
    r = syscope("python", "--no-summary", "--", PYTHON, rel, "3", cwd=work)
    check_eq(r.rc, 0, r.describe())
    check_eq(r.out.splitlines()[:3], plain.stdout.splitlines()[:3],
             f"a relative path ({rel}): argv, path0, name")


def test_module_and_code():
    need_python()
    r = run_python("--", PYTHON, "-m", "trace_calls", "10", env={"PYTHONPATH": FIXTURES})
    check_eq(r.rc, 0, r.describe())
    check(f"argv ['{CALLS}', '10']" in r.out, r.out)
    t = main_trace(r)
    check_eq(t.entries("fib", CALLS), 177, "calls of fib(10) under -m")
    t.check_paired()
    r = run_python("--interpreter", PYTHON, "-c", "def f(): pass\nfor _ in range(4): f()\nimport sys; print(sys.argv)",
                   "a1")
    check_eq(r.rc, 0, r.describe())
    check("['-c', 'a1']" in r.out, r.out)
    t = main_trace(r)
    check_eq(t.entries("f", "<string>"), 4, "calls of f in -c code")
    check_eq(t.entries("<module>", "<string>"), 1, "the -c code itself")
    t.check_paired()


def test_exit_status_and_traceback_as_python():
    need_python()
    r = run_python("--interpreter", PYTHON, "-c", "import sys; sys.exit(7)")
    check_eq(r.rc, 7, "sys.exit's status passes through")
    code = "def f():\n    1/0\nf()"
    plain = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True)
    r = run_python("--interpreter", PYTHON, "-c", code)
    check_eq(r.rc, plain.returncode, "status of an uncaught exception")
    traceback = [line for line in r.err.splitlines() if not line.startswith("syscope")]
    check_eq(traceback, plain.stderr.splitlines(), "the traceback, without the bootstrap")


def test_filters():
    need_python()
    r = run_python("-I", "^fib$", "--", PYTHON, CALLS, "12")
    check_eq(r.rc, 0, r.describe())
    t = main_trace(r)
    check_eq(t.qualnames(), {"fib"}, "-I ^fib$: only fib")
    check_eq(t.entries("fib"), 465, "calls of fib(12)")
    r = run_python("-E", "^(fib|countdown)$", "--", PYTHON, CALLS, "12")
    t = main_trace(r)
    check_eq(t.entries("fib"), 0, "-E: fib left out")
    check_eq(t.entries("countdown"), 0, "-E: countdown left out")
    check_eq(t.entries("fails"), 7, "-E: the others stay")
    t.check_paired()
    r = run_python("-MI", r"trace_calls\.py$", "--", PYTHON, CALLS, "12")
    t = main_trace(r)
    check_eq({t.codes[c][0] for _t, _e, c in t.calls}, {CALLS}, "-MI: only the script's file")
    check_eq(t.entries("deep"), 10, "-MI: calls of deep")
    code = "import os.path\ndef f(): return os.path.join('a', 'b')\nfor _ in range(3): f()"
    r = run_python("--interpreter", PYTHON, "-c", code)
    t = main_trace(r)
    check_eq((t.entries("f"), t.entries("join")), (3, 3), "f, and os.path.join under it")
    r = run_python("-ME", "posixpath", "--interpreter", PYTHON, "-c", code)
    t = main_trace(r)
    check_eq((t.entries("f"), t.entries("join")), (3, 0), "-ME posixpath: join left out")
    t.check_paired()
    r = run_python("-I", "fib(", "--", PYTHON, CALLS)
    check_eq(r.rc, 2, r.describe())
    check("function-include" in r.err and "fib(" in r.err and "regular expression" in r.err,
          r.err)


def test_evaluator_replaced_is_said():
    need_python()
    # The PEP 523 backend's case (sys.monitoring, 3.12+'s default, has no evaluator to lose).
    r = run_python("--trace-backend", "pep523", "--", PYTHON,
                   os.path.join(FIXTURES, "trace_clobber.py"))
    check_eq(r.rc, 0, r.describe())
    t = main_trace(r)
    check_eq(t.entries("f"), 1, "f traced until the program replaced the evaluator")
    check([n for n in t.notes if "replaced syscope's frame evaluator" in n], f"notes {t.notes}")
    t.check_paired()


def test_thread_names():
    need_python()
    r = run_python("--", PYTHON, os.path.join(FIXTURES, "trace_threads.py"))
    check_eq(r.rc, 0, r.describe())
    t = main_trace(r)
    workers = t.threads_calling("work")
    check_eq(len(workers), 3, "threads calling work")
    check_eq(sorted(t.names[tid] for tid in workers),
             sorted(["alpha", "beta-worker", "Thread-1 (run)"]), "their Python names")
    for tid in workers:
        check_eq(sum(1 for tt, e, c in t.calls if tt == tid and e and t.name(c) == "work"), 3,
                 f"calls of work on {t.names[tid]}")
    t.check_paired()


def test_worker_roles_and_fork_children():
    need_python()
    r = run_python("--", PYTHON, os.path.join(FIXTURES, "trace_workers.py"))
    check_eq(r.rc, 0, r.describe())
    check("exit codes 0 0" in r.out, r.out)
    roles = []
    for name, t in traces(r).items():
        t.check_paired()  # frames entered before fork never exit in the child's file
        if "-fork" not in name:
            continue
        check_eq(len(t.names), 1, f"{name}: one role")
        role = list(t.names.values())[0]
        roles.append(role)
        if role in ("job", "loader"):
            check_eq(t.entries("job"), 1, f"{name}: job ran once in its worker")
    check_eq(sorted(roles), ["ForkPoolWorker-3", "ForkPoolWorker-4", "job", "loader"],
             "roles of the workers")


def test_thread_names_in_other_verbs():
    need_python()
    r = syscope("sample", "--no-summary", "--output-format", "json", "--", PYTHON,
                os.path.join(FIXTURES, "trace_threads.py"))
    check_eq(r.rc, 0, r.describe())
    t = main_trace(r)
    check_eq(t.calls, [], "no tracing outside syscope python")
    check(set(t.names.values()) >= {"alpha", "beta-worker"}, f"names {t.names}")


def test_errors():
    r = syscope("python", "--", PYTHON, "/nonexistent/script.py")
    check_eq(r.rc, 127, r.describe())
    check("cannot open the script '/nonexistent/script.py'" in r.err, r.err)
    r = syscope("python", "--", "/bin/ls")
    check_eq(r.rc, 126, r.describe())
    check("'/bin/ls' is a program, not a Python script" in r.err, r.err)
    r = syscope("python")
    check_eq(r.rc, 2, r.describe())
    check("no program given" in r.err and "script.py|-m MODULE|-c CODE" in r.err, r.err)
    r = syscope("python", "--", PYTHON)
    check_eq(r.rc, 2, r.describe())
    check("no script, -m MODULE or -c CODE given" in r.err, r.err)
    r = syscope("python", "--", PYTHON, "-m")
    check_eq(r.rc, 2, r.describe())
    check("-m needs a module name" in r.err, r.err)
    r = syscope("python", "--no-python", "--", PYTHON, CALLS)
    check_eq(r.rc, 2, r.describe())
    check("--no-python leaves Python alone" in r.err, r.err)
    r = syscope("python", "--", "ls")
    check_eq(r.rc, 126, r.describe())
    check("'ls' is a program, not a Python script" in r.err, r.err)


def test_other_versions():
    """Optional: the pyenv builds 3.10, 3.12, 3.13 give the same exact counts."""
    found = [v for v in EXTRA_VERSIONS if os.access(f"{PYENV}/{v}/bin/python3", os.X_OK)]
    if not found:
        raise Skip("no pyenv interpreters here")
    for v in found:
        python = f"{PYENV}/{v}/bin/python3"
        for backend in ("auto", "pep523", "monitoring") if minor_of(python) >= 12 else ("auto",):
            r = run_python("--trace-backend", backend, "--interpreter", python, CALLS, "15")
            check_eq(r.rc, 0, f"{v} {backend}: {r.describe()}")
            t = main_trace(r)
            pep523 = backend == "pep523" or minor_of(python) < 12
            mechanism = "PEP 523" if pep523 else "sys.monitoring"
            check(any(f"traced ({mechanism}" in n for n in t.notes), f"{v} {backend}: {t.notes}")
            check_call_counts(t, python, backend)


def test_recursion_depth_unchanged_with_sys_monitoring():
    """3.12+: sys.monitoring leaves calls inlined: depth 50 000 as without syscope."""
    found = [v for v in ("3.12.1", "3.13.0") if os.access(f"{PYENV}/{v}/bin/python3", os.X_OK)]
    if not found:
        raise Skip("no pyenv 3.12/3.13 here")
    for v in found:
        r = run_python("--", f"{PYENV}/{v}/bin/python3", os.path.join(FIXTURES, "deep_recursion.py"))
        check_eq(r.rc, 0, f"{v}: {r.describe()}")
        check_eq(r.out.splitlines(), ["depth 50000", "after 100"], f"{v}: the recursion")
        t = main_trace(r)
        check_eq(t.entries("down"), 50000 + 1 + 101, f"{v}: calls of down")
        t.check_paired()


def test_audit_hook_acts_only_on_the_events_before_a_worker():
    """Every other audit event (a sys._getframe each) costs a comparison, not a lookup."""
    need_python()
    r = syscope("sample", "--no-summary", "--", PYTHON,
                os.path.join(FIXTURES, "audit_events.py"))
    check_eq(r.rc, 0, r.describe())
    check_eq(r.out.splitlines(), ["after other events: False", "after os.fork: True"],
             "when BaseProcess._bootstrap was wrapped")


def plain_and_traced(args, cwd):
    """The same command under python and under syscope python: (rc, out, err) of each."""
    plain = subprocess.run([PYTHON] + args, cwd=cwd, capture_output=True, text=True)
    traced = syscope("python", "--no-summary", "--", PYTHON, *args, cwd=cwd)
    return plain, traced


def test_script_sees_what_python_gives_it():
    need_python()
    parent = tempfile.mkdtemp(prefix="syscope-it-")  # the harness removes the folders used
    os.mkdir(os.path.join(parent, "python"))
    shutil.copy(os.path.join(FIXTURES, "main_globals.py"), os.path.join(parent, "python"))
    for flags in ([], ["-I"], ["-P"]):
        plain, r = plain_and_traced(flags + ["python/main_globals.py"], parent)
        check_eq(r.rc, 0, r.describe())
        want, got = json.loads(plain.stdout), json.loads(r.out)
        check_eq(want["stack"], 1, "python: inspect.stack() at module level")
        # The bootstrap's module level, from which the script runs, is the one frame more.
        check_eq(got.pop("stack"), 2, f"{flags}: inspect.stack() at module level")
        want.pop("stack")
        check_eq(got, want, f"{flags}: what the script sees")
        check(os.path.isabs(got["__file__"]), got)


def test_script_errors_as_python_reports_them():
    need_python()
    folder = tempfile.mkdtemp(prefix="syscope-it-")
    bad = os.path.join(folder, "bad.py")
    with open(bad, "w") as f:
        f.write("x = 1\ndef (\n")
    plain, r = plain_and_traced([bad], folder)
    check_eq((r.rc, plain.returncode), (1, 1), r.describe())
    check_eq(r.err, plain.stderr, "a SyntaxError: no traceback of the bootstrap")
    # A socket: stat() finds it, open() fails even for root (ENXIO).
    sock_path = os.path.join(folder, "script.py")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(sock_path)
    try:
        plain, r = plain_and_traced([sock_path], folder)
    finally:
        sock.close()
    check_eq((r.rc, plain.returncode), (2, 2), r.describe())
    check("can't open file '%s': [Errno " % sock_path in plain.stderr, plain.stderr)
    check_eq(r.err, plain.stderr, "an unreadable script")


EMBEDDED_THREAD = """
import threading, time, types, _thread
end = time.monotonic() + 120
while isinstance(_thread.start_new_thread.__self__, types.ModuleType):
    if time.monotonic() > end:
        raise SystemExit("syscope's names were never installed")
    time.sleep(0.001)
def embedded_work():
    return sum(i * i for i in range(1000))
t = threading.Thread(target=embedded_work, name="embedded-worker")
t.start()
t.join()
"""


def test_thread_names_in_a_dlopened_libpython():
    lib = os.path.join(PYENV, "3.12.1", "lib", "libpython3.12.so.1.0")
    if not os.path.exists(lib):
        raise Skip(f"no {lib}")
    r = syscope("run", "--no-summary", "--", harness.fixture("py_embed"), lib, EMBEDDED_THREAD)
    check_eq(r.rc, 0, r.describe())
    check("py_embed: 0" in r.out, r.out)
    t = main_trace(r)
    check_eq(sorted(t.names.values()), ["embedded-worker"], "Python thread names")


def test_deep_recursion_raises_instead_of_crashing():
    """setrecursionlimit(100000) and depth 50 000: fine under 3.11's python, whose Python
    calls use no C stack; under the PEP 523 tracer a RecursionError, not a crash."""
    need_python()
    r = run_python("--", PYTHON, os.path.join(FIXTURES, "deep_recursion.py"))
    check_eq(r.rc, 0, r.describe())
    lines = r.out.splitlines()
    check_eq(lines[-1], "after 100", "the program goes on after the error")
    check(lines[0] == "depth 50000" or "(the C stack, under syscope python's tracer)"
          in lines[0], lines)
    t = main_trace(r)
    t.check_paired()
    if lines[0] != "depth 50000":
        check(any("RecursionError raised there instead of a crash" in n for n in t.notes),
              t.notes)
        check(t.entries("down") > 1000, f"calls of down: {t.entries('down')}")


if __name__ == "__main__":
    harness.main(globals())
