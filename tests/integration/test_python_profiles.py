"""Python frames spliced into native stacks, in every output (issue 15, the reader side).

The synthetic session of tests/tools/gen_py_session.c has exact counts (its comment says
what it holds); the outputs must show its Python frames with file and line where CPython
evaluated them, native frames of other modules under them, the GIL waits, and the traced
calls as regions with their statistics. Then the same on real interpreters: Debian's
/usr/bin/python3, and the pyenv builds of 3.10-3.13 where this machine has them."""
import glob
import json
import os
import sqlite3
import subprocess
import tempfile

import harness
from harness import check, check_eq, syscope

import pftrace

GEN_PY_SESSION = os.path.join(harness.BUILD, "bin", "gen_py_session")
TRACE_PROCESSOR = os.path.join(harness.SOURCE, "..", "shared", "tools", "trace_processor_shell")
PID = 5151

MAIN_DEFLATE = "gen_main;Py_RunMain;<module>;Trainer.step;Model.forward;gen_deflate"


def py_session(*convert_args, gen_args=()):
    """A fresh synthetic Python session converted with `convert_args`: (Result, folder)."""
    workdir = tempfile.mkdtemp(prefix="syscope-py-")
    harness._workdirs.append(workdir)
    session = os.path.join(workdir, "session")
    subprocess.run([GEN_PY_SESSION, session, "--pid", str(PID), *gen_args], check=True)
    r = syscope("convert", *convert_args, session)
    check_eq(r.rc, 0, r.describe())
    return r, session


def folded(session, metric):
    with open(os.path.join(session, f"{metric}-{PID}.folded")) as f:
        return dict(line.rsplit(" ", 1) for line in f.read().splitlines())


def test_profiles_show_python_frames_with_lines():
    r, s = py_session("--output-format", "text json folded")
    # The clean view: eval frames replaced by the Python frames they ran, the call
    # machinery between them and the interpreter's helpers at the leaf gone, the native
    # module (gen_deflate, the stand-in for zlib) under its Python caller.
    check_eq(folded(s, "sampling_cpu_clock"), {
        MAIN_DEFLATE: "40",
        "gen_main;Py_RunMain;<module>;Trainer.step;Model.forward": "20",
        "[truncated];<module>;Trainer.step;Model.forward;gen_deflate": "5",
    }, "CPU-time folded stacks")
    p = harness.Profile(os.path.join(s, f"sampling_cpu_clock-{PID}.json"))
    fwd = p.function("Model.forward")
    check_eq((fwd["file"], fwd["line"], fwd["module"]), ("/app/model.py", 25, "/app/model.py"),
             "Model.forward's own time is on its line 25")
    check_eq((fwd["samples"], fwd["self_samples"]), (65, 20), "Model.forward's samples")
    check_eq(p.self_samples("gen_deflate"), 45, "gen_deflate under Model.forward")
    for interp in ("_PyEval_EvalFrameDefault", "_PyObject_Vectorcall", "zlib_compress",
                   "PyNumber_Add"):
        check(p.function(interp) is None, f"{interp} hidden in the clean view")
    lines = {(ln["file"], ln["line"]): ln["samples"] for ln in p.meta["lines"]}
    check_eq(lines.get(("/app/model.py", 22)), 45, "Model.forward:22, where it calls zlib")
    check_eq(lines.get(("/app/train.py", 13)), 65, "Trainer.step:13")
    check_eq(lines.get(("/app/train.py", 5)), 65, "<module>:5")
    text = open(os.path.join(s, f"sampling_cpu_clock-{PID}.txt")).read()
    for want in ("|_Trainer.step", "|_Model.forward", "/app/model.py:22", "/app/model.py:25"):
        check(want in text, f"{want} in the text profile")
    check("Python: CPython 3.11.7 in process 5151 (libgen_py_interp.so): Python frames read "
          "in samples, calls traced" in r.err, r.err)
    check("Python: 5 CPU-time samples of process 5151 had more Python eval groups than native "
          "eval frames" in r.err, r.err)
    check("30.8%       20  Model.forward                            model.py:25" in r.err,
          r.err)


