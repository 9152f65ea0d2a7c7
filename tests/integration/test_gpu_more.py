"""NVTX at the cost of a user region, replayed kernels inside their launches, and NCCL calls
linked to their kernels, on a real GPU (scripts/gpu-check). Skipped, with the reason, where
there is no NVIDIA GPU or the CUDA fixtures were not built (no nvcc); JAX's test also where
JAX with a GPU backend is not installed."""
import os
import re
import shutil
import sqlite3
import subprocess

import harness
from harness import Skip, check, check_eq, fixture, need_gpu, syscope

import pftrace
import trace_processor
from rocpd_checks import rows

N = 1000  # ranges of each kind in nvtx_cost's checked run
JAX_STEPS = os.path.join(harness.SOURCE, "tests", "programs", "cuda", "jax_steps.py")


def database(r):
    dbs = [f for f in r.files() if f.startswith("rocpd-") and f.endswith(".db")]
    check_eq(len(dbs), 1, f"one database in {r.files()}\n{r.describe()}")
    return sqlite3.connect(r.path(dbs[0]))


def costs(out):
    """{kind: ns per range} of nvtx_cost's lines."""
    found = {}
    for line in out.splitlines():
        if line.startswith("kind="):
            f = dict(x.split("=") for x in line.split())
            found[f["kind"]] = float(f["ns_per_range"])
    return found


def test_nvtx_ranges_are_regions_with_exact_counts():
    need_gpu("nvtx_cost")
    r = syscope("sample", "--output-format", "rocpd", "--", fixture("nvtx_cost"), N)
    check_eq(r.rc, 0, r.describe())
    db = database(r)
    got = dict(rows(db, "SELECT name, COUNT(*) FROM regions WHERE category = "
                        "'MARKER_CORE_API' GROUP BY name"))
    check_eq(got, {"push a": N, "domain ascii": N, "domain registered": N, "domain payload": N,
                   "domain start end": N, "start end a": N},
             "every push/pop and start/end range of each kind, by its name")
    check_eq(rows(db, "SELECT COUNT(*) FROM regions WHERE name = 'user region'"), [(N,)],
             "the user regions beside them")
    marks = rows(db, "SELECT COUNT(*) FROM samples WHERE category = 'MARKER_CORE_API' AND "
                     "json_extract(extdata, '$.message') = 'mark a'")
    check_eq(marks, [(N,)], "the marks")
    args = rows(db, "SELECT A.name, A.value, COUNT(*) FROM region_args A JOIN regions R ON "
                    "R.id = A.id AND R.guid = A.guid WHERE R.name = 'domain payload' "
                    "GROUP BY A.name, A.value ORDER BY A.name")
    check_eq(args, [("domain", "cost", N), ("nvtx category", "7", N), ("payload", "42", N)],
             "domain, payload and category of each range")
    pid = r.main_pid()
    check_eq(rows(db, "SELECT DISTINCT tid FROM regions WHERE name = 'domain start end'"),
             [(pid,)], "start/end ranges on the thread that started them")
    # The cost of each kind, printed beside a user region's (not asserted: machines differ).
    plain = subprocess.run([fixture("nvtx_cost"), "100000"], capture_output=True, text=True,
                           timeout=300)
    traced = syscope("sample", "--output-format", "rocpd", "--", fixture("nvtx_cost"), 100000,
                     timeout=600)
    check_eq(traced.rc, 0, traced.describe())
    base, cost = costs(plain.stdout), costs(traced.out)
    for kind in sorted(cost):
        print(f"    {kind:<22} {cost[kind]:9.1f} ns (without syscope {base.get(kind, 0):7.1f})")


