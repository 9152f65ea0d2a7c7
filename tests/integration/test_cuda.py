"""CUDA tracing on a real GPU: the fixtures of tests/programs/cuda run under syscope, and the
kernels, copies, sets, allocations, API calls, NVTX ranges and their links are checked
exactly against what the fixtures do. Skipped, with the reason, where there is no NVIDIA GPU
or the CUDA fixtures were not built (no nvcc)."""
import os
import sqlite3
import subprocess

import harness
from harness import Skip, check, check_eq, fixture, need_gpu, syscope

import pftrace
from rocpd_checks import check_conventions, rows

MiB = 1 << 20


def database(r):
    dbs = [f for f in r.files() if f.startswith("rocpd-") and f.endswith(".db")]
    check_eq(len(dbs), 1, f"one database in {r.files()}\n{r.describe()}")
    db = sqlite3.connect(r.path(dbs[0]))
    check_conventions(db)
    return db


def trace(r):
    names = [f for f in r.files() if f.endswith(".pftrace")]
    check_eq(len(names), 1, "one trace")
    t = pftrace.Trace(open(r.path(names[0]), "rb").read())
    check_eq(t.errors, [], "valid trace")
    return t


def test_runtime_program():
    need_gpu("cuda_workload")
    r = syscope("sample", "--output-format", "rocpd pftrace json", "--",
                fixture("cuda_workload"))
    check_eq(r.rc, 0, r.describe())
    check("cuda_workload ok" in r.out, r.describe())
    # The wall_clock profile: API calls by name with time per call, nested in NVTX ranges.
    prof = r.profile("wall_clock")
    flat = {(f["name"], f["module"]): f for f in prof.meta["functions"]}
    check_eq(flat[("cudaMemcpy", "CUDA_RUNTIME_API")]["calls"], 3, "calls per API function")
    main = {c["node"]["name"]: c for c in prof.thread_trees()[0]["children"]}
    compute = {c["node"]["name"]: c for c in main["compute"]["children"]}
    check_eq(compute["cudaLaunchKernel"]["node"]["inclusive"]["stats"]["count"], 10,
             "the ten launches inside the compute range")
    db = database(r)
    pid = r.main_pid()
    # GPU time launched: the compute range started exactly the saxpy kernels.
    saxpy_ns = rows(db, "SELECT SUM(duration) FROM kernels WHERE name LIKE 'saxpy%'")[0][0]
    launched = [f.get("gpu_seconds_launched", 0) for f in prof.meta["functions"]
                if f["name"] == "compute"]
    check(len(launched) == 1 and abs(launched[0] * 1e9 - saxpy_ns) < 1000,
          f"compute launched {launched} s of GPU work, saxpy ran {saxpy_ns} ns")

    kernels = rows(db, "SELECT name, COUNT(*), grid_x, grid_y, grid_z, workgroup_x, "
                       "workgroup_y, workgroup_z, MIN(duration) > 0, tid "
                       "FROM kernels GROUP BY name, grid_x ORDER BY name")
    check_eq(kernels, [
        ("bump(float*)", 6, 16 * 64, 1, 1, 64, 1, 1, 1, pid),
        ("saxpy(int, float, float const*, float*)", 10, 4096 * 256, 1, 1, 256, 1, 1, 1, pid),
        ("scale(float*, float)", 5, 64 * 128, 4 * 2, 1, 128, 2, 1, 1, pid),
    ], "kernels: names demangled, grids in work-items, on the launching thread")
    check_eq(rows(db, "SELECT DISTINCT lds_size FROM kernels WHERE name LIKE 'scale%'"),
             [(1024,)], "dynamic shared memory")
    streams = rows(db, "SELECT name, COUNT(DISTINCT stream_id) FROM kernels GROUP BY name "
                       "ORDER BY name")
    check_eq([n for _, n in streams], [1, 1, 1], "each kernel on one stream")
    check(len({s for (s,) in rows(db, "SELECT DISTINCT stream_id FROM kernels")}) == 2,
          "saxpy and scale on two different streams")

    copies = rows(db, "SELECT name, size, COUNT(*) FROM memory_copies GROUP BY name, size "
                      "ORDER BY name")
    check_eq(copies, [("MEMORY_COPY_DEVICE_TO_HOST", 4 * MiB, 1),
                      ("MEMORY_COPY_HOST_TO_DEVICE", 4 * MiB, 2),
                      ("MEMORY_SET", MiB, 1)], "copies and the set, with their bytes")
    allocs = rows(db, "SELECT type, size, COUNT(*) FROM memory_allocations "
                      "WHERE agent_type = 'GPU' GROUP BY type, size ORDER BY type, size")
    check_eq(allocs, [("ALLOC", MiB, 1), ("ALLOC", 4 * MiB, 2), ("FREE", MiB, 1),
                      ("FREE", 4 * MiB, 2)], "three allocations and three frees")

    # Every kernel links to the call that launched it; graph kernels to cudaGraphLaunch.
    links = rows(db, "SELECT R.name, K.name, COUNT(*) FROM kernels K JOIN regions R "
                     "ON R.stack_id = K.stack_id AND R.category = 'CUDA_RUNTIME_API' "
                     "GROUP BY R.name, K.name ORDER BY K.name")
    check_eq(links, [("cudaGraphLaunch", "bump(float*)", 6),
                     ("cudaLaunchKernel", "saxpy(int, float, float const*, float*)", 10),
                     ("cudaLaunchKernel", "scale(float*, float)", 5)], "launch -> kernel")
    calls = dict(rows(db, "SELECT name, COUNT(*) FROM regions "
                          "WHERE category = 'CUDA_RUNTIME_API' GROUP BY name"))
    # 17 launches: 15 run directly, 2 captured into the graph.
    check_eq((calls.get("cudaMalloc"), calls.get("cudaMemcpy"), calls.get("cudaFree"),
              calls.get("cudaStreamCreate"), calls.get("cudaLaunchKernel"),
              calls.get("cudaGraphLaunch")), (3, 3, 3, 2, 17, 3), "runtime calls")
    check_eq((calls.get("cudaGetDevice"), calls.get("cudaGetLastError")), (None, None),
             "bookkeeping calls left out by default")
    check_eq(rows(db, "SELECT COUNT(*) FROM regions WHERE category = 'CUDA_DRIVER_API'"),
             [(0,)], "driver calls made by the runtime (its start-up too) left out by default")

    # Kernels run after their launch call began, on the GPU's clock brought onto ours.
    late = rows(db, "SELECT COUNT(*) FROM kernels K JOIN regions R ON R.stack_id = K.stack_id "
                    "WHERE K.start < R.start")
    check_eq(late, [(0,)], "no kernel starts before its launch")

    nvtx = rows(db, "SELECT name, COUNT(*) FROM regions WHERE category = 'MARKER_CORE_API' "
                    "GROUP BY name ORDER BY name")
    check_eq([n for n in nvtx if n[0] != "checkpoint"], [("compute", 1), ("scale phase", 1)],
             "NVTX ranges")
    inside = rows(db, "SELECT COUNT(*) FROM regions R, regions N WHERE N.name = 'compute' "
                      "AND R.name = 'cudaLaunchKernel' AND R.start >= N.start "
                      "AND R.end <= N.end")
    check_eq(inside, [(10,)], "the ten saxpy launches inside the compute range")
    agents = rows(db, "SELECT name FROM rocpd_info_agent WHERE type = 'GPU'")
    check(agents and all("NVIDIA" in a or "H" in a for (a,) in agents), f"GPU agent {agents}")
    check_eq(rows(db, "SELECT COUNT(*) FROM top_kernels"), [(3,)], "top_kernels")
    check(rows(db, "SELECT GpuTime FROM busy WHERE type = 'GPU'")[0][0] > 0, "busy")

    t = trace(r)
    kslices = [sl for sl in t.slices if sl[2] == "KERNEL_DISPATCH"]
    check_eq(len(kslices), 21, "every kernel on the GPU tracks")
    flows = [(src, dst) for _, src, dst in t.flows]
    check_eq(sum(1 for f in flows if f[0] == "cudaLaunchKernel"), 15, "launch flows")
    check_eq(sum(1 for f in flows if f[0] == "cudaGraphLaunch"), 6, "graph flows")
    marks = [i for i in t.instants if i[1] == "checkpoint"]
    check_eq(len(marks), 1, "the NVTX mark")
    check("CUDA tracing through CUPTI" in open(r.path(f"metadata-{pid}.json")).read(),
          "the run says CUDA tracing was on")


