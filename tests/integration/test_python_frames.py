"""Python frames in samples (issue 15, the recording side): the raw SAMPLE records of a CPython
program carry its Python frames, each a code id (a PY_CODE record: file, qualified name, line
table) and an instruction index, innermost first, with the GIL state; PY_RUNTIME says which
interpreter was found and what syscope does with it. Asserted on the raw records, decoded with
tests/tools/records.py; expected lines come from the same interpreter's code.co_lines()."""
import collections
import glob
import json
import os
import subprocess

import harness
from harness import Skip, check, check_eq, syscope

import rawdump
import records

PYTHON = "/usr/bin/python3"  # Debian 12's CPython 3.11, what CI runs
PYENV = "/root/.pyenv/versions"
SCRIPTS = os.path.join(harness.SOURCE, "tests", "programs", "python")


def script(name):
    return os.path.join(SCRIPTS, name)


def line_of(name, marker):
    return harness.source_line(os.path.join("python", name), marker)


def pyenv(version):
    path = os.path.join(PYENV, version, "bin", "python3")
    if not os.path.exists(path):
        raise Skip(f"no {path}")
    return path


class PyFile:
    """The Python records of one raw file: runtimes, codes {id: code}, samples [(tid, s)]."""

    def __init__(self, path):
        self.path = path
        self.runtimes, self.codes, self.samples = [], {}, []
        for tid, rtype, flags, payload in rawdump.records(open(path, "rb").read()):
            if rtype == records.PY_RUNTIME:
                self.runtimes.append(records.decode_py_runtime(payload))
            elif rtype == records.PY_CODE:
                c = records.decode_py_code(payload)
                self.codes[c["id"]] = c
            elif rtype == records.SAMPLE:
                self.samples.append((tid, records.decode_sample(flags, payload)))

    def python_samples(self):
        return [(tid, s) for tid, s in self.samples if s["python"]]

    def qualname(self, code_id):
        c = self.codes.get(code_id)
        return c["qualname"] if c else None

    def innermost(self, s):
        frames = s["python"]["frames"]
        return self.qualname(frames[0][0]) if frames else None


def raw_files(r):
    files = r.raw_files()
    check(files, "no raw files\n" + r.describe())
    return files


def main_file(r):
    return PyFile(next(f for f in raw_files(r) if "-fork" not in f))


def interpreter_codes(python, path):
    """{qualname: (first line, {code-unit index: line})} of the code objects of `path`, as
    `python` compiles it, and its sys.hexversion."""
    helper = r"""
import json, sys, types
path = sys.argv[1]
def walk(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from walk(c)
out = {}
for co in walk(compile(open(path).read(), path, "exec")):
    lines = {}
    for start, end, line in co.co_lines():
        for b in range(start, end, 2):
            lines[b // 2] = line
    out[getattr(co, "co_qualname", co.co_name)] = [co.co_firstlineno, lines]
print(json.dumps({"hexversion": sys.hexversion, "codes": out}))
"""
    doc = json.loads(subprocess.run([python, "-c", helper, path], check=True,
                                    capture_output=True, text=True).stdout)
    codes = {q: (first, {int(k): v for k, v in lines.items()})
             for q, (first, lines) in doc["codes"].items()}
    return doc["hexversion"], codes