def test_nvtx_recorded_without_a_gpu():
    """NVTX calls syscope's library directly, so NVTX is recorded with no GPU: the fixture
    stands in for the CUDA driver (it calls InitializeInjection), an empty libcuda.so.1
    lets the library load."""
    lib = os.path.join(harness.BUILD, "lib", "syscope", "libsyscope-cuda.so")
    fake = os.path.join(harness.FIXTURES, "fake-cuda")
    if not os.path.exists(lib):
        raise Skip("syscope was built without CUDA tracing (no CUPTI)")
    if not os.path.exists(fixture("nvtx_nogpu")) or not os.path.isdir(fake):
        raise Skip("nvtx_nogpu or fixtures/fake-cuda not built (or not carried here)")
    r = syscope("sample", "--output-format", "rocpd", "--", fixture("nvtx_nogpu"),
                env={"LD_LIBRARY_PATH": fake})
    check_eq(r.rc, 0, r.describe())
    check("nvtx_nogpu ok" in r.out, r.describe())
    db = database(r)
    pid = r.main_pid()
    got = rows(db, "SELECT name, tid, COUNT(*) FROM regions WHERE category = 'MARKER_CORE_API' "
                   "GROUP BY name, tid ORDER BY name")
    check_eq(got, [("cross-thread", pid, 1), ("ncclAllReduce", pid, 1), ("push a", pid, 3),
                   ("step", pid, 2), ("wide \u2713", pid, 1)],
             "push/pop (nested), wide, registered, start/end ranges, by name and thread")
    args = rows(db, "SELECT R.name, A.name, A.value, COUNT(*) FROM region_args A JOIN regions R "
                    "ON R.id = A.id AND R.guid = A.guid GROUP BY R.name, A.name, A.value "
                    "ORDER BY R.name, A.name")
    check_eq(args, [("ncclAllReduce", "bytes", "4096", 1), ("ncclAllReduce", "comm", "0x0000000000001234", 1),
                    ("ncclAllReduce", "domain", "NCCL", 1), ("ncclAllReduce", "op", "Max", 1),
                    ("step", "domain", "work", 2), ("step", "nvtx category", "3", 2),
                    ("step", "payload", "7", 2)],
             "domains, payloads, categories and an extended payload decoded by its schema")
    marks = rows(db, "SELECT json_extract(extdata, '$.message') FROM samples "
                     "WHERE category = 'MARKER_CORE_API'")
    check_eq(marks, [("mark a",)], "the mark")


def need_jax_gpu():
    if not shutil.which("nvidia-smi"):
        raise Skip("no NVIDIA GPU or driver on this machine")
    probe = subprocess.run(["python3", "-c", "import jax; assert jax.default_backend() == 'gpu'"],
                           capture_output=True, text=True, timeout=300)
    if probe.returncode:
        raise Skip("JAX with a GPU backend not installed")


def test_jax_step_loop_with_nvtx_ranges():
    need_gpu("nvtx_cost")
    need_jax_gpu()
    steps = 300
    plain = subprocess.run(["python3", JAX_STEPS, str(steps)], capture_output=True, text=True,
                           timeout=600)
    check_eq(plain.returncode, 0, plain.stderr[-2000:])
    r = syscope("sample", "--output-format", "rocpd", "--", "python3", JAX_STEPS, steps,
                timeout=900)
    check_eq(r.rc, 0, r.describe())
    check("jax_steps ok" in r.out, r.describe())
    db = database(r)
    (ranges,), = rows(db, "SELECT COUNT(*) FROM regions WHERE category = 'MARKER_CORE_API'")
    check(ranges >= steps, f"XLA's NVTX ranges recorded: {ranges} for {steps} steps")
    names = rows(db, "SELECT name, COUNT(*) FROM regions WHERE category = 'MARKER_CORE_API' "
                     "GROUP BY name ORDER BY 2 DESC LIMIT 5")
    check(all(n and n != "(unnamed)" for n, _ in names), f"named ranges: {names}")

    def per_step(out):
        return [float(line.split("us_per_step=")[1]) for line in out.splitlines()
                if "us_per_step=" in line][0]

    print(f"    {ranges / steps:.1f} NVTX ranges a step; {per_step(r.out):.1f} us a step "
          f"under syscope, {per_step(plain.stdout):.1f} without; most frequent: {names}")


COPY_BYTES = 256 << 20  # counter_kernels' copy kernel reads and writes this much
READ = "dram__bytes_read.sum"


def test_replayed_kernels_inside_their_launches():
    """Under kernel replay CUPTI gives kernels no timestamps: each is placed inside the launch
    call that ran it, after the call begins, and its values are the copy's real traffic."""
    need_gpu("counter_kernels")
    for events in (READ, READ + ",sm__cycles_active.avg.pct_of_peak_sustained_elapsed,"
                   "sm__throughput.avg.pct_of_peak_sustained_elapsed"):
        r = syscope("sample", "--gpu-events", events, "--output-format", "rocpd", "--",
                    fixture("counter_kernels"))
        check_eq(r.rc, 0, r.describe())
        db = database(r)
        placed = rows(db, "SELECT K.name, K.start - R.start, R.end - K.end FROM kernels K JOIN "
                          "regions R ON R.guid = K.guid AND R.stack_id = K.stack_id WHERE "
                          "R.name = 'cudaLaunchKernel' ORDER BY K.start")
        check_eq(len(placed), 6, f"six kernels, each with its launch: {placed}")
        outside = [p for p in placed if p[1] <= 0 or p[2] < 0]
        check_eq(outside, [], f"kernels inside their launch calls, after they begin ({events})")
        reads = rows(db, "SELECT V.counter_value FROM pmc_events V JOIN kernels K ON "
                         "K.dispatch_id = V.dispatch_id AND K.guid = V.guid WHERE "
                         "K.name LIKE 'copy_kernel%' AND V.counter_name = ?", READ)
        check_eq(len(reads), 3, "the copy kernel's values")
        check(all(abs(v / COPY_BYTES - 1) < 0.10 for (v,) in reads),
              f"copy DRAM bytes read {reads} vs {COPY_BYTES}")
        print(f"    {events.count(',') + 1} metrics: ns from launch start, to launch end: "
              f"{[(n.split('(')[0], a, b) for n, a, b in placed]}")


