"""Every GPU operation linked to the host call that caused it, with the default CUDA domains
(issue 17, items 3-6), on a real GPU:

  - PyTorch matrix products (cuBLAS launches its kernels through the driver API): every
    kernel has a launching call;
  - a program built as nvcc builds by default (the CUDA runtime linked statically): none of
    the runtime's own driver calls is recorded, every kernel is linked to cudaLaunchKernel,
    and the module global it declares is named apart from its allocations in the summary;
  - NCCL with one rank: allocations and frees are linked only to calls open at the time;
  - (no GPU needed) module globals counted apart in the summary, from a synthetic session.

Skipped, with the reason, without an NVIDIA GPU, without syscope's CUDA tracing, without the
fixtures (no nvcc) or without PyTorch / NCCL. tests/unit/test_cuda_activity.c checks the
linking rules without a GPU."""
import os
import re
import sqlite3
import subprocess

import harness
from harness import Skip, check, check_eq, fixture, need_gpu, syscope

from rocpd_checks import check_conventions, rows

MATMUL = os.path.join(harness.SOURCE, "tests", "programs", "cuda", "torch_matmul.py")
STEPS = 20
LAUNCHES = 20  # static_cudart's default


def need_fixture(name):
    need_gpu()
    if not os.path.exists(fixture(name)):
        raise Skip(f"{name} not built: no CUDA compiler (nvcc) at build time")


def need_torch():
    need_gpu()
    probe = subprocess.run(["python3", "-c", "import torch; assert torch.cuda.is_available()"],
                           capture_output=True)
    if probe.returncode:
        raise Skip("PyTorch with CUDA not installed")


def database(r):
    dbs = sorted(f for f in r.files() if f.startswith("rocpd-") and f.endswith(".db"))
    check(dbs, f"a database in {r.files()}\n{r.describe()}")
    db = sqlite3.connect(r.path(dbs[0]))
    check_conventions(db)
    return db


def unlinked_kernels(db):
    return rows(db, "SELECT K.name, COUNT(*) FROM kernels K WHERE NOT EXISTS (SELECT 1 FROM "
                    "regions R WHERE R.stack_id = K.stack_id AND R.category LIKE 'CUDA_%') "
                    "GROUP BY K.name ORDER BY 2 DESC")


def test_cublas_kernels_have_their_launching_call():
    need_torch()
    r = syscope("sample", "--output-format", "rocpd", "--", "python3", MATMUL, str(STEPS),
                timeout=600)
    check_eq(r.rc, 0, r.describe())
    check(f"steps {STEPS}" in r.out and "done" in r.out, r.describe())
    db = database(r)
    kernels = rows(db, "SELECT COUNT(*) FROM kernels")[0][0]
    check(kernels >= 2 * STEPS + 1, f"{kernels} kernels: a matmul and a tanh per step, a sum")
    check_eq(unlinked_kernels(db), [], "every kernel linked to the call that launched it")
    # The products' kernels are cuBLAS's, launched through the driver where it does so.
    launchers = dict(rows(db, "SELECT R.name, COUNT(*) FROM kernels K JOIN regions R ON "
                              "R.stack_id = K.stack_id AND R.category LIKE 'CUDA_%' "
                              "GROUP BY R.name"))
    check(set(launchers) <= {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                             "cuLaunchKernelEx", "cudaMemsetAsync", "cudaMemcpyAsync"},
          f"launching calls {launchers}")
    check(sum(launchers.values()) == kernels, f"{launchers} for {kernels} kernels")
    # The driver calls shown are ones the program's libraries made, outside runtime calls.
    inside = rows(db, "SELECT COUNT(*) FROM regions D JOIN regions R ON D.tid = R.tid AND "
                      "D.start >= R.start AND D.end <= R.end WHERE D.category = "
                      "'CUDA_DRIVER_API' AND R.category = 'CUDA_RUNTIME_API'")
    check_eq(inside, [(0,)], "no driver call of the runtime's own")


