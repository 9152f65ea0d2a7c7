"""What CUDA tracing does per launch (issue 17 item 9), checked for what it records, on a real
GPU (bench/gpu-bench measures the cost itself):

  - CUPTI's activity buffers are handed over zeroed and reused (src/gpu/cuda/activity_pool.c):
    through a pool far smaller than the run needs (64 KiB buffers for 21 000 launches), every
    launch is still recorded once, whole: its kernel, its cudaLaunchKernel call, the link
    between them, nothing dropped, and CUPTI was not left to clear buffers itself;
  - a program built as nvcc builds by default (the runtime linked in) is known as one when
    CUDA starts (src/gpu/cuda/static_runtime.c): a note names its file, only the driver calls
    that start work are recorded (none of the runtime's own shown), every kernel linked;
    a driver-API program is not taken for one: all its driver calls are shown.

Skipped, with the reason, without an NVIDIA GPU, without syscope's CUDA tracing, or without
bench/cuda_launch and the fixtures (no nvcc at build time). tests/unit/test_cuda_pool.c and
test_cuda_static_runtime.c check both parts without a GPU."""
import os
import sqlite3

import harness
from harness import Skip, check, check_eq, fixture, need_gpu, syscope

from rocpd_checks import check_conventions, rows

LAUNCHES = 20000
WARM_UP = 1000  # bench/cuda_launch's launches before its timed loop
STATIC_LAUNCHES = 20  # static_cudart's default


def launch_program():
    need_gpu()
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
    check(not any("runtime is linked into" in n for n in said),
          f"the shared runtime is not taken for a static one: {said}")


def test_static_runtime_records_only_driver_calls_that_start_work():
    need_gpu()
    program = fixture("static_cudart")
    if not os.path.exists(program):
        raise Skip("static_cudart not built: no CUDA compiler (nvcc) at build time")
    r = syscope("sample", "--output-format", "rocpd", "--", program)
    check_eq(r.rc, 0, r.describe())
    check(f"launches={STATIC_LAUNCHES} counted={STATIC_LAUNCHES}" in r.out, r.describe())
    said = [n for n in notes(r) if "runtime is linked into" in n]
    check_eq(len(said), 1, f"the runtime linked in is named: {notes(r)}")
    check(os.path.realpath(program) in said[0], f"{program} in {said[0]}")
    db = database(r)
    check_eq(rows(db, "SELECT COUNT(*) FROM regions WHERE category = 'CUDA_DRIVER_API'"),
             [(0,)], "no driver call shown: the runtime's own")
    check_eq(rows(db, "SELECT R.name, COUNT(*) FROM kernels K JOIN regions R ON "
                      "R.stack_id = K.stack_id AND R.category = 'CUDA_RUNTIME_API' "
                      "GROUP BY R.name"), [("cudaLaunchKernel", STATIC_LAUNCHES)],
             "every kernel linked to its launch")



def test_driver_program_keeps_every_driver_call():
    need_gpu()
    program = fixture("cuda_driver_only")
    if not os.path.exists(program):
        raise Skip("cuda_driver_only not built: no CUDA compiler (nvcc) at build time")
    r = syscope("sample", "--output-format", "rocpd", "--", program,
                fixture("driver_kernels.fatbin"))
    check_eq(r.rc, 0, r.describe())
    check(not any("runtime is linked into" in n for n in notes(r)), notes(r))
    db = database(r)
    calls = dict(rows(db, "SELECT name, COUNT(*) FROM regions WHERE category = "
                          "'CUDA_DRIVER_API' GROUP BY name"))
    # Calls that start no GPU work are the program's too: all of them are shown.
    check_eq((calls.get("cuModuleLoad"), calls.get("cuModuleGetFunction"),
              calls.get("cuLaunchKernel"), calls.get("cuCtxSynchronize")), (1, 1, 4, 1),
             f"the program's driver calls: {calls}")


if __name__ == "__main__":
    harness.main(globals())
