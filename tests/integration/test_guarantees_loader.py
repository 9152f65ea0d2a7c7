"""Sampling never waits on the dynamic loader (tests/programs/dl_churn.c): a program that
dlopens a library, runs its code and dlcloses it, over and over, under 5 kHz sampling, used
to hang about one run in forty, when a sample landed while the loader's lock changed hands
and the handler asked the loader for its list of objects. Many runs, several at a time, each
bounded: a run that does not end fails the test instead of hanging it."""
import os
import re
import signal
import subprocess
import tempfile
import threading

import harness
from harness import check, check_eq, fixture, source_line

RUNS = int(os.environ.get("SYSCOPE_LOADER_RUNS", "24"))  # more by hand, to hunt a rare hang
PARALLEL = int(os.environ.get("SYSCOPE_LOADER_PARALLEL", "4"))
ROUNDS = 1500
LIMIT_S = 240  # far beyond a normal run (a few seconds), so only a hang reaches it


def library():
    return os.path.join(harness.FIXTURES, "libhotlib.so")


def run_bounded(args, limit=LIMIT_S):
    """syscope `args` in a fresh folder, killed with everything it started after `limit`
    seconds; returns (Result, None) or (None, what hung)."""
    workdir = tempfile.mkdtemp(prefix="syscope-it-")
    harness._workdirs.append(workdir)
    proc = subprocess.Popen([harness.SYSCOPE] + [str(a) for a in args], cwd=workdir,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, f"still running after {limit} s (hung): {' '.join(map(str, args))}\n{err}"
    done = subprocess.CompletedProcess(args, proc.returncode, out, err)
    m = re.findall(r"wrote \d+ files? to (.*)/\n", err)
    return harness.Result(done, workdir, m[-1] if m else None, 0.0), None


def check_run(r, expected_out, what):
    check_eq(r.rc, 0, f"{what}: exit status\n" + r.describe())
    check_eq(r.out, expected_out, f"{what}: the program's output")
    check("LOST" not in r.err, f"{what}: {r.err}")
    p = r.profile()
    f = p.function("lib_hot_work")
    check(f is not None, f"{what}: lib_hot_work among {p.function_names()[:10]}")
    check_eq(f["module"], "libhotlib.so", f"{what}: module of lib_hot_work")
    body = source_line("hotlib.c", "/* LIB_HOT_LINE */")
    check(f["line"] in (body - 1, body), f"{what}: hot line {f['line']}")
    # Most of the program's time is in the library; a loose bound, machines are noisy.
    check(f["self_samples"] > 0.2 * p.total,
          f"{what}: {f['self_samples']} of {p.total} samples in the library")


def test_dlopen_dlclose_loop_under_fast_sampling_never_hangs():
    ref = subprocess.run([fixture("dl_churn"), library(), str(ROUNDS)], capture_output=True,
                         text=True, timeout=LIMIT_S)
    check_eq(ref.returncode, 0, ref.stderr)
    check(ref.stdout.startswith(f"dl_churn: {ROUNDS} rounds"), ref.stdout)
    failures, passed = [], []
    lock = threading.Lock()
    pending = list(range(RUNS))

    def worker():
        while True:
            with lock:
                if not pending:
                    return
                i = pending.pop()
            r, hung = run_bounded(["sample", "-f", "5000", "--", fixture("dl_churn"),
                                   library(), ROUNDS])
            try:
                check(hung is None, hung)
                check_run(r, ref.stdout, f"run {i}")
                with lock:
                    passed.append(i)
            except AssertionError as e:
                with lock:
                    failures.append(str(e))

    threads = [threading.Thread(target=worker) for _ in range(PARALLEL)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    hung = sum("(hung)" in f for f in failures)
    check(not failures, f"{len(failures)} of {RUNS} runs failed ({hung} hung):\n" +
          "\n".join(failures[:3]))
    check_eq(len(passed), RUNS, "runs that passed")


if __name__ == "__main__":
    harness.main(globals())