def nccl_env():
    """LD_LIBRARY_PATH with a libnccl.so.2 (the toolkit's, else a pip package's: PyTorch's)."""
    probe = subprocess.run(["python3", "-c", "import glob, site; print(*[g for s in "
                            "site.getsitepackages() for g in glob.glob(s + '/nvidia/nccl/lib')])"],
                           capture_output=True, text=True, timeout=60)
    dirs = probe.stdout.split() + ["/usr/local/cuda/lib64", "/usr/local/cuda/lib"]
    old = os.environ.get("LD_LIBRARY_PATH")
    return {"LD_LIBRARY_PATH": ":".join(dirs + ([old] if old else []))}


def need_nccl():
    need_gpu("nccl_collectives")
    p = subprocess.run([fixture("nccl_collectives"), "1"], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, **nccl_env()))
    if p.returncode:
        raise Skip(f"NCCL does not run here: {p.stderr.strip()[-300:]}")


def expected_calls(out):
    return [(k, int(c), int(b)) for k, c, b in re.findall(r"^call (\w+) (\d+) (\d+)$", out, re.M)]


def test_nccl_nvtx_payloads_without_the_plugin():
    need_nccl()
    r = syscope("sample", "--output-format", "rocpd", "--", fixture("nccl_collectives"), 1,
                timeout=600, env=nccl_env())
    check_eq(r.rc, 0, r.describe())
    db = database(r)
    found = []
    for rid, name in rows(db, "SELECT R.id, R.name FROM regions R WHERE R.category = "
                              "'MARKER_CORE_API' ORDER BY R.start"):
        a = dict(rows(db, "SELECT name, value FROM region_args WHERE id = ?", rid))
        kind = name[len("nccl"):]
        if a.get("domain") == "NCCL" and any(kind == k for k, _, _ in expected_calls(r.out)):
            found.append((kind, int(a.get("bytes", -1)), a.get("op"), a.get("root"),
                          a.get("peer")))
    want = [(k, b, "Sum" if k in ("AllReduce", "ReduceScatter") else None,
             "0" if k == "Broadcast" else None, "0" if k in ("Send", "Recv") else None)
            for k, _, b in expected_calls(r.out)]
    check_eq(found, want, "each NCCL call's NVTX range with its bytes, op, root or peer")


def test_nccl_calls_flow_to_their_gpu_work():
    need_nccl()
    r = syscope("sample", "--parallel=nccl", "--output-format", "rocpd pftrace", "--",
                fixture("nccl_collectives"), 1, timeout=600, env=nccl_env())
    check_eq(r.rc, 0, r.describe())
    names = [f for f in r.files() if f.endswith(".pftrace")]
    check_eq(len(names), 1, "one trace")
    t = pftrace.Trace(open(r.path(names[0]), "rb").read())
    check_eq(t.errors, [], "valid trace")
    gpu_names = {sl[1] for sl in t.slices if sl[2] in ("KERNEL_DISPATCH", "MEMORY_COPY")}
    nccl = [(src, dst) for fid, src, dst in t.flows if fid >> 60 == 5]
    by_call = {}
    for src, dst in nccl:
        check(dst in gpu_names, f"an NCCL flow ends at a kernel or copy: {dst}")
        by_call.setdefault(src, []).append(dst)
    calls = [k for k, _, _ in expected_calls(r.out)]
    for kind in calls:
        check(len(by_call.get("nccl" + kind, [])) >= calls.count(kind),
              f"nccl{kind}: a flow to its GPU work: {by_call}")
    print(f"    {len(nccl)} NCCL flows: {sorted(by_call.items())}")
    why = trace_processor.available()
    if why:
        print(f"    trace processor check left out: {why}")
        return
    got = trace_processor.query(r.path(names[0]), "SELECT S.name, D.name FROM flow F JOIN slice "
                                "S ON S.id = F.slice_out JOIN slice D ON D.id = F.slice_in "
                                "WHERE S.category = 'nccl'")
    check_eq(sorted(map(tuple, got)), sorted(nccl), "the trace processor sees the same flows")


if __name__ == "__main__":
    harness.main(globals())
