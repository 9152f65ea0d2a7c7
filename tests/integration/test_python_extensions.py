"""Python C extensions under every verb (issue 15; JAX crashed before): Debian's numpy, lxml
and PyYAML in /usr/bin/python3 under `syscope sample`, `run`, `python` (with -S) and
`instrument`. The program's output and exit status must be those of the plain run, and in the
CPU-time samples numpy's C code (its _multiarray_umath module) must be under the Python frame
of the function that called it. Skips when the modules are not installed (apt-get install
python3-numpy python3-lxml python3-yaml)."""
import os
import subprocess

import harness
from harness import Skip, check, check_eq, syscope

PYTHON = "/usr/bin/python3"
SCRIPT = os.path.join(harness.SOURCE, "tests", "programs", "python", "extensions.py")
NUMPY_MODULE = "_multiarray_umath"
SECONDS = "1.0"


def plain():
    """The plain run's (exit status, output), or a Skip naming what is missing."""
    if not os.path.exists(PYTHON):
        raise Skip(f"no {PYTHON}")
    p = subprocess.run([PYTHON, "-c", "import numpy, yaml, lxml.etree"], capture_output=True,
                       text=True)
    if p.returncode:
        raise Skip("numpy, yaml or lxml missing (apt-get install python3-numpy python3-lxml "
                   f"python3-yaml): {p.stderr.strip().splitlines()[-1]}")
    p = subprocess.run([PYTHON, SCRIPT, "0.1"], capture_output=True, text=True, timeout=120)
    check_eq(p.returncode, 3, f"the fixture's own exit status: {p.stderr}")
    return p.returncode, p.stdout


def folded_stacks(r):
    """{stack: samples} of the main process's CPU-time folded profile."""
    path = r.path(f"sampling_cpu_clock-{r.main_pid()}.folded")
    check(os.path.exists(path), f"no folded CPU profile in {r.files()}\n{r.err}")
    with open(path) as f:
        return {k: int(v) for k, v in (ln.rsplit(" ", 1) for ln in f.read().splitlines())}


def check_numpy_under_python(r, verb):
    stacks = folded_stacks(r)
    total = sum(stacks.values())
    in_sort = {s: n for s, n in stacks.items() if ";sort_rows;" in s + ";"}
    under = sum(n for s, n in in_sort.items()
                if NUMPY_MODULE in s.split(";sort_rows;", 1)[-1])
    check(total > 0, f"{verb}: no CPU samples\n{r.err}")
    # sort_rows spends its time in np.sort's C code; its own Python lines are a few percent.
    check(sum(in_sort.values()) >= 0.3 * total,
          f"{verb}: sort_rows has {sum(in_sort.values())} of {total} samples")
    check(under >= 0.8 * sum(in_sort.values()),
          f"{verb}: {under} of sort_rows's {sum(in_sort.values())} samples have numpy's "
          f"{NUMPY_MODULE} under it: {sorted(in_sort.items(), key=lambda kv: -kv[1])[:3]}")
    check(any(s.startswith(("_start;", "__libc_start")) or ";Py_RunMain;" in s
              for s in in_sort), f"{verb}: native frames above the Python ones")


def run_verb(verb, *opts):
    rc, out = plain()
    r = syscope(verb, *opts, "--output-format", "folded json", "--", PYTHON, SCRIPT, SECONDS,
                timeout=600)
    check_eq(r.rc, rc, f"{verb}: the program's exit status passed through\n{r.describe()}")
    check_eq(r.out, out, f"{verb}: the program's output unchanged")
    check("Traceback" not in r.err and "Segmentation" not in r.err, f"{verb}: {r.err}")
    return r


def test_sample_numpy_frames_under_python():
    check_numpy_under_python(run_verb("sample", "-f", "500"), "sample")


def test_run_numpy_frames_under_python():
    check_numpy_under_python(run_verb("run", "-S", "-f", "500"), "run")


def test_python_traces_and_samples_extensions():
    r = run_verb("python", "-S", "-f", "500")
    check_numpy_under_python(r, "python")
    calls = harness.calls_of(r.profile("wall_clock"))
    check_eq((calls.get("sort_rows"), calls.get("yaml_round_trip"), calls.get("xml_round_trip")),
             (1, 1, 1), "python: each traced function called once")


def test_instrument_runs_extensions_unchanged():
    r = run_verb("instrument")
    check(os.path.exists(r.path(f"wall_clock-{r.main_pid()}.json")),
          f"instrument: a wall-clock profile\n{r.describe()}")


if __name__ == "__main__":
    harness.main(globals())