def test_python_native_keeps_interpreter_frames():
    _r, s = py_session("--output-format", "folded", "--python-native")
    f = folded(s, "sampling_cpu_clock")
    check_eq(f.get("gen_main;Py_RunMain;_PyEval_EvalFrameDefault;<module>;_PyObject_Vectorcall;"
                   "_PyEval_EvalFrameDefault;Trainer.step;Model.forward;zlib_compress;"
                   "gen_deflate"), "40", f)
    check_eq(f.get("gen_main;Py_RunMain;_PyEval_EvalFrameDefault;<module>;_PyObject_Vectorcall;"
                   "_PyEval_EvalFrameDefault;Trainer.step;Model.forward;PyNumber_Add"), "20", f)


def test_gil_waits_in_profiles_summary_and_trace():
    r, s = py_session("--output-format", "folded pftrace")
    check_eq(folded(s, "sampling_wall_clock"), {
        "gen_thread_root;worker;[waiting for the GIL]": "30",
        "gen_thread_root;worker;gen_deflate": "10",
        "gen_thread_root;worker": "10",
    }, "wall-clock folded stacks")
    check("Python: thread 1 (tid 5152, worker) waited for the GIL in 30 of its 50 wall-clock "
          "samples (60.0%)" in r.err, r.err)
    check("thread 0 (tid 5151" not in r.err, "the main thread never waited")
    t = pftrace.Trace(open(os.path.join(s, f"perfetto-trace-{PID}.pftrace"), "rb").read())
    check_eq(t.errors, [], "trace problems")
    gil = {}
    for track, _ts, value in t.counters:
        name = t.tracks[track]["name"]
        if name.startswith("GIL "):
            gil.setdefault(name.split()[1], []).append(value)
    check_eq(sorted(gil), ["5151", "5152"], "a GIL track per Python thread")
    check_eq(sorted(gil["5152"]), [1.0] * 10 + [2.0] * 10 + [3.0] * 30, "worker's GIL states")
    check_eq(set(gil["5151"]), {1.0}, "the main thread held the GIL")
    stacks = {tuple(f[0] for f in fr) for _p, tid, _ts, fr in t.samples if tid == PID}
    check(tuple(MAIN_DEFLATE.split(";")) in stacks, stacks)
    files = {(f[0], f[1], f[2]) for _p, _t, _ts, fr in t.samples for f in fr}
    check(("Model.forward", "/app/model.py", 22) in files, files)


def test_perfetto_trace_processor_reads_python_frames():
    if not os.access(TRACE_PROCESSOR, os.X_OK):
        raise harness.Skip(f"{TRACE_PROCESSOR} is not here")
    _r, s = py_session("--output-format", "pftrace")
    q = os.path.join(s, "q.sql")
    with open(q, "w") as f:
        f.write("SELECT f.name, COUNT(*) FROM perf_sample s JOIN stack_profile_callsite c "
                "ON s.callsite_id = c.id JOIN stack_profile_frame f ON c.frame_id = f.id "
                "GROUP BY f.name ORDER BY f.name;")
    p = subprocess.run([TRACE_PROCESSOR, "-q", q, os.path.join(s, f"perfetto-trace-{PID}.pftrace")],
                       capture_output=True, text=True)
    if p.returncode and "not found" in p.stderr:
        raise harness.Skip(f"trace_processor_shell does not start: {p.stderr.strip()}")
    check_eq(p.returncode, 0, p.stderr)
    leaves = dict(line.replace('"', "").split(",") for line in p.stdout.splitlines()[1:])
    check_eq(leaves, {"Model.forward": "20", "[waiting for the GIL]": "30",
                      "gen_deflate": "55", "worker": "10"}, "sample leaves")


