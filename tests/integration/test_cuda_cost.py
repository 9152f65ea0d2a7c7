"""What CUDA tracing does per launch (issue 17 item 9), checked for what it records, on a real
GPU (bench/gpu-bench measures the cost itself):

  - CUPTI's activity buffers are handed over zeroed and reused (src/gpu/cuda/activity_pool.c):
    through a pool far smaller than the run needs (64 KiB buffers for 21 000 launches), every
    launch is still recorded once, whole: its kernel, its cudaLaunchKernel call, the link
    between them, nothing dropped, and CUPTI was not left to clear buffers itself.

Skipped, with the reason, without an NVIDIA GPU, without syscope's CUDA tracing, or without
bench/cuda_launch (no nvcc at build time)."""
import os
import shutil
import sqlite3
import subprocess

import harness
from harness import Skip, check, check_eq, syscope

from rocpd_checks import check_conventions, rows

LAUNCHES = 20000
WARM_UP = 1000  # bench/cuda_launch's launches before its timed loop


def launch_program():
    if not os.path.exists(os.path.join(harness.BUILD, "lib", "syscope", "libsyscope-cuda.so")):
        raise Skip("syscope was built without CUDA tracing (no CUPTI)")
    smi = shutil.which("nvidia-smi")
    if not smi or subprocess.run([smi, "-L"], capture_output=True).returncode != 0:
        raise Skip("no NVIDIA GPU or driver on this machine")
    path = os.path.join(harness.BUILD, "bench", "cuda_launch")
    if not os.path.exists(path):
        raise Skip("bench/cuda_launch not built: no CUDA compiler (nvcc) at build time")
    return path


def database(r):
    dbs = sorted(f for f in r.files() if f.startswith("rocpd-") and f.endswith(".db"))
    check(dbs, f"a database in {r.files()}\n{r.describe()}")
    db = sqlite3.connect(r.path(dbs[0]))
    check_conventions(db)
    return db


def notes(r):
    return [n["text"] for n in r.metadata(r.main_pid())["notes"]]


def test_every_launch_recorded_through_reused_buffers():
    program = launch_program()
    r = syscope("sample", "--output-format", "rocpd", "--cuda-buffer-kb", "64", "--", program,
                str(LAUNCHES), timeout=600)
    check_eq(r.rc, 0, r.describe())
    check("ns_per_launch=" in r.out, r.describe())
    db = database(r)
    total = LAUNCHES + WARM_UP
    check_eq(rows(db, "SELECT COUNT(*) FROM kernels WHERE name LIKE '%empty_kernel%'"),
             [(total,)], "every launch's kernel, once")
    check_eq(rows(db, "SELECT COUNT(*) FROM kernels"), [(total,)], "no other kernel")
    check_eq(rows(db, "SELECT COUNT(*) FROM regions WHERE name = 'cudaLaunchKernel' AND "
                      "category = 'CUDA_RUNTIME_API'"), [(total,)], "every launch call, once")
    check_eq(rows(db, "SELECT R.name, COUNT(*) FROM kernels K JOIN regions R ON "
                      "R.stack_id = K.stack_id AND R.category = 'CUDA_RUNTIME_API' "
                      "GROUP BY R.name"), [("cudaLaunchKernel", total)],
             "every kernel linked to its launch call")
    said = notes(r)
    check(not any("dropped" in n for n in said), f"nothing dropped: {said}")
    check(not any("CUPTI clears each activity buffer" in n for n in said),
          f"buffers handed over zeroed: {said}")


if __name__ == "__main__":
    harness.main(globals())