def test_unified_memory_waits_and_overhead():
    need_gpu("cuda_managed")
    from test_host_telemetry import counters
    r = syscope("sample", "--output-format", "rocpd pftrace", "--cuda-domains",
                "runtime,kernel,memory,sync,uvm,overhead", "--", fixture("cuda_managed"))
    check_eq(r.rc, 0, r.describe())
    check("cuda_managed ok" in r.out, r.describe())
    db = database(r)
    c = counters(r)
    print("   ", {n: (v[-1], len(v)) for n, v in c.items() if "unified" in n})
    check(c["GPU 0 unified memory migrated HtoD"][-1] >= 8 * MiB, "the 8 MiB moved to the GPU")
    check(c["GPU 0 unified memory migrated DtoH"][-1] >= 8 * MiB, "and back to the host")
    check(c["GPU 0 unified memory page faults"][-1] > 0, "the kernel's page faults")
    check(c["CPU unified memory page faults"][-1] > 0, "the host's page faults")
    waits = rows(db, "SELECT W.name, A.name FROM regions W JOIN regions A "
                     "ON A.category = 'CUDA_RUNTIME_API' AND A.tid = W.tid "
                     "AND W.start >= A.start AND W.end <= A.end "
                     "WHERE W.category = 'CUDA_SYNCHRONIZATION' ORDER BY W.start")
    check_eq(waits, [("Context synchronize", "cudaDeviceSynchronize"),
                     ("Stream synchronize", "cudaStreamSynchronize"),
                     ("Event synchronize", "cudaEventSynchronize")],
             "each wait inside the call that waited")
    check_eq(rows(db, "SELECT level, size FROM memory_allocations WHERE type = 'ALLOC' "
                      "AND agent_type = 'GPU'"), [("VIRTUAL", 8 * MiB)], "managed memory")
    overhead = rows(db, "SELECT name, COUNT(*) FROM regions WHERE category = "
                        "'PROFILER_OVERHEAD' GROUP BY name")
    print("    overhead:", overhead)
    trace(r)  # waits and overhead keep the trace valid (nesting per track)