def test_rocpd_and_csv_carry_python_frames():
    _r, s = py_session("--output-format", "rocpd csv folded")
    db = sqlite3.connect(os.path.join(s, f"rocpd-{PID}.db"))
    stacks = [json.loads(row[0]) for row in db.execute(
        "SELECT line_info FROM samples WHERE call_stack LIKE '%Model.forward%'")]
    check_eq(len(stacks), 65, "samples in Model.forward")
    where = [(f["name"], f["file"], f["line"]) for f in stacks[0]]
    check(("Trainer.step", "/app/train.py", 13) in where, where)
    check(any(w[0] == "Model.forward" and w[1] == "/app/model.py" for w in where), where)
    rows = open(os.path.join(s, f"sampling_cpu_clock-{PID}.csv")).read().splitlines()
    check(any(r.startswith("Model.forward,/app/model.py,/app/model.py,25,20,") for r in rows),
          rows)
    # The database alone gives the same profile back.
    out = os.path.join(os.path.dirname(s), "from-db")
    c = syscope("convert", "-f", "folded", "-o", out, os.path.join(s, f"rocpd-{PID}.db"))
    check_eq(c.rc, 0, c.describe())
    for metric in ("sampling_cpu_clock", "sampling_wall_clock"):
        check_eq(open(os.path.join(out, f"{metric}-{PID}.folded")).read(),
                 open(os.path.join(s, f"{metric}-{PID}.folded")).read(), metric)


def test_traced_python_calls_are_regions_with_statistics():
    _r, s = py_session("--output-format", "json folded")
    p = harness.Profile(os.path.join(s, f"wall_clock-{PID}.json"))
    check_eq(harness.calls_of(p), {"Trainer.step": 4, "Model.forward": 4}, "calls")
    check_eq(round(p.function("Trainer.step")["inclusive"], 6), 0.012, "Trainer.step time")
    step = harness.children(p.thread_trees()[0])["Trainer.step"]
    stats = step["node"]["inclusive"]["stats"]
    check_eq((stats["count"], round(stats["min"], 6), round(stats["max"], 6),
              round(stats["mean"], 6)), (4, 0.001, 0.006, 0.003), "Trainer.step per call")
    check("Model.forward" in harness.children(step), "Model.forward inside step")
    check_eq(folded(s, "wall_clock"), {"Trainer.step": "6000",
                                        "Trainer.step;Model.forward": "6000"}, "regions folded")


def test_damaged_python_part_is_counted_and_native_kept():
    r, s = py_session("--output-format", "folded", gen_args=("--damaged",))
    check("Python: 3 samples of process 5151 had a damaged Python part; they keep their "
          "native frames only" in r.err, r.err)
    check("Python: 2 wall-clock samples of process 5151 had more than 256 Python frames; "
          "their outermost ones are missing" in r.err, r.err)
    check("Python: in 1 wall-clock samples of process 5151 the walk of the Python frames "
          "stopped at a code object that did not check out" in r.err, r.err)
    f = folded(s, "sampling_wall_clock")
    check_eq(f.get("gen_deflate"), "3", f)
    check_eq(f.get("gen_thread_root;worker"), "13", f)
    check_eq(f.get("gen_thread_root;worker;[waiting for the GIL]"), "30", f)


SYSTEM_PYTHON = "/usr/bin/python3"
PYENV_PYTHONS = sorted(glob.glob("/root/.pyenv/versions/3.1[0-3].*/bin/python3"))


def script(name):
    return os.path.join(harness.SOURCE, "tests", "programs", "python", name)


def sample_python(python, name, *args, formats="folded json", seconds="1"):
    if not os.access(python, os.X_OK):
        raise harness.Skip(f"{python} is not here")
    r = syscope("sample", *args, "--output-format", formats, "--", python, script(name), seconds)
    check_eq(r.rc, 0, r.describe())
    return r


def folded_of(r, metric="sampling_cpu_clock"):
    with open(r.path(f"{metric}-{r.main_pid()}.folded")) as f:
        return {k: int(v) for k, v in (line.rsplit(" ", 1) for line in f.read().splitlines())}


