"""GPU time by the Python line that launched it (issue 15), without a GPU: the synthetic
session of tests/tools/gen_py_session.c --gpu has CUDA calls from Python (PY_CALLSITE) and
the GPU ops they started, with known device times (its comment lists them); the reader must
join them by correlation id into gpu_time_by_python-PID.txt/json and the summary. Then a
real Python program without CUDA: nothing of the kind may appear. test_python_gpu.py is the
same on a GPU, with PyTorch."""
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile

import harness
from harness import Skip, check, check_eq, syscope

import pftrace
from rocpd_checks import check_conventions
import rawdump
import records

CALLER = os.path.join(harness.SOURCE, "tests", "programs", "py_callsite.py")

GEN_PY_SESSION = os.path.join(harness.BUILD, "bin", "gen_py_session")
PID = 5151


def gpu_session(*convert_args):
    workdir = tempfile.mkdtemp(prefix="syscope-pygpu-")
    harness._workdirs.append(workdir)
    session = os.path.join(workdir, "session")
    subprocess.run([GEN_PY_SESSION, session, "--pid", str(PID), "--gpu"], check=True)
    r = syscope("convert", *convert_args, session)
    check_eq(r.rc, 0, r.describe())
    return r, session


def test_gpu_time_by_python_function_and_line():
    r, s = gpu_session("--output-format", "text json folded")
    p = harness.Profile(os.path.join(s, f"gpu_time_by_python-{PID}.json"))
    check_eq(p.metric, "gpu_time_by_python", "the profile's metric")
    # 12 calls with device time: the allocation without any and the native launch are out.
    check_eq(p.total, 12, "CUDA calls from Python with GPU work")
    check(abs(p.meta["seconds"] - 0.020) < 1e-9, f"20 ms of device time: {p.meta['seconds']}")
    lines = {(ln["file"], ln["line"]): ln for ln in p.meta["lines"]}
    want = {("/app/model.py", 22): (5, 0.010), ("/app/train.py", 13): (2, 0.005),
            ("/app/model.py", 25): (3, 0.003), ("/app/train.py", 36): (2, 0.002)}
    for key, (calls, sec) in want.items():
        check(key in lines, f"line {key} in {sorted(lines)}")
        check_eq(lines[key]["self_samples"], calls, f"calls launched by {key}")
        check(abs(lines[key]["exclusive"] - sec) < 1e-9, f"{key}: {lines[key]}")
    # Trainer.step:13 is also the caller of every Model.forward launch: 18 ms under it.
    check(abs(lines[("/app/train.py", 13)]["inclusive"] - 0.018) < 1e-9, "Trainer.step:13")
    fwd, step = p.function("Model.forward"), p.function("Trainer.step")
    check_eq((fwd["module"], fwd["samples"]), ("/app/model.py", 8), "Model.forward's calls")
    check(abs(fwd["inclusive"] - 0.013) < 1e-9 and abs(step["inclusive"] - 0.018) < 1e-9,
          f"inclusive GPU time: {fwd} {step}")
    check_eq(sorted((t["index"], t["calls"]) for t in p.threads()), [(0, 10), (1, 2)],
             "calls per launching thread")
    # The call tree: <module> > Trainer.step > Model.forward on the main thread.
    main = harness.children(p.thread_trees()[0])
    check_eq(list(main), ["<module>"], "the main thread's root")
    step_node = harness.children(main["<module>"])["Trainer.step"]
    check_eq(list(harness.children(step_node)), ["Model.forward"], "under Trainer.step")
    with open(os.path.join(s, f"gpu_time_by_python-{PID}.txt")) as f:
        text = f.read()
    check("GPU TIME LAUNCHED BY PYTHON LINE" in text and "/app/model.py:22" in text, text[:600])
    check("12 CUDA calls from Python" in text, text[:300])
    with open(os.path.join(s, f"gpu_time_by_python-{PID}.folded")) as f:
        folded = dict(line.rsplit(" ", 1) for line in f.read().splitlines())
    check_eq(folded, {"<module>;Trainer.step": "5000", "<module>;Trainer.step;Model.forward":
                      "13000", "worker": "2000"}, "folded stacks in microseconds of GPU time")


