"""NCCL tracing on a GPU machine (scripts/gpu-check): tests/programs/cuda/torch_nccl.py runs
known collectives through torch.distributed on one GPU, tests/programs/cuda/nccl_collectives.c
through NCCL's C API on one or two ranks; with --parallel=nccl each must be one region of
category nccl with its kind, count and bytes. Skipped, with the reason, where
there is no NVIDIA GPU or no PyTorch with CUDA (test_nccl.py covers the plugin without one)."""
import os
import re
import shutil
import sqlite3
import subprocess

import harness
from harness import Skip, check, check_eq, fixture, syscope

from rocpd_checks import rows

SCRIPT = os.path.join(harness.SOURCE, "tests", "programs", "cuda", "torch_nccl.py")
C_FIXTURE = "nccl_collectives"


def need_torch_gpu():
    if not shutil.which("nvidia-smi"):
        raise Skip("no NVIDIA GPU or driver on this machine")
    probe = subprocess.run(["python3", "-c", "import torch, torch.distributed as d; "
                            "assert torch.cuda.is_available() and d.is_nccl_available()"],
                           capture_output=True, text=True, timeout=300)
    if probe.returncode:
        raise Skip("PyTorch with CUDA and NCCL not installed")


def expected_calls(out):
    return [(k, int(c), int(b)) for k, c, b in re.findall(r"^call (\w+) (\d+) (\d+)$", out, re.M)]


def calls_of(r, rank=None):
    """(kind, count, bytes) of the nccl call regions (of `rank`), by start, and their args."""
    db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
    found, args = [], []
    for rid, name in rows(db, "SELECT id, name FROM regions WHERE category IN ('NCCL_API', 'nccl') AND name "
                              "!= 'ncclGroup' ORDER BY start"):
        a = dict(rows(db, "SELECT name, value FROM region_args WHERE id = ?", rid))
        check_eq(name, "nccl" + a["kind"], "region named after its kind")
        if rank is not None and a.get("rank") != str(rank):
            continue
        found.append((a["kind"], int(a["count"]), int(a["bytes"])))
        args.append(a)
    return found, args


def test_torch_one_rank_collectives_with_their_bytes():
    need_torch_gpu()
    r = syscope("sample", "--parallel=nccl", "--output-format", "rocpd", "--", "python3",
                SCRIPT, "29611", timeout=600)
    check_eq(r.rc, 0, r.describe())
    expected = expected_calls(r.out)
    check_eq(len(expected), 6, r.out)
    found, args = calls_of(r)
    check_eq(found, expected, "each collective once, with its count and bytes")
    check_eq({a.get("nranks") for a in args}, {"1"}, "one rank")


def nccl_env():
    """LD_LIBRARY_PATH with a libnccl.so.2 (the toolkit's, else a pip package's: PyTorch's)."""
    probe = subprocess.run(["python3", "-c", "import glob, site; print(*[g for s in "
                            "site.getsitepackages() for g in glob.glob(s + '/nvidia/nccl/lib')])"],
                           capture_output=True, text=True, timeout=60)
    dirs = probe.stdout.split() + ["/usr/local/cuda/lib64", "/usr/local/cuda/lib"]
    old = os.environ.get("LD_LIBRARY_PATH")
    return {"LD_LIBRARY_PATH": ":".join(dirs + ([old] if old else []))}


def need_c_fixture(ranks):
    if not shutil.which("nvidia-smi"):
        raise Skip("no NVIDIA GPU or driver on this machine")
    if not os.path.exists(fixture(C_FIXTURE)):
        raise Skip(f"{C_FIXTURE} not built: no nccl.h in the CUDA toolkit at build time")
    p = subprocess.run([fixture(C_FIXTURE), str(ranks)], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, **nccl_env()))
    if p.returncode:
        raise Skip(f"NCCL refuses {ranks} ranks here: {p.stderr.strip()[-300:]}")


def test_c_api_one_rank():
    need_c_fixture(1)
    r = syscope("sample", "--parallel=nccl", "--output-format", "rocpd", "--",
                fixture(C_FIXTURE), 1, timeout=600, env=nccl_env())
    check_eq(r.rc, 0, r.describe())
    found, args = calls_of(r)
    check_eq(found, expected_calls(r.out), "each collective once, with its count and bytes")
    check_eq({a.get("op") for a in args if a["kind"] == "AllReduce"}, {"Sum"}, "reduction op")


def test_c_api_two_ranks_on_one_process():
    need_c_fixture(2)
    r = syscope("sample", "--parallel=nccl", "--output-format", "rocpd", "--",
                fixture(C_FIXTURE), 2, timeout=600, env=nccl_env())
    check_eq(r.rc, 0, r.describe())
    found, args = calls_of(r, rank=0)
    check_eq(found, expected_calls(r.out), "rank 0's calls, from the profiler plugin")
    check_eq({a.get("nranks") for a in args}, {"2"}, "two ranks")
    check("id" in args[0], f"regions of the plugin (with event ids): {args[0]}")


if __name__ == "__main__":
    harness.main(globals())
