"""`syscope summary --why-idle` on a real GPU (issue 24): PyTorch programs whose GPU idles for
a known reason (tests/programs/cuda/idle_*.py), each printing the idle fraction it measured
itself with CUDA events. The named top cause must explain at least 70% of the idle time and
the idle fraction must agree with the program's within 5 points. Run by scripts/gpu-check;
skipped, with the reason, without an NVIDIA GPU, syscope's CUDA tracing or PyTorch with CUDA
(test_why_idle.py checks the analysis on synthetic sessions everywhere)."""
import json
import os
import re

import harness
from harness import check, check_eq, syscope

from test_python_gpu import need_torch_gpu

PROGRAMS = os.path.join(harness.SOURCE, "tests", "programs", "cuda")


def run_fixture(name, cause):
    need_torch_gpu()
    r = syscope("sample", "--sampling-realtime", "-f", "1000", "--output-format", "rocpd",
                "--", "python3", os.path.join(PROGRAMS, name))
    check_eq(r.rc, 0, r.describe())
    m = re.search(r"idle_fraction=([0-9.]+)", r.out)
    check(m, r.describe())
    measured = float(m.group(1))
    s = syscope("summary", "--why-idle", "--format", "json", r.session)
    check_eq(s.rc, 0, s.describe())
    gpus = json.loads(s.out)["gpus"]
    check_eq(len(gpus), 1, f"one GPU used: {s.out[:2000]}")
    gpu = gpus[0]
    text = syscope("summary", "--why-idle", r.session).out
    print(f"{name}: measured idle {100 * measured:.1f}%, syscope {100 * gpu['idle_fraction']:.1f}%"
          f"\n{text}", flush=True)
    check(abs(gpu["idle_fraction"] - measured) <= 0.05,
          f"idle fraction {gpu['idle_fraction']:.4f} vs the program's {measured:.4f}\n{text}")
    top = gpu["causes"][0]
    check_eq(top["cause"], cause, f"top cause\n{text}")
    check(top["share_of_idle"] >= 0.70, f"{cause} explains {top['share_of_idle']:.3f}\n{text}")
    return gpu, text


def test_slow_data_loader():
    gpu, _ = run_fixture("idle_loader.py", "data_loader")
    names = [n["name"] for n in gpu["causes"][0]["names"]]
    check(any("__getitem__" in n or "DataLoader" in n for n in names), f"named by {names}")


def test_gil_hogging_thread():
    gpu, text = run_fixture("idle_gil.py", "gil_wait")
    holders = [h["name"] for h in gpu["causes"][0]["gil_holders"]]
    check(holders and "hog" in holders[0], f"the GIL holder is the hog thread: {holders}\n{text}")


def test_synchronize_every_step():
    gpu, _ = run_fixture("idle_sync.py", "synchronization")
    names = [n["name"] for n in gpu["causes"][0]["names"]]
    check(any("ynchronize" in n for n in names), f"the synchronizing call in {names}")


if __name__ == "__main__":
    harness.main(globals())