def test_summary_lists_gpu_time_by_python_line():
    r, _ = gpu_session()
    lines = [ln for ln in r.err.splitlines() if "GPU time launched by Python line" in ln]
    check_eq(len(lines), 1, r.err)
    # 20 of the 24 ms of GPU work: the native launch's 4 ms have no Python line.
    check("0.020000 s of device time from 12 CUDA calls, 83.3% of its GPU work" in lines[0],
          lines[0])
    rows = r.err.splitlines()
    at = rows.index(lines[0])
    top = [row.split()[4:7] for row in rows[at + 1:at + 5]]
    check_eq(top, [["/app/model.py:22", "Model.forward", "(5"],
                   ["/app/train.py:13", "Trainer.step", "(2"],
                   ["/app/model.py:25", "Model.forward", "(3"],
                   ["/app/train.py:36", "worker", "(2"]], f"the lines by GPU time:\n{r.err}")
    check("50.0%" in rows[at + 1], rows[at + 1])


def test_rocpd_and_summary_verb_give_gpu_time_by_python_line():
    _, s = gpu_session("--output-format", "rocpd")
    db = sqlite3.connect(os.path.join(s, f"rocpd-{PID}.db"))
    check_conventions(db)
    stacks = db.execute("SELECT json_extract(line_info, '$[#-1].line'), COUNT(*) FROM regions "
                        "WHERE name = 'cudaLaunchKernel' GROUP BY 1 ORDER BY 1").fetchall()
    check_eq(stacks, [(22, 6), (25, 3), (36, 2)], "the launches' innermost Python lines")
    r = syscope("summary", "--format", "json", s)
    check_eq(r.rc, 0, r.describe())
    got = [(row["file"], row["line"], row["function"], row["calls"], row["gpu_ms"])
           for row in json.loads(r.out)["gpu_by_python_line"]]
    check_eq(got, [("/app/model.py", 22, "Model.forward", 5, 10.0),
                   ("/app/train.py", 13, "Trainer.step", 2, 5.0),
                   ("/app/model.py", 25, "Model.forward", 3, 3.0),
                   ("/app/train.py", 36, "worker", 2, 2.0)], "syscope summary's section")


def test_perfetto_api_calls_and_gpu_ops_carry_the_python_stack():
    _, s = gpu_session("--output-format", "pftrace")
    names = [f for f in os.listdir(s) if f.endswith(".pftrace")]
    check_eq(len(names), 1, f"one trace in {os.listdir(s)}")
    t = pftrace.Trace(open(os.path.join(s, names[0]), "rb").read())
    check_eq(t.errors, [], "a valid trace")
    at22 = ("Model.forward (/app/model.py:22) <- Trainer.step (/app/train.py:13) <- "
            "<module> (/app/train.py:5)")
    stacks = {}
    for _track, name, cat, _start, _end, args in t.slices:
        stacks.setdefault((cat, name), []).append(args.get("python"))
    launches = stacks[("CUDA_RUNTIME_API", "cudaLaunchKernel")]
    check_eq(len(launches), 11, "launch slices")
    check_eq(launches.count(at22), 6, "launches from model.py:22 (one without device time)")
    check_eq(launches.count("worker (/app/train.py:36)"), 2, "the worker's launches")
    copies = stacks[("CUDA_RUNTIME_API", "cudaMemcpyAsync")]
    check_eq(copies, ["Trainer.step (/app/train.py:13) <- <module> (/app/train.py:5)"] * 2,
             "copy slices")
    kernels = [a for (cat, _), v in stacks.items() if cat == "KERNEL_DISPATCH" for a in v]
    check_eq(len(kernels), 11, "kernel slices")
    check_eq(kernels.count(at22), 5, "kernels launched from model.py:22")
    check_eq(kernels.count(None), 1, "the native launch's kernel has no Python stack")


def marked_line(mark):
    with open(CALLER) as f:
        return next(n for n, line in enumerate(f, 1) if f"# {mark} LINE" in line)


