"""GPU work by Python line on a real GPU (issue 15): a PyTorch training step
(tests/programs/cuda/torch_loop.py) under syscope; its kernels must carry the Python line that
launched them, in gpu_time_by_python-PID.json, the summary and the Perfetto trace. Skipped,
with the reason, without an NVIDIA GPU, without syscope's CUDA tracing or without PyTorch
with CUDA. test_python_callsites.py checks the reader without a GPU."""
import json
import os
import shutil
import subprocess

import harness
from harness import Skip, check, check_eq, syscope

import pftrace

SCRIPT = os.path.join(harness.SOURCE, "tests", "programs", "cuda", "torch_loop.py")
STEPS = 20


def need_torch_gpu():
    if not os.path.exists(os.path.join(harness.BUILD, "lib", "syscope", "libsyscope-cuda.so")):
        raise Skip("syscope was built without CUDA tracing (no CUPTI)")
    smi = shutil.which("nvidia-smi")
    if not smi or subprocess.run([smi, "-L"], capture_output=True).returncode != 0:
        raise Skip("no NVIDIA GPU or driver on this machine")
    probe = subprocess.run(["python3", "-c", "import torch; assert torch.cuda.is_available()"],
                           capture_output=True)
    if probe.returncode:
        raise Skip("PyTorch with CUDA not installed")


def script_line(text):
    """The line number of the line of torch_loop.py that holds `text`."""
    with open(SCRIPT) as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    raise AssertionError(f"{text!r} not in {SCRIPT}")


def test_training_step_kernels_carry_their_python_line():
    need_torch_gpu()
    r = syscope("sample", "--output-format", "json pftrace rocpd", "--", "python3", SCRIPT,
                str(STEPS))
    check_eq(r.rc, 0, r.describe())
    check("torch_loop ok" in r.out, r.describe())
    pid = r.main_pid()
    p = harness.Profile(r.path(f"gpu_time_by_python-{pid}.json"))
    forward = script_line("cross_entropy(model(data)")
    step = script_line("opt.step()")
    lines = {(os.path.basename(ln["file"]), ln["line"]): ln for ln in p.meta["lines"]}
    # Every step's forward pass launches its kernels from the forward line (two Linear
    # layers and a ReLU at least), and the optimizer's from opt.step().
    fwd = lines.get(("torch_loop.py", forward))
    check(fwd is not None, f"torch_loop.py:{forward} in {sorted(lines)[:40]}\n{r.err}")
    check(fwd["samples"] >= 3 * STEPS, f"launches under the forward line: {fwd}")
    check(fwd["inclusive"] > 0, f"GPU time under the forward line: {fwd}")
    opt = lines.get(("torch_loop.py", step))
    check(opt is not None and opt["samples"] >= STEPS, f"launches under opt.step(): {opt}")
    # The innermost Python frame of the Linear layers' kernels: Linear.forward, in torch.
    lin = p.function("Linear.forward")
    check(lin is not None and lin["module"].endswith(os.path.join("nn", "modules", "linear.py")),
          f"Linear.forward in {p.function_names()[:30]}")
    check(lin["samples"] >= 2 * STEPS, f"two Linear layers a step: {lin}")
    # The summary's section names the same lines.
    check("GPU time launched by Python line" in r.err, r.err)
    # Perfetto: the kernels of the forward line say so.
    names = [f for f in r.files() if f.endswith(".pftrace")]
    check_eq(len(names), 1, f"one trace in {r.files()}")
    t = pftrace.Trace(open(r.path(names[0]), "rb").read())
    check_eq(t.errors, [], "a valid trace")
    kernels = [s for s in t.slices if s[2] == "KERNEL_DISPATCH"]
    tagged = [s for s in kernels if f"torch_loop.py:{forward})" in s[5].get("python", "")]
    check(len(tagged) >= 3 * STEPS, f"{len(tagged)} of {len(kernels)} kernels name the "
          f"forward line; e.g. {[s[5].get('python') for s in kernels[:3]]}")
    # `syscope summary` over the database: Linear.forward's line among the launching lines.
    s = syscope("summary", "--format", "json", r.session)
    check_eq(s.rc, 0, s.describe())
    rows = json.loads(s.out).get("gpu_by_python_line", [])
    linear = [row for row in rows if row["function"] == "Linear.forward"]
    check(linear and linear[0]["calls"] >= 2 * STEPS and linear[0]["gpu_ms"] > 0,
          f"Linear.forward in syscope summary: {rows[:10]}")


def test_no_python_leaves_gpu_work_unattributed():
    need_torch_gpu()
    for flag in ("--no-python", "--no-cuda-python-stacks"):
        r = syscope("sample", flag, "--output-format", "json", "--", "python3", SCRIPT, "5")
        check_eq(r.rc, 0, r.describe())
        check("torch_loop ok" in r.out, r.describe())
        check(not [f for f in r.files() if f.startswith("gpu_time_by_python")],
              f"{flag}: {r.files()}")


if __name__ == "__main__":
    harness.main(globals())
