"""Sampling never waits on the dynamic loader (tests/programs/dl_churn.c): a program that
dlopens a library, runs its code and dlcloses it, over and over, under 5 kHz sampling, used
to hang about one run in fifty, when a sample landed while the loader's lock changed hands
and the handler asked the loader for its list of objects. Many runs, several at a time, each
bounded: a run that does not end fails the test instead of hanging it. Every run must keep
the program's output, name the library's samples and unwind them (and those of threads
running meanwhile) through the list of objects samples now read."""
import os
import re
import signal
import subprocess
import tempfile
import threading

import harness
from harness import check, check_eq, fixture, source_line

RUNS = int(os.environ.get("SYSCOPE_LOADER_RUNS", "40"))  # more by hand, to hunt a rare hang
PARALLEL = int(os.environ.get("SYSCOPE_LOADER_PARALLEL", "8"))  # load widens the window
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


def folded_stacks(r, leaf):
    """{stack: samples} of the folded CPU profile's stacks that end in `leaf`."""
    path = r.path(f"sampling_cpu_clock-{r.main_pid()}.folded")
    stacks = {}
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if stack.split(";")[-1] == leaf:
                stacks[stack] = stacks.get(stack, 0) + int(n)
    return stacks


def check_full_stacks(r, leaf, caller, what):
    """Nearly all of `leaf`'s samples were unwound to `caller`: libunwind found the unwind
    tables of every object, the dlopen'ed one too, in the list samples read."""
    stacks = folded_stacks(r, leaf)
    total = sum(stacks.values())
    full = sum(n for s, n in stacks.items() if f"{caller};{leaf}" in s)
    check(total > 0 and full >= 0.9 * total, f"{what}: {full} of {total} {leaf} samples "
          f"unwound through {caller}: {sorted(stacks.items(), key=lambda kv: -kv[1])[:3]}")


def check_run(r, expected_out, threads, what):
    check_eq(r.rc, 0, f"{what}: exit status\n" + r.describe())
    check_eq(r.out, expected_out, f"{what}: the program's output")
    check("LOST" not in r.err, f"{what}: {r.err}")
    check("could not be hooked" not in r.err, f"{what}: the loader hook is in place: {r.err}")
    p = r.profile()
    f = p.function("lib_hot_work")
    check(f is not None, f"{what}: lib_hot_work among {p.function_names()[:10]}")
    check_eq(f["module"], "libhotlib.so", f"{what}: module of lib_hot_work")
    body = source_line("hotlib.c", "/* LIB_HOT_LINE */")
    check(f["line"] in (body - 1, body), f"{what}: hot line {f['line']}")
    check_full_stacks(r, "lib_hot_work", "main", what)
    # Most of the main thread's time is in the library, the spinning threads' in spin_step;
    # loose bounds, machines are noisy.
    lib_share = 0.2 if not threads else 0.05
    check(f["self_samples"] > lib_share * p.total,
          f"{what}: {f['self_samples']} of {p.total} samples in the library")
    if threads:
        check(p.self_samples("spin_step") > 0.3 * p.total,
              f"{what}: {p.self_samples('spin_step')} of {p.total} samples in spin_step")
        check_full_stacks(r, "spin_step", "spin", what)


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
            # Every other run with two threads whose samples walk the list meanwhile.
            threads = 2 if i % 2 else 0
            r, hung = run_bounded(["sample", "-f", "5000", "--", fixture("dl_churn"),
                                   library(), ROUNDS, threads])
            try:
                check(hung is None, hung)
                check_run(r, ref.stdout, threads, f"run {i} ({threads} more threads)")
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