def raw_callsites(r, with_file=False):
    """{corr_id: [(qualname, line), ...] innermost first}, and the tid of each call;
    with_file: (filename, qualname, line)."""
    codes, sites, tids = {}, [], {}
    for path in r.raw_files():
        for tid, rtype, _flags, payload in rawdump.records(open(path, "rb").read()):
            if rtype == records.PY_CODE:
                c = records.decode_py_code(payload)
                codes.setdefault(c["id"], c)
            elif rtype == records.PY_CALLSITE:
                sites.append((tid, records.decode_py_callsite(payload)))
    stacks = {}
    for tid, cs in sites:
        stacks[cs["corr_id"]] = [
            ((os.path.basename(codes[code]["filename"]),) if with_file else ()) +
            (codes[code]["qualname"], records.py_line(codes[code], index))
            for code, index, _end in cs["python"]["frames"]]
        tids[cs["corr_id"]] = tid
    return stacks, tids


PYENV_PYTHONS = sorted(glob.glob("/root/.pyenv/versions/3.1[0-3].*/bin/python3"))


def test_runtime_walks_the_callers_python_frames():
    """The runtime's entry point, called as the CUDA tracer calls it (normal context, the
    calling thread), from known lines of real interpreters: Debian's, and the pyenv builds of
    3.10-3.13 where this machine has them."""
    pythons = [p for p in [shutil.which("python3")] + PYENV_PYTHONS if p]
    if not pythons:
        raise Skip("no python3")
    for py in pythons:
        check_callsites_of(py)


def check_callsites_of(py):
    r = syscope("sample", "--", py, CALLER)
    check_eq(r.rc, 0, r.describe())
    check("on=1" in r.out and "py_callsite ok" in r.out, r.describe())
    stacks, tids = raw_callsites(r)
    check_eq(sorted(stacks), [1, 2, 3, 4, 5, 101, 102, 103], "one record per call")
    launch, step, worker, module = (marked_line(m) for m in ("LAUNCH", "STEP", "WORKER",
                                                             "MODULE"))
    for corr in range(1, 6):
        check_eq(stacks[corr], [("launch", launch), ("step", step), ("<module>", module)],
                 f"{py}: the stack of call {corr}")
    for corr in range(101, 104):
        check_eq(stacks[corr][:2], [("launch", launch), ("worker", worker)],
                 f"{py}: the worker's call {corr}")
    check_eq(len({tids[c] for c in (1, 101)}), 2, f"{py}: each call on its thread's stream")


MEMO = os.path.join(harness.SOURCE, "tests", "programs", "py_callsite_memo.py")


def test_call_sites_from_frames_seen_before_keep_their_lines():
    """A thread's memo of its last call site's frames (python/frames.c) spares repeated
    frames the code table's lookup: a frame that calls from another line must still come
    out at that line."""
    pythons = [p for p in [shutil.which("python3")] + PYENV_PYTHONS if p]
    if not pythons:
        raise Skip("no python3")
    with open(MEMO) as f:
        text = f.read().splitlines()
    launch, first, second = (next(n for n, line in enumerate(text, 1) if f"# {m} LINE" in line)
                             for m in ("LAUNCH", "FIRST", "SECOND"))
    for py in pythons:
        r = syscope("sample", "--", py, MEMO)
        check_eq(r.rc, 0, r.describe())
        check("py_callsite_memo ok" in r.out, r.describe())
        stacks, _ = raw_callsites(r, with_file=True)
        name = os.path.basename(MEMO)
        for corr in range(201, 207):
            check_eq(stacks.get(corr, [])[:2],
                     [(name, "launch", launch),
                      (name, "alternate", first if corr % 2 else second)],
                     f"{py}: the stack of call {corr}")


def test_runtime_records_no_callsite_under_no_python():
    py = shutil.which("python3")
    if not py:
        raise Skip("no python3")
    r = syscope("sample", "--no-python", "--", py, CALLER)
    check_eq(r.rc, 0, r.describe())
    check("on=0" in r.out and "py_callsite ok" in r.out, r.describe())
    check_eq(raw_callsites(r)[0], {}, "no call sites")


def test_python_without_cuda_has_no_gpu_lines():
    py = shutil.which("python3")
    if not py:
        raise Skip("no python3")
    r = syscope("sample", "--", py, "-c", "sum(i * i for i in range(200000))")
    check_eq(r.rc, 0, r.describe())
    check(not [f for f in r.files() if f.startswith("gpu_time_by_python")], str(r.files()))
    check("GPU time launched by Python line" not in r.err, r.err)
    check("Python frames read in samples" in r.err, f"Python frames were on:\n{r.err}")


if __name__ == "__main__":
    harness.main(globals())