def test_static_runtime_records_no_driver_calls():
    need_fixture("static_cudart")
    ldd = subprocess.run(["ldd", fixture("static_cudart")], capture_output=True, text=True)
    check("libcudart" not in ldd.stdout, f"the runtime linked statically:\n{ldd.stdout}")
    r = syscope("sample", "--output-format", "rocpd", "--", fixture("static_cudart"))
    check_eq(r.rc, 0, r.describe())
    check(f"launches={LAUNCHES} counted={LAUNCHES}" in r.out, r.describe())
    db = database(r)
    check_eq(rows(db, "SELECT name, COUNT(*) FROM regions WHERE category = 'CUDA_DRIVER_API' "
                      "GROUP BY name"), [], "no driver call: all are the runtime's own")
    calls = dict(rows(db, "SELECT name, COUNT(*) FROM regions WHERE category = "
                          "'CUDA_RUNTIME_API' GROUP BY name"))
    check_eq((calls.get("cudaMalloc"), calls.get("cudaMemcpy"), calls.get("cudaLaunchKernel"),
              calls.get("cudaMemcpyFromSymbol"), calls.get("cudaFree")),
             (1, 2, LAUNCHES, 1, 1), f"the program's runtime calls: {calls}")
    check_eq(rows(db, "SELECT R.name, COUNT(*) FROM kernels K JOIN regions R ON "
                      "R.stack_id = K.stack_id AND R.category = 'CUDA_RUNTIME_API' "
                      "GROUP BY R.name"), [("cudaLaunchKernel", LAUNCHES)],
             "every kernel linked to its launch")
    check_eq(unlinked_kernels(db), [], "no kernel without its call")


def test_module_globals_apart_from_allocations():
    need_fixture("static_cudart")
    r = syscope("sample", "--", fixture("static_cudart"))
    check_eq(r.rc, 0, r.describe())
    gpu = [ln for ln in r.err.splitlines() if ln.startswith("syscope: GPU: ")]
    check(gpu, r.describe())
    m = re.search(r"(\d+) allocations, (\d+) frees", gpu[0])
    check(m and (int(m.group(1)), int(m.group(2))) == (1, 1),
          f"the program's one cudaMalloc and cudaFree: {gpu}")
    globals_line = [ln for ln in gpu if "module globals" in ln]
    check(globals_line and re.search(r"besides, [1-9]\d* module globals", globals_line[0]),
          f"the __device__ variable named apart: {gpu}")


def test_module_globals_counted_apart_in_the_summary():
    """Without a GPU: a synthetic session with two cudaMalloc/cudaFree pairs and five module
    globals (allocations of level STATIC that no call made)."""
    s = harness.gen_session("--pid", 5101, "--allocs", 2, "--module-globals", 5)
    r = syscope("convert", "--output-format", "rocpd", s)
    check_eq(r.rc, 0, r.describe())
    check("GPU: 0 kernels, 0 copies, 0 sets, 2 allocations, 2 frees" in r.err, r.err)
    check("GPU: besides, 5 module globals (20 bytes of __device__ variables" in r.err, r.err)
    db = sqlite3.connect(os.path.join(s, "rocpd-5101.db"))
    check_eq(rows(db, "SELECT type, COUNT(*) FROM memory_allocations GROUP BY type"),
             [("ALLOC", 7), ("FREE", 2)], "every allocation row kept in the database")


def nccl_env():
    """LD_LIBRARY_PATH with a libnccl.so.2 (the toolkit's, else a pip package's: PyTorch's)."""
    probe = subprocess.run(["python3", "-c", "import glob, site; print(*[g for s in "
                            "site.getsitepackages() for g in glob.glob(s + '/nvidia/nccl/lib')])"],
                           capture_output=True, text=True, timeout=60)
    dirs = probe.stdout.split() + ["/usr/local/cuda/lib64", "/usr/local/cuda/lib"]
    old = os.environ.get("LD_LIBRARY_PATH")
    return {"LD_LIBRARY_PATH": ":".join(dirs + ([old] if old else []))}


def test_nccl_allocations_link_to_open_calls():
    need_fixture("nccl_collectives")
    r = syscope("sample", "--parallel=nccl", "--output-format", "rocpd", "--",
                fixture("nccl_collectives"), "1", env=nccl_env(), timeout=600)
    if r.rc and "libnccl" in r.err:
        raise Skip(f"NCCL not loadable here: {r.err[-300:]}")
    check_eq(r.rc, 0, r.describe())
    db = database(r)
    total = rows(db, "SELECT COUNT(*) FROM memory_allocations WHERE agent_type = 'GPU'")[0][0]
    check(total > 0, "NCCL allocates device memory")
    outside = rows(db, "SELECT R.name, COUNT(*) FROM memory_allocations M JOIN regions R ON "
                       "R.stack_id = M.stack_id AND M.stack_id != 0 AND R.category LIKE "
                       "'CUDA_%' WHERE M.start < R.start OR M.start > R.end GROUP BY R.name")
    check_eq(outside, [], "no allocation linked to a call that was not open")
    check_eq(rows(db, "SELECT COUNT(*) FROM memory_allocations M JOIN regions R ON "
                      "R.stack_id = M.stack_id AND M.stack_id != 0 WHERE R.name = "
                      "'cudaThreadExchangeStreamCaptureMode'"), [(0,)],
             "none linked to the capture-mode exchange around NCCL's mappings")


if __name__ == "__main__":
    harness.main(globals())