def check_cpu_profile(python):
    r = sample_python(python, "pm_cpu.py")
    version = r.err.split("Python: CPython ", 1)[-1].split(" ", 1)[0]
    check("Python frames read in samples" in r.err, r.err)
    stacks = folded_of(r)
    total = sum(stacks.values())
    hot = sum(n for k, n in stacks.items() if k.endswith("<module>;main;outer;leaf"))
    check(hot > 0.5 * total, f"{python} ({version}): main > outer > leaf in {hot} of {total}")
    for k in stacks:
        check("<module>" not in k or "_PyEval_EvalFrameDefault" not in k.split("<module>")[1],
              f"interpreter frames between Python frames: {k}")
    p = r.profile()
    leaf = p.function("leaf")
    loop = harness.source_line("python/pm_cpu.py", "LEAF-LOOP")
    check(leaf["file"].endswith("pm_cpu.py") and leaf["line"] in (loop - 1, loop),
          f"{version}: leaf's hottest line {leaf['file']}:{leaf['line']}")
    check(leaf["self_samples"] > 0.5 * p.total, f"{version}: leaf's own share {leaf}")
    call = harness.source_line("python/pm_cpu.py", "OUTER-CALL")
    outer = [ln for ln in p.meta["lines"] if ln["file"] == leaf["file"] and ln["line"] == call]
    check(outer and outer[0]["samples"] >= leaf["self_samples"],
          f"{version}: outer's samples on its call line {call}: {outer}")


def test_real_cpu_profile_system_python():
    check_cpu_profile(SYSTEM_PYTHON)


def test_real_cpu_profile_other_versions():
    if not PYENV_PYTHONS:
        raise harness.Skip("no pyenv interpreters here")
    for python in PYENV_PYTHONS:
        check_cpu_profile(python)


def test_real_zlib_frames_under_python_function():
    r = sample_python(SYSTEM_PYTHON, "pm_zlib.py")
    stacks = folded_of(r)
    total = sum(stacks.values())
    under = sum(n for k, n in stacks.items()
                if "<module>;compress_loop;" in k and "libz.so" in k.split("compress_loop;")[1])
    check(under > 0.5 * total, f"zlib frames under compress_loop in {under} of {total}")
    p = r.profile()
    libz = sum(f["self_samples"] for f in p.meta["functions"] if f["module"].startswith("libz"))
    check(libz > 0.5 * p.total, f"libz's own share {libz} of {p.total}")


def test_real_gil_contention_shows_waiting_samples():
    r = sample_python(SYSTEM_PYTHON, "pm_gil.py", "--sampling-realtime")
    stacks = folded_of(r, "sampling_wall_clock")
    waiting = {k: n for k, n in stacks.items() if k.endswith("ticker;[waiting for the GIL]")}
    ticker = sum(n for k, n in stacks.items() if ";ticker" in k)
    check(sum(waiting.values()) > 0.5 * ticker,
          f"ticker waited in {sum(waiting.values())} of {ticker} samples")
    spinner = sum(n for k, n in stacks.items() if k.endswith(";spinner"))
    check(spinner > 0.5 * sum(n for k, n in stacks.items() if ";spinner" in k),
          "spinner runs Python itself")
    check(" waited for the GIL in " in r.err, r.err)


def test_real_trace_and_database_carry_python_frames():
    r = sample_python(SYSTEM_PYTHON, "pm_cpu.py", formats="pftrace rocpd", seconds="0.5")
    pid = r.main_pid()
    t = pftrace.Trace(open(r.path(f"perfetto-trace-{pid}.pftrace"), "rb").read())
    check_eq(t.errors, [], "trace problems")
    leaves = [fr[-1] for _p, _t, _ts, fr in t.samples if fr]
    on_leaf = [f for f in leaves if f[0] == "leaf"]
    check(len(on_leaf) > 0.5 * len(leaves) and on_leaf[0][1].endswith("pm_cpu.py"), leaves[:5])
    gil = [v for track, _ts, v in t.counters if t.tracks[track]["name"].startswith("GIL ")]
    check(gil and gil.count(1.0) > 0.5 * len(gil), f"the GIL held in most samples: {gil[:10]}")
    db = sqlite3.connect(r.path(f"rocpd-{pid}.db"))
    n = db.execute("SELECT COUNT(*) FROM samples WHERE line_info LIKE "
                   "'%\"name\":\"leaf\",\"file\":\"%pm_cpu.py\"%'").fetchone()[0]
    check(n > 0.5 * len(leaves), f"{n} rocpd samples in leaf")


if __name__ == "__main__":
    harness.main(globals())