def test_graph_domain_shows_launches_whole():
    need_gpu("cuda_workload")
    r = syscope("sample", "--output-format", "rocpd pftrace", "--cuda-domains",
                "runtime,kernel,graph", "--", fixture("cuda_workload"))
    check_eq(r.rc, 0, r.describe())
    db = database(r)
    kernels = dict(rows(db, "SELECT name, COUNT(*) FROM kernels GROUP BY name"))
    print("   ", kernels)
    graphs = {n: c for n, c in kernels.items() if n.startswith("CUDA graph ")}
    check_eq(list(graphs.values()), [3], "the graph launched three times, as one operation each")
    check("bump(float*)" not in kernels, "its nodes are not traced one by one")
    check_eq(kernels.get("saxpy(int, float, float const*, float*)"), 10, "other kernels stay")
    links = rows(db, "SELECT R.name, COUNT(*) FROM kernels K JOIN regions R "
                     "ON R.stack_id = K.stack_id AND R.category = 'CUDA_RUNTIME_API' "
                     "WHERE K.name LIKE 'CUDA graph %' GROUP BY R.name")
    check_eq(links, [("cudaGraphLaunch", 3)], "each graph execution links to its launch")
    t = trace(r)
    check_eq(len([sl for sl in t.slices if sl[2] == "GRAPH_LAUNCH"]), 3, "on the GPU tracks")


def test_nvtx_strings_domains_start_end_and_names():
    need_gpu("nvtx_features")
    r = syscope("sample", "--output-format", "rocpd pftrace", "--", fixture("nvtx_features"))
    check_eq(r.rc, 0, r.describe())
    check("nvtx_features ok" in r.out, r.describe())
    db = database(r)
    pid = r.main_pid()
    ranges = {name: (tid, end - start) for name, tid, start, end in rows(
        db, "SELECT name, tid, start, end FROM regions WHERE category = 'MARKER_CORE_API'")}
    print("   ", ranges)
    check_eq(sorted(ranges), ["cross-thread", "registered step", "wide range \u2713"],
             "registered, wide and start/end ranges by their names")
    check_eq(ranges["cross-thread"][0], pid, "a start/end range on the thread that started it")
    check(ranges["cross-thread"][1] >= 20e6, "ended 20 ms later by another thread")
    args = dict(rows(db, "SELECT A.name, A.value FROM region_args A JOIN regions R ON "
                         "R.id = A.id AND R.guid = A.guid WHERE R.name = 'registered step'"))
    check_eq(args, {"domain": "my domain", "payload": "42"}, "domain and payload as arguments")
    check_eq(rows(db, "SELECT name FROM threads WHERE tid = ?", pid), [("nvtx-main",)],
             "nvtxNameOsThread names the thread")
    marks = rows(db, "SELECT json_extract(extdata, '$.message') FROM samples "
                     "WHERE category = 'MARKER_CORE_API'")
    check_eq(marks, [("mark with payload",)], "the mark")
    streams = [n for (n,) in rows(db, "SELECT name FROM rocpd_info_stream")]
    check("io stream" in streams, f"the named stream: {streams}")
    trace(r)