def check_cpu_bound(python, *verb):
    """cpu_caller.py: leaf() is the innermost Python frame of most samples, caller() next,
    the instruction indexes map to leaf's loop lines, the copied line tables decode as the
    interpreter's own co_lines() does."""
    path = script("cpu_caller.py")
    hexversion, expected = interpreter_codes(python, path)
    r = syscope(*(verb or ("sample",)), "-f", "1000", "--", python, path, "40")
    check_eq(r.rc, 0, r.describe())
    check("cpu_caller:" in r.out, r.out)
    f = main_file(r)

    check_eq(len(f.runtimes), 1, "PY_RUNTIME records")
    check_eq(f.runtimes[0]["state_name"], "frames", "PY_RUNTIME state")
    check_eq(f.runtimes[0]["version"], hexversion, "PY_RUNTIME version (sys.hexversion)")

    by_name = {c["qualname"]: c for c in f.codes.values() if c["filename"] == path}
    check("leaf" in by_name and "caller" in by_name,
          f"PY_CODE of leaf and caller with filename {path}: {sorted(by_name)}")
    for name in ("leaf", "caller"):
        code, (first, lines) = by_name[name], expected[name]
        check_eq(code["first_line"], first, f"{name}: first line")
        check_eq(code["version"], hexversion >> 16, f"{name}: PY_CODE version")
        check_eq(code["flags"], 0, f"{name}: nothing truncated")
        got = {i: records.py_line(code, i) for i in lines}
        check_eq(got, lines, f"{name}: the copied line table decodes as co_lines()")

    py = f.python_samples()
    bad = sum(bool(s["python"]["flags"]) for _, s in py)
    check(bad <= len(py) // 100, f"{bad} of {len(py)} walks stopped early or were cut")
    referenced = {c for _, s in py for c, _, _ in s["python"]["frames"]}
    check(referenced <= set(f.codes), f"code ids without PY_CODE: {referenced - set(f.codes)}")
    check(len(py) >= 0.8 * len(f.samples) and len(py) >= 20,
          f"{len(py)} of {len(f.samples)} samples have Python frames")
    leaf_samples = [s for _, s in py if f.innermost(s) == "leaf"]
    check(len(leaf_samples) > 0.6 * len(py), f"{len(leaf_samples)} of {len(py)} samples in leaf")

    loop = {line_of("cpu_caller.py", "LEAF_FOR"), line_of("cpu_caller.py", "LEAF_BODY")}
    call = line_of("cpu_caller.py", "CALLER_CALL")
    leaf_lines, caller_lines, natives = collections.Counter(), collections.Counter(), 0
    minor = (hexversion >> 16) & 0xff
    for s in leaf_samples:
        frames = s["python"]["frames"]
        check(len(frames) >= 3, f"leaf < caller < <module>: {frames}")
        check_eq(f.qualname(frames[1][0]), "caller", "the caller's frame is next")
        check_eq(f.qualname(frames[-1][0]), "<module>", "the outermost frame")
        check(frames[-1][2], "the outermost frame ends its eval group")
        if minor >= 11:  # Python-to-Python calls stay in one eval call
            check(not frames[0][2] and not frames[1][2], f"group ends: {frames}")
        leaf_lines[expected["leaf"][1].get(frames[0][1], expected["leaf"][0])] += 1
        caller_lines[expected["caller"][1].get(frames[1][1])] += 1
        natives += len(s["frames"]) > 0
    check(sum(leaf_lines[n] for n in loop) > 0.9 * len(leaf_samples),
          f"leaf's lines {dict(leaf_lines)}, the loop is {sorted(loop)}")
    check(caller_lines[call] > 0.95 * len(leaf_samples),
          f"caller's lines {dict(caller_lines)}, the call is on {call}")
    check_eq(natives, len(leaf_samples), "every sample keeps its native frames")
    held = sum(s["python"]["gil"] == records.PY_GIL_HELD for s in leaf_samples)
    check(held > 0.9 * len(leaf_samples), f"GIL held in {held} of {len(leaf_samples)}")


def test_cpu_bound_function_under_its_caller():
    check_cpu_bound(PYTHON)


def test_run_verb_reads_python_frames():
    check_cpu_bound(PYTHON, "run")


def test_instrument_verb_reads_python_frames():
    check_cpu_bound(PYTHON, "instrument", "-M", "sampling")


def check_gil(python):
    r = syscope("sample", "-f", "1000", "--", python, script("gil_threads.py"), "12")
    check_eq(r.rc, 0, r.describe())
    f = main_file(r)
    gil = collections.defaultdict(collections.Counter)  # innermost function -> states
    tids = collections.defaultdict(set)
    for tid, s in f.python_samples():
        name = f.innermost(s)
        gil[name][s["python"]["gil"]] += 1
        tids[name].add(tid)
    comp, spin = gil["compress_loop"], gil["spin"]
    check(sum(comp.values()) >= 20 and sum(spin.values()) >= 20, f"samples: {dict(gil)}")
    check(comp[records.PY_GIL_RELEASED] > 0.8 * sum(comp.values()),
          f"inside zlib.compress the GIL is released: {dict(comp)}")
    check(spin[records.PY_GIL_HELD] > 0.9 * sum(spin.values()),
          f"the pure-Python main thread holds it: {dict(spin)}")
    check(len(tids["compress_loop"]) == 1 and tids["compress_loop"] != tids["spin"],
          f"two threads: {dict(tids)}")
    compress = line_of("gil_threads.py", "COMPRESS_CALL")
    code = next(c for c in f.codes.values() if c["qualname"] == "compress_loop")
    on_call = sum(records.py_line(code, s["python"]["frames"][0][1]) == compress
                  for _, s in f.python_samples() if f.innermost(s) == "compress_loop")
    check(on_call > 0.9 * sum(comp.values()), f"{on_call} samples on the zlib call's line")


def test_gil_released_in_zlib_held_in_python():
    check_gil(PYTHON)


def test_each_thread_its_own_python_frames():
    r = syscope("sample", "-f", "1000", "--", PYTHON, script("threads.py"))
    check_eq(r.rc, 0, r.describe())
    f = main_file(r)
    where = collections.defaultdict(collections.Counter)
    for tid, s in f.python_samples():
        if f.innermost(s) in ("work_a", "work_b", "work_c"):
            where[f.innermost(s)][tid] += 1
            check_eq(f.qualname(s["python"]["frames"][1][0]), "Thread.run", "caller")
    check_eq(sorted(where), ["work_a", "work_b", "work_c"], "every worker sampled")
    owners = {name: c.most_common(1)[0][0] for name, c in where.items()}
    check_eq(len(set(owners.values())), 3, f"three threads: {owners}")
    for name, c in where.items():
        check_eq(len(c), 1, f"{name} runs on one thread only: {dict(c)}")
    main_tid = min(tid for tid, _ in f.samples)
    check(main_tid not in owners.values(), "not on the main thread")


def test_multiprocessing_pool_children():
    r = syscope("sample", "-f", "1000", "--", PYTHON, script("pool.py"), "8")
    check_eq(r.rc, 0, r.describe())
    check("pool:" in r.out, r.out)
    children = [PyFile(p) for p in raw_files(r) if "-fork" in p]
    check(len(children) >= 2, f"{len(children)} children")
    working = 0
    for f in children:
        check_eq([x["state_name"] for x in f.runtimes], ["frames"], f"{f.path}: PY_RUNTIME")
        referenced = {c for _, s in f.python_samples() for c, _, _ in s["python"]["frames"]}
        check(referenced <= set(f.codes),
              f"{f.path}: ids without a PY_CODE of its own: {referenced - set(f.codes)}")
        if f.codes:
            check_eq(min(f.codes), 1, f"{f.path}: the child's code ids start afresh")
        inner = collections.Counter(f.innermost(s) for _, s in f.python_samples())
        if inner["square_sum"] >= 10:
            working += 1
            code = next(c for c in f.codes.values() if c["qualname"] == "square_sum")
            check_eq(code["filename"], script("pool.py"), "square_sum's file")
    check(working >= 1, "a child's samples are in square_sum")


def test_no_python_reads_nothing():
    r = syscope("sample", "--no-python", "-f", "1000", "--", PYTHON, script("cpu_caller.py"),
                "20")
    check_eq(r.rc, 0, r.describe())
    f = main_file(r)
    check_eq([x["state_name"] for x in f.runtimes], ["off"], "PY_RUNTIME state")
    check(len(f.samples) >= 20, f"{len(f.samples)} native samples")
    check_eq(len(f.python_samples()), 0, "samples with Python frames")
    check_eq(len(f.codes), 0, "PY_CODE records")


def test_python_not_in_native_programs():
    r = syscope("sample", "-f", "500", "--", harness.fixture("hot"), "0.3")
    check_eq(r.rc, 0, r.describe())
    f = main_file(r)
    check(f.samples, "native samples")
    check_eq((f.runtimes, len(f.python_samples())), ([], 0), "no Python found or read")


def test_pyenv_3_10():
    check_cpu_bound(pyenv("3.10.13"))
    check_gil(pyenv("3.10.13"))


def test_pyenv_3_12():
    check_cpu_bound(pyenv("3.12.1"))
    check_gil(pyenv("3.12.1"))


def test_pyenv_3_13():
    check_cpu_bound(pyenv("3.13.0"))
    check_gil(pyenv("3.13.0"))


def test_unsupported_version_is_named_native_sampling_goes_on():
    python = pyenv("3.9.18")
    r = syscope("sample", "-f", "1000", "--", python, script("cpu_caller.py"), "20")
    check_eq(r.rc, 0, r.describe())
    f = main_file(r)
    check_eq([(x["state_name"], x["version"] >> 16) for x in f.runtimes],
             [("unsupported", 0x0309)], "PY_RUNTIME")
    check(len(f.samples) >= 20 and not f.python_samples(), "native samples only")
    notes = [n["text"] for n in r.metadata()["notes"]]
    check(any("CPython 3.9: no Python frames, native frames only" in n for n in notes), notes)


EMBEDDED = """
def embedded_leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
for _ in range(30):
    embedded_leaf(100000)
"""


def check_embedded(version, soname):
    lib = os.path.join(PYENV, version, "lib", soname)
    if not os.path.exists(lib):
        raise Skip(f"no {lib}")
    r = syscope("sample", "-f", "1000", "--", harness.fixture("py_embed"), lib, EMBEDDED)
    check_eq(r.rc, 0, r.describe())
    check("py_embed: 0" in r.out, r.out)
    f = main_file(r)
    check_eq([x["state_name"] for x in f.runtimes], ["frames"], "PY_RUNTIME")
    check_eq(f.runtimes[0]["version"] >> 16, int(version.split(".")[1]) | 0x300,
             "PY_RUNTIME version")
    inner = collections.Counter(f.innermost(s) for _, s in f.python_samples())
    check(inner["embedded_leaf"] >= 20, f"innermost Python frames: {dict(inner)}")
    code = next(c for c in f.codes.values() if c["qualname"] == "embedded_leaf")
    check_eq((code["filename"], code["first_line"]), ("<string>", 2), "PY_CODE")


def test_libpython_dlopened_rtld_local_3_12():
    check_embedded("3.12.1", "libpython3.12.so.1.0")


def test_libpython_dlopened_rtld_local_3_10():
    check_embedded("3.10.13", "libpython3.10.so.1.0")


def test_exec_child_reads_its_own_interpreter():
    r = syscope("sample", "-f", "1000", "--", PYTHON, script("spawn.py"))
    check_eq(r.rc, 0, r.describe())
    check("cpu_caller:" in r.out and "spawn: done" in r.out, r.out)
    files = [PyFile(p) for p in raw_files(r)]
    child = [f for f in files
             if any(c["qualname"] == "leaf" for c in f.codes.values())]
    check_eq(len(child), 1, f"one image ran cpu_caller.py: {[f.path for f in files]}")
    check_eq([x["state_name"] for x in child[0].runtimes], ["frames"], "its PY_RUNTIME")
    inner = collections.Counter(child[0].innermost(s) for _, s in child[0].python_samples())
    check(inner["leaf"] >= 20, f"its samples: {dict(inner)}")
    check(len(files) >= 2, "the parent's file too")


def test_walk_that_faults_is_recovered_and_python_turned_off():
    r = syscope("sample", "-f", "1000", "--", harness.fixture("py_fake"))
    check_eq(r.rc, 0, "the program was not harmed\n" + r.describe())
    check("py_fake: 1" in r.out, r.out)
    f = main_file(r)
    check_eq([x["state_name"] for x in f.runtimes], ["frames", "invalid"], "PY_RUNTIME")
    walked = [s for _, s in f.python_samples()]
    check(walked and all(s["python"]["flags"] == records.PY_STACK_BAD_CODE and
                         not s["python"]["frames"] and s["frames"] for s in walked),
          "each faulted walk: no Python frames, the native ones kept")
    check(len(f.samples) - len(walked) >= 50, "native samples go on once Python is off")
    notes = [n["text"] for n in r.metadata()["notes"]]
    check(any("CPython 3.11" in n and "Python frames off" in n for n in notes), notes)


# ---- the recording side under hostile conditions (review of issue 15) ----

SYSTEM_LIBPYTHON = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"  # Debian's libpython3.11


def notes_of(r):
    return [n["text"] for n in r.metadata()["notes"]]


def check_unloaded(lib, minor):
    """py_unload: Python frames while the interpreter runs; after Py_FinalizeEx and dlclose
    the program goes on, sampled, unharmed; PY_RUNTIME says Python frames went off, a note
    says why."""
    r = syscope("sample", "-f", "1000", "--", harness.fixture("py_unload"), lib, EMBEDDED)
    check_eq(r.rc, 0, "the program was not harmed\n" + r.describe())
    check("py_unload: 0 unloaded" in r.out, "dlclose unloaded libpython\n" + r.out)
    f = main_file(r)
    check_eq([x["state_name"] for x in f.runtimes], ["frames", "invalid"], "PY_RUNTIME")
    inner = collections.Counter(f.innermost(s) for _, s in f.python_samples())
    check(inner["embedded_leaf"] >= 20, f"innermost Python frames: {dict(inner)}")
    off = f.runtimes[1]["ts"]
    after = [s for _, s in f.samples if s["ts"] > off]
    check(len(after) >= 50 and not any(s["python"] for s in after),
          f"{len(after)} samples after the unload, all native")
    check(any(f"CPython 3.{minor}" in n and "was unloaded" in n for n in notes_of(r)),
          notes_of(r))


def test_libpython_unloaded_turns_python_frames_off():
    if not os.path.exists(SYSTEM_LIBPYTHON):
        if os.environ.get("CI") == "true":
            raise AssertionError(f"no {SYSTEM_LIBPYTHON}: Debian's libpython3.11 is needed")
        raise Skip(f"no {SYSTEM_LIBPYTHON} (Debian's libpython3.11)")
    check_unloaded(SYSTEM_LIBPYTHON, 11)


def test_libpython_unloaded_turns_python_frames_off_3_12():
    lib = os.path.join(PYENV, "3.12.1", "lib", "libpython3.12.so.1.0")
    if not os.path.exists(lib):
        raise Skip(f"no {lib}")
    check_unloaded(lib, 12)


def hostile(mode):
    r = syscope("sample", "-f", "1000", "--", harness.fixture("py_hostile"), mode)
    check_eq(r.rc, 0, "the program was not harmed\n" + r.describe())
    check("py_hostile: 1" in r.out, r.out)
    return r, main_file(r)


def test_walk_faults_recovered_under_the_programs_own_sigsegv_handler():
    """The program installs a SIGSEGV handler (as faulthandler does): the walk's faults are
    still syscope's to recover and never reach it; its own fault does, once, and its
    handler's repair lets it go on."""
    r, f = hostile("own-handler")
    check("py_hostile: own faults 1" in r.out and "then the handler" in r.out, r.out)
    check_eq([x["state_name"] for x in f.runtimes], ["frames", "invalid"], "PY_RUNTIME")
    walked = [s for _, s in f.python_samples()]
    check(walked and all(s["python"]["flags"] == records.PY_STACK_BAD_CODE and s["frames"]
                         for s in walked), "each faulted walk keeps its native frames")
    check(any("Python frames off" in n for n in notes_of(r)), notes_of(r))


def test_programs_sa_resethand_handler_runs_once_as_the_kernel_would():
    """SA_RESETHAND: the program's handler gets its own fault, and the action is the
    default after it, as the kernel does it; the walk's faults never reach it."""
    r, f = hostile("own-resethand")
    check("py_hostile: own faults 1" in r.out and "then SIG_DFL" in r.out, r.out)
    check_eq([x["state_name"] for x in f.runtimes], ["frames", "invalid"], "PY_RUNTIME")


def test_thread_state_of_another_thread_turns_python_frames_off():
    """The TSS key leads to a thread state whose native_thread_id is not the sampled
    thread's (a layout moved in a patch release): checked once, refused with a note, no
    frame read from it."""
    r, f = hostile("bad-tid")
    check_eq([x["state_name"] for x in f.runtimes], ["frames", "invalid"], "PY_RUNTIME")
    check_eq(f.python_samples(), [], "no Python part read from a wrong thread state")
    check(len(f.samples) >= 50, f"{len(f.samples)} native samples")
    check(any("native_thread_id" in n and "Python frames off" in n for n in notes_of(r)),
          notes_of(r))


def test_fault_while_writing_a_code_record_leaves_a_lost_record():
    """The line table of the one code object runs into unreadable memory: the fault comes
    after the PY_CODE record was reserved. Its space becomes one LOST record, counted with
    cause "fault"; the rest of the thread's records stay readable; the code gets id 0 once
    and is not read again, so Python frames stay on."""
    r, f = hostile("bad-linetable")
    raw = open(f.path, "rb").read()
    types = collections.Counter(t for _, t, _, _ in rawdump.records(raw))
    check_eq(types[records.LOST], 1, "one LOST record in place of the PY_CODE")
    check_eq(f.codes, {}, "no PY_CODE record")
    check_eq([x["state_name"] for x in f.runtimes], ["frames"], "PY_RUNTIME")
    py = [s for _, s in f.python_samples()]
    check(len(py) >= 50, f"{len(py)} samples with a Python part after the fault")
    check(sum(s["python"]["flags"] == records.PY_STACK_BAD_CODE for s in py) == 1,
          "only the first walk faulted")
    check(all(s["python"]["frames"] and s["python"]["frames"][0][0] == 0 for s in py[1:]),
          "later walks give the frame code id 0 (unknown code)")
    losses = r.metadata()["images"][0]["losses"]
    check_eq(losses["by_cause"], {"fault": 1}, f"losses: {losses}")


FAULTING = """
import ctypes
def fh_leaf(n):
    s = 0
    for i in range(n):
        s += i
    return s
for _ in range(20):
    fh_leaf(100000)
ctypes.string_at(0)
"""


def test_faulthandler_on_python_frames_read_its_own_crash_reported():
    """-X faulthandler installs SIGSEGV/SIGBUS handlers: Python frames are still read, and
    the program's own crash reaches faulthandler (its traceback), then ends the program,
    recorded as a crash at the faulting call."""
    r = syscope("sample", "-f", "1000", "--", PYTHON, "-X", "faulthandler", "-c", FAULTING)
    check_eq(r.rc, 128 + 11, "128 + SIGSEGV\n" + r.describe())
    check("Fatal Python error: Segmentation fault" in r.err and
          'File "<string>", line 10 in <module>' in r.err, "faulthandler's traceback\n" + r.err)
    check("crashed (signal 11) in " in r.err and "crashed (signal 11) in [syscope]" not in r.err,
          "the crash is where the program faulted\n" + r.err)
    check_eq(r.metadata()["exit"], {"reason": "signal", "status": 11}, "recorded end")
    f = main_file(r)
    inner = collections.Counter(f.innermost(s) for _, s in f.python_samples())
    check(inner["fh_leaf"] >= 20, f"innermost Python frames: {dict(inner)}")


def test_libpython_whose_dlopen_fails_is_forgotten():
    """A libpython look-alike is mapped (syscope sees an interpreter not relocated yet), then
    its dlopen fails and it is unmapped: no sample and no thread start reads its tables; a
    note says it went away; no PY_RUNTIME, the program's samples go on."""
    lib = os.path.join(harness.FIXTURES, "badpy", "libpython3.11.so.1.0")
    r = syscope("sample", "-f", "1000", "--", harness.fixture("py_dlopen_fails"), lib)
    check_eq(r.rc, 0, "the program was not harmed\n" + r.describe())
    check("py_dlopen_fails: failed" in r.out and "py_dlopen_fails: 1" in r.out, r.out)
    f = main_file(r)
    check_eq(f.runtimes, [], "no PY_RUNTIME: no interpreter was decided on")
    check(len(f.samples) >= 50 and not f.python_samples(), f"{len(f.samples)} native samples")
    check(any("went away before it was relocated" in n and "libpython3.11.so.1.0" in n
              for n in notes_of(r)), notes_of(r))


if __name__ == "__main__":
    harness.main(globals())