def test_driver_only_program():
    need_gpu("cuda_driver_only")
    r = syscope("sample", "--output-format", "rocpd", "--", fixture("cuda_driver_only"),
                fixture("driver_kernels.fatbin"))
    check_eq(r.rc, 0, r.describe())
    db = database(r)
    check_eq(rows(db, "SELECT name, COUNT(*), grid_x, workgroup_x FROM kernels GROUP BY name"),
             [("triple", 4, 64 * 256, 256)], "kernels")
    links = rows(db, "SELECT R.name, COUNT(*) FROM kernels K JOIN regions R "
                     "ON R.stack_id = K.stack_id WHERE R.category = 'CUDA_DRIVER_API' "
                     "GROUP BY R.name")
    check_eq(links, [("cuLaunchKernel", 4)], "driver launches linked to their kernels")
    check_eq(rows(db, "SELECT name, size FROM memory_copies ORDER BY start"),
             [("MEMORY_COPY_HOST_TO_DEVICE", 65536), ("MEMORY_COPY_DEVICE_TO_HOST", 65536)],
             "copies")


def test_domains_and_switch():
    need_gpu("cuda_workload")
    r = syscope("sample", "--output-format", "rocpd", "--cuda-domains", "kernel", "--",
                fixture("cuda_workload"))
    check_eq(r.rc, 0, r.describe())
    db = database(r)
    check_eq(rows(db, "SELECT COUNT(*) FROM kernels"), [(21,)], "kernels only")
    check_eq(rows(db, "SELECT COUNT(*) FROM memory_copies"), [(0,)], "no copies")
    check_eq(rows(db, "SELECT COUNT(*) FROM regions WHERE category LIKE 'CUDA%'"), [(0,)],
             "no API calls")
    r = syscope("sample", "--output-format", "rocpd", "--no-cuda", "--",
                fixture("cuda_workload"))
    check_eq(r.rc, 0, r.describe())
    check_eq(rows(database(r), "SELECT COUNT(*) FROM kernels"), [(0,)], "--no-cuda")


def test_api_include_and_exclude():
    need_gpu("cuda_workload")

    def api_calls(*flags):
        r = syscope("sample", "--output-format", "rocpd", *flags, "--", fixture("cuda_workload"))
        check_eq(r.rc, 0, r.describe())
        db = database(r)
        copies = rows(db, "SELECT COUNT(*) FROM memory_copies")[0][0]
        return dict(rows(db, "SELECT name, COUNT(*) FROM regions WHERE category = "
                             "'CUDA_RUNTIME_API' GROUP BY name")), copies

    calls, copies = api_calls("--cuda-api-exclude", "")
    check_eq((calls.get("cudaGetDevice"), calls.get("cudaGetLastError"), calls.get("cudaMemcpy")),
             (1, 1, 3), "an empty exclude traces every function")
    calls, copies = api_calls("--cuda-api-exclude", "^cudaMemcpy$")
    check_eq((calls.get("cudaMemcpy"), calls.get("cudaMalloc"), calls.get("cudaGetDevice")),
             (None, 3, 1), "only cudaMemcpy left out")
    check_eq(copies, 4, "the three copies and the set are still recorded")
    calls, _ = api_calls("--cuda-api-include", "^cuda(Malloc|Free)$")
    check_eq(sorted(calls.items()), [("cudaFree", 3), ("cudaMalloc", 3)], "only those included")


def test_gpu_telemetry():
    need_gpu("cuda_workload")
    from test_host_telemetry import counters
    r = syscope("sample", "--gpu=all", "--process-freq", "200", "--output-format", "rocpd",
                "--", fixture("cuda_workload"))
    check_eq(r.rc, 0, r.describe())
    c = counters(r)
    print("   ", {n: (min(v), max(v), len(v)) for n, v in c.items() if n.startswith("GPU 0")})
    print("   ", [line for line in r.err.splitlines() if "GPU telemetry" in line])
    check(all(0 <= v <= 100 for v in c["GPU 0 utilization"]), "a percentage")
    check(all(20 <= v <= 1500 for v in c["GPU 0 power"]), "watts of a data-centre GPU")
    check(all(10 <= v <= 110 for v in c["GPU 0 temperature"]), "degrees C")
    check(max(c["GPU 0 memory used"]) >= 9 * MiB, "at least the 9 MiB the fixture allocates")
    check(min(c["GPU 0 SM clock"]) > 100, "MHz")
    pcie = [c.get("GPU 0 PCIe bytes " + d) for d in ("in", "out")]
    if all(pcie):
        check(pcie[0][-1] + pcie[1][-1] >= 12 * MiB, f"the 12 MiB copied: {pcie}")


def test_pytorch_loop():
    need_gpu("cuda_workload")
    script = os.path.join(harness.SOURCE, "tests", "programs", "cuda", "torch_loop.py")
    probe = subprocess.run(["python3", "-c", "import torch; assert torch.cuda.is_available()"],
                           capture_output=True)
    if probe.returncode:
        raise Skip("PyTorch with CUDA not installed")
    r = syscope("sample", "--output-format", "rocpd", "--", "python3", script, "20")
    check_eq(r.rc, 0, r.describe())
    dbs = [f for f in r.files() if f.startswith("rocpd-") and f.endswith(".db")]
    db = sqlite3.connect(r.path(dbs[0]))
    steps = rows(db, "SELECT COUNT(*) FROM regions WHERE category = 'MARKER_CORE_API' "
                     "AND name = 'train step'")
    check_eq(steps, [(20,)], "one NVTX range per step")
    n = rows(db, "SELECT COUNT(*) FROM kernels")[0][0]
    check(n >= 20 * 3, f"kernels of forward, backward and optimizer ({n})")
    inside = rows(db, "SELECT COUNT(*) FROM kernels K JOIN regions L ON L.stack_id = K.stack_id "
                      "JOIN regions S ON S.name = 'train step' AND L.start >= S.start "
                      "AND L.end <= S.end")
    check(inside[0][0] >= 20 * 3, f"kernels launched inside the steps ({inside})")


def test_child_started_with_a_fresh_environment_is_traced():
    """A launcher that gives its child an environment of its own (Python's subprocess with
    env=..., a job scheduler): the CUDA variables are carried like LD_PRELOAD."""
    need_gpu("cuda_workload")
    parent = ("import subprocess, sys; "
              "sys.exit(subprocess.run([sys.argv[1]], env={'PATH': '/usr/bin:/bin'}).returncode)")
    r = syscope("sample", "--output-format", "rocpd", "--", "python3", "-c", parent,
                fixture("cuda_workload"))
    check_eq(r.rc, 0, r.describe())
    check("cuda_workload ok" in r.out, r.describe())
    counts = {}
    for f in r.files():
        if f.startswith("rocpd-") and f.endswith(".db"):
            db = sqlite3.connect(r.path(f))
            counts[f] = rows(db, "SELECT COUNT(*) FROM kernels")[0][0]
    check(21 in counts.values() and sum(counts.values()) == 21,
          f"the child's 21 kernels: {counts}")


JAX_STEP = """
import jax, jax.numpy as jnp
x = jnp.ones((512, 512), dtype=jnp.float32)
for _ in range(5):
    x = jnp.tanh(x @ x / 512.0)
x.block_until_ready()
print("jax ok", jax.devices()[0].platform, float(x[0, 0]))
"""


def test_jax_program():
    """JAX loads its C++ runtime RTLD_LOCAL and throws C++ exceptions at start: it crashed
    under every verb while syscope's exception hooks forwarded to a NULL RTLD_NEXT."""
    need_gpu("cuda_workload")
    probe = subprocess.run(["python3", "-c", "import jax"], capture_output=True)
    if probe.returncode:
        raise Skip("JAX not installed")
    plain = subprocess.run(["python3", "-c", JAX_STEP], capture_output=True, text=True)
    check_eq(plain.returncode, 0, plain.stderr[-2000:])
    r = syscope("sample", "--output-format", "rocpd", "--", "python3", "-c", JAX_STEP,
                timeout=600)
    check_eq(r.rc, 0, r.describe())
    check_eq(r.out.strip().splitlines()[-1], plain.stdout.strip().splitlines()[-1],
             "the same answer as the plain run")
    check("jax ok gpu" in r.out, r.out)
    kernels = 0
    for f in r.files():
        if f.startswith("rocpd-") and f.endswith(".db"):
            kernels += rows(sqlite3.connect(r.path(f)), "SELECT COUNT(*) FROM kernels")[0][0]
    check(kernels >= 5, f"XLA's kernels recorded ({kernels})")


if __name__ == "__main__":
    harness.main(globals())
