"""`syscope summary --why-idle` (issue 24) on synthetic sessions with known answers: the busy
fraction of each GPU (union over its streams), its idle intervals and what the launching
thread did in them (tests/tools/gen_session.c, --idle-* options, says what each session
holds: a gap is --idle-gap-ns + 2 us, of which 2 us inside the launch call)."""
import json
import os
import shutil
import subprocess
import tempfile

import harness
from harness import check, check_eq, gen_session, syscope

import pftrace

GAP = 1000000 + 2000  # ns: the gap of the cause, then the launch call's first 2 us


def why_idle(*inputs, extra=()):
    r = syscope("summary", "--why-idle", *extra, *inputs)
    check_eq(r.rc, 0, r.describe())
    return r


def idle_json(*inputs, extra=()):
    return json.loads(why_idle(*inputs, extra=("--format", "json") + tuple(extra)).out)


def cause(gpu, key):
    found = [c for c in gpu["causes"] if c["cause"] == key]
    check(found, f"cause {key} in {[c['cause'] for c in gpu['causes']]}")
    return found[0]


def check_accounted(gpu):
    """Every attributed idle nanosecond has a cause (nothing lost)."""
    attributed = gpu["idle_ns"] - gpu["short_ns"]
    total = sum(c["idle_ns"] for c in gpu["causes"])
    check(abs(total - attributed) <= len(gpu["causes"]),
          f"causes add up to the idle time: {total} vs {attributed}")


def test_sync_gaps_busy_fraction():
    steps, kernel = 11, 300000
    s = gen_session("--pid", 6101, "--idle-steps", steps, "--kernel-ns", kernel,
                    "--idle-causes", "sync")
    (gpu,) = idle_json(s)["gpus"]
    busy = steps * kernel
    span = busy + (steps - 1) * GAP
    check_eq((gpu["ops"], gpu["intervals"], gpu["short_intervals"]), (steps, steps - 1, 0),
             "ops and idle intervals")
    check_eq((gpu["busy_ns"], gpu["span_ns"]), (busy, span), "busy union and span")
    check(abs(gpu["busy_fraction"] - busy / span) < 0.001, f"busy fraction {gpu}")
    top = gpu["causes"][0]
    check_eq(top["cause"], "synchronization", "top cause")
    # The launch latency after a synchronization that drained the queue is its cost too.
    check_eq(top["idle_ns"], (steps - 1) * GAP, f"sync explains every gap: {top}")
    check_eq([c["cause"] for c in gpu["causes"]], ["synchronization"], "the only cause")
    check_eq(top["names"][0]["name"], "cudaDeviceSynchronize", "the synchronizing call")
    check_eq(top["intervals"], steps - 1, "main cause of every gap")
    check_accounted(gpu)


def test_many_gaps_through_spilled_tables():
    """60 000 gaps: the analysis's samples (540 000), regions and gaps pass its bounds
    (src/model/gpu_idle.c, spilled to disk) and every one is still accounted for."""
    steps = 60001
    s = gen_session("--pid", 6119, "--idle-steps", steps, "--idle-causes", "sync,compute")
    (gpu,) = idle_json(s)["gpus"]
    half = (steps - 1) // 2
    check_eq((gpu["ops"], gpu["intervals"]), (steps, steps - 1), "ops and idle intervals")
    got = {c["cause"]: (c["idle_ns"], c["intervals"]) for c in gpu["causes"]}
    check_eq(got, {"synchronization": (half * GAP, half),
                   "host_compute": (half * 1000000, half),
                   "launch": (half * 2000, 0)}, "each gap's cause")
    compute = cause(gpu, "host_compute")
    check_eq([(k["samples"], k["frames"][-1]) for k in compute["stacks"]],
             [(9 * half, "gen_leaf_a")], "every sample of the compute gaps")
    check_accounted(gpu)


def test_gil_and_loader_ranked():
    # 9 steps, 8 gaps: gil, gil, gil, loader, gil, gil, gil, loader.
    s = gen_session("--pid", 6102, "--idle-steps", 9, "--kernel-ns", 200000,
                    "--idle-causes", "gil,gil,gil,loader")
    (gpu,) = idle_json(s)["gpus"]
    causes = [c["cause"] for c in gpu["causes"]]
    check_eq(causes[:2], ["gil_wait", "data_loader"], "ranked by idle time")
    gil, loader = gpu["causes"][0], gpu["causes"][1]
    check(abs(gil["share_of_idle"] - 6 * 1000000 / (8 * GAP)) < 0.02, f"GIL share {gil}")
    check(abs(loader["share_of_idle"] - 2 * 1000000 / (8 * GAP)) < 0.02,
          f"loader share {loader}")
    check_eq((gil["intervals"], loader["intervals"]), (6, 2), "main cause per gap")
    check_eq(gil["stacks"][0], {"samples": 6 * 9, "frames": ["gen_root", "take_gil"]},
             "the GIL wait's stack: 9 samples per gap")
    check_eq(loader["stacks"][0]["frames"],
             ["gen_root", "gen_DataLoader_next", "gen__getitem__", "gen_time_sleep"],
             "the data loader's stack")
    check_eq(loader["names"][0]["name"], "gen__getitem__", "named by its innermost frame")
    check_accounted(gpu)
    text = why_idle(s).out
    head = text.splitlines()[0]
    idle = 100 * gpu["idle_fraction"]
    check(head.startswith(f"GPU 0 (process 6102, NVIDIA H200) idle {idle:.1f}% of "), head)
    check(f": {100 * gil['share_of_span']:.1f}% launching thread waited for the GIL, "
          f"{100 * loader['share_of_span']:.1f}% launching thread in a data loader in "
          "gen__getitem__" in head, head)
    check("54 samples: gen_root > take_gil" in text, text)


def test_sync_that_did_not_wait_for_the_gpu():
    """A synchronization that returned before the next kernel started did not drain the
    queue before the gap that kernel's end begins: that gap's host compute stays its own."""
    s = gen_session("--pid", 6118, "--idle-steps", 9, "--kernel-ns", 20000, "--idle-causes",
                    "sync,compute")
    (gpu,) = idle_json(s)["gpus"]
    check_eq([(c["cause"], c["intervals"]) for c in gpu["causes"]][:2],
             [("synchronization", 4), ("host_compute", 4)], "4 gaps each")
    check(abs(cause(gpu, "host_compute")["share_of_idle"] - 0.5 * 1000000 / GAP) < 0.02,
          "compute's share")


def test_gil_launch_latency_apart():
    s = gen_session("--pid", 6113, "--idle-steps", 3, "--idle-causes", "gil")
    (gpu,) = idle_json(s)["gpus"]
    check_eq(cause(gpu, "launch")["idle_ns"], 2 * 2000, "2 us per launch, no sync before")


def test_python_frames_and_gil_state():
    """gen_py_session --gpu: the one idle interval's next op is launched by the worker thread,
    whose wall-clock samples in it are 26 GIL waits and 20 in Python code or below it."""
    s = os.path.join(tempfile.mkdtemp(prefix="syscope-idle-py-"), "session")
    subprocess.run([os.path.join(harness.BUILD, "bin", "gen_py_session"), s, "--gpu"],
                   check=True)
    (gpu,) = idle_json(s)["gpus"]
    check_eq(gpu["intervals"], 1, "one idle interval")
    gil, compute = gpu["causes"][0], gpu["causes"][1]
    check_eq(gil["cause"], "gil_wait", "top cause")
    check_eq(gil["stacks"], [{"samples": 26, "frames": ["gen_thread_root", "worker",
                                                       "[waiting for the GIL]"]}],
             "the Python frame above the GIL wait")
    check(abs(gil["share_of_idle"] - 26 / 46) < 0.01, f"GIL share {gil}")
    check_eq((compute["cause"], sorted(n["name"] for n in compute["names"])),
             ("host_compute", ["gen_deflate", "worker"]), "native and Python leaves")
    shutil.rmtree(os.path.dirname(s))


def test_host_compute_names_the_function():
    s = gen_session("--pid", 6103, "--idle-steps", 4, "--idle-causes", "compute")
    (gpu,) = idle_json(s)["gpus"]
    top = gpu["causes"][0]
    check_eq((top["cause"], top["names"][0]["name"]), ("host_compute", "gen_leaf_a"),
             "host compute in its top function")
    check(abs(top["share_of_idle"] - 1000000 / GAP) < 0.02, f"share {top}")


def test_cpu_time_samples_tell_off_cpu_time():
    """With CPU-time samples (100 us period), a gap without one was spent off-CPU; one with 9
    samples in 1 ms ran 900 us and was off-CPU the rest."""
    s = gen_session("--pid", 6114, "--idle-steps", 5, "--idle-cputime", "--idle-causes",
                    "offcpu")
    (gpu,) = idle_json(s)["gpus"]
    top = gpu["causes"][0]
    check_eq(top["cause"], "not_running", "no sample: not running")
    check(abs(top["share_of_idle"] - 1000000 / GAP) < 0.02, f"share {top}")
    s = gen_session("--pid", 6115, "--idle-steps", 5, "--idle-cputime", "--idle-causes",
                    "compute")
    (gpu,) = idle_json(s)["gpus"]
    check_eq([c["cause"] for c in gpu["causes"]][:2], ["host_compute", "not_running"], "ranked")
    check(abs(gpu["causes"][0]["share_of_idle"] - 900000 / GAP) < 0.02, "90% on CPU")
    check(abs(gpu["causes"][1]["share_of_idle"] - 100000 / GAP) < 0.02, "10% off CPU")
    check_accounted(gpu)


def test_overlapping_streams_counted_once():
    steps, kernel = 6, 400000
    s = gen_session("--pid", 6104, "--idle-steps", steps, "--kernel-ns", kernel,
                    "--idle-overlap", "--idle-causes", "gil")
    (gpu,) = idle_json(s)["gpus"]
    busy = steps * kernel * 3 // 2  # two kernels, half of each over the other
    check_eq(gpu["ops"], 2 * steps, "two kernels a step, on streams 7 and 8")
    check_eq(gpu["busy_ns"], busy, "overlap counted once")
    check_eq(gpu["idle_ns"], (steps - 1) * GAP, "idle between the steps only")
    check(abs(gpu["busy_fraction"] - busy / (busy + (steps - 1) * GAP)) < 0.001,
          "busy fraction")
    check_eq(gpu["causes"][0]["cause"], "gil_wait", "top cause")


def two_ranks(waits, late, pids):
    """Rank 0 waits in a collective in every gap; rank 1 computes and enters each one
    late. Returns why_idle's JSON GPUs by rank and its text."""
    work = tempfile.mkdtemp(prefix="syscope-idle-")
    common = ("--start", 1000000000, "--idle-steps", 5, "--kernel-ns", 500000)
    dbs = []
    for rank, cause_, pid in ((0, waits, pids[0]), (1, late, pids[1])):
        s = gen_session("--pid", pid, "--rank", rank, *common, "--idle-causes", cause_,
                        workdir=work)
        r = syscope("convert", "--output-format", "rocpd", s)
        check_eq(r.rc, 0, r.describe())
        dbs.append(os.path.join(s, f"rocpd-{pid}.db"))
    gpus = {g["rank"]: g for g in idle_json(*dbs)["gpus"]}
    check_eq(sorted(gpus), [0, 1], "one GPU per rank")
    merged = os.path.join(work, "merged.db")
    r = syscope("merge", "-o", merged, *dbs)
    check_eq(r.rc, 0, r.describe())
    check_eq({g["rank"]: g for g in idle_json(merged)["gpus"]}, gpus,
             "the merged database says the same")
    return gpus, why_idle(*dbs).out


def test_merged_ranks_name_the_slowest():
    gpus, text = two_ranks("mpi", "late", (6110, 6111))
    mpi = gpus[0]["causes"][0]
    check_eq((mpi["cause"], mpi["names"][0]["name"]), ("mpi", "MPI_Allreduce"), "rank 0")
    check_eq([p["name"] for p in mpi["peers"]], ["rank 1"], "waiting for rank 1")
    check(abs(mpi["share_of_idle"] - 1000000 / GAP) < 0.02, f"share {mpi}")
    late = gpus[1]["causes"][0]
    check_eq(late["cause"], "host_compute", "rank 1 computed")
    check_eq(cause(gpus[1], "mpi")["peers"], [], "rank 1 waited for nobody")
    check("GPU 0 of rank 0 (process 6110, NVIDIA H200) idle" in text, text)
    check("in MPI_Allreduce waiting for rank 1" in text, text)


def test_nccl_regions_are_collectives():
    gpus, text = two_ranks("nccl", "nccl_late", (6116, 6117))
    nccl = gpus[0]["causes"][0]
    check_eq((nccl["cause"], nccl["names"][0]["name"]), ("nccl", "ncclAllReduce"), "rank 0")
    check_eq([p["name"] for p in nccl["peers"]], ["rank 1"], "waiting for rank 1")
    check(abs(nccl["share_of_idle"] - 1000000 / GAP) < 0.02, f"share {nccl}")
    check_eq(gpus[1]["causes"][0]["cause"], "host_compute", "rank 1 computed")
    check("in ncclAllReduce waiting for rank 1" in text, text)


def test_short_intervals_counted_not_attributed():
    s = gen_session("--pid", 6105, "--idle-steps", 3, "--idle-causes", "gil")
    (gpu,) = idle_json(s, extra=("--idle-threshold", "2000"))["gpus"]
    check_eq((gpu["intervals"], gpu["short_intervals"], gpu["short_ns"]), (2, 2, 2 * GAP),
             "both gaps under 2000 us")
    check_eq(gpu["causes"], [], "nothing attributed")
    head = why_idle(s, extra=("--idle-threshold", "2000")).out.splitlines()[0]
    check("2 shorter than 2000 us" in head and "not attributed" in head, head)


def test_bad_input():
    s = gen_session("--pid", 6106, "--idle-steps", 2)
    r = syscope("summary", "--why-idle", "--idle-threshold", "soon", s)
    check_eq(r.rc, 2, r.describe())
    check("--idle-threshold 'soon'" in r.err and "microseconds" in r.err, r.err)
    r = syscope("summary", "--idle-threshold", "5", s)
    check_eq(r.rc, 2, r.describe())
    check("--idle-threshold goes with --why-idle" in r.err, r.err)
    r = syscope("summary", "--why-idle", "/nonexistent/session")
    check(r.rc != 0 and "/nonexistent/session" in r.err, r.describe())
    r = syscope("summary", "--why-idle", "--format", "csv", s)
    check_eq(r.rc, 2, r.describe())
    check("table or JSON" in r.err, r.err)


def test_end_of_run_summary_and_json_profile():
    s = gen_session("--pid", 6108, "--idle-steps", 5, "--kernel-ns", 250000,
                    "--idle-causes", "loader")
    r = syscope("convert", "--output-format", "json", s)
    check_eq(r.rc, 0, r.describe())
    line = [ln for ln in r.err.splitlines() if ln.startswith("syscope: GPU 0 (process 6108")]
    check_eq(len(line), 1, r.err)
    busy = 5 * 250000 / (5 * 250000 + 4 * GAP)
    check(f"idle {100 * (1 - busy):.1f}% of " in line[0], line[0])
    check("launching thread in a data loader in gen__getitem__" in line[0], line[0])
    check("syscope summary --why-idle" in r.err, r.err)
    with open(os.path.join(s, "gpu-idle.json")) as f:
        (gpu,) = json.load(f)["gpus"]
    check(abs(gpu["busy_fraction"] - busy) < 0.001, f"busy fraction {gpu}")
    check_eq(gpu["causes"][0]["cause"], "data_loader", "gpu-idle.json: top cause")
    r = syscope("convert", "--output-format", "json", gen_session("--pid", 6109, "--samples", 3))
    check("idle" not in r.err and "gpu-idle.json" not in r.err, "no GPU, no idle lines")


def test_perfetto_idle_track():
    s = gen_session("--pid", 6112, "--idle-steps", 5, "--kernel-ns", 200000,
                    "--idle-causes", "sync,gil")
    r = syscope("convert", "--output-format", "pftrace", s)
    check_eq(r.rc, 0, r.describe())
    with open(os.path.join(s, "perfetto-trace-6112.pftrace"), "rb") as f:
        t = pftrace.Trace(f.read())
    check_eq(t.errors, [], "valid trace")
    (idle,) = [u for u, i in t.tracks.items() if i["name"] == "GPU 0 idle: why"]
    check_eq(t.tracks[t.tracks[idle]["parent"]]["kind"], "process", "in the process")
    gaps = sorted((sl[3], sl[1], sl[4] - sl[3], sl[5]["launching thread"])
                  for sl in t.slices if sl[0] == idle)
    check_eq([g[1:] for g in gaps], [("synchronization", GAP, 6112), ("gil_wait", GAP, 6112)] * 2,
             "a slice per gap, named by its cause")
    flows = [(src, dst) for f, src, dst in t.flows if f >> 60 == 6]
    check_eq(flows, [("synchronization", "launch after GPU idle"),
                     ("gil_wait", "launch after GPU idle")] * 2, "a flow per gap to its launch")
    launches = sorted(i[3] for i in t.instants if i[1] == "launch after GPU idle")
    check_eq([b - a for (a, *_), b in zip(gaps, launches)], [GAP - 2000] * 4,
             "the flows end where the next launch call began")


def test_no_gpu_work():
    s = gen_session("--pid", 6107, "--samples", 5)
    r = why_idle(s)
    check("no GPU work" in r.out, r.out)
    check_eq(json.loads(why_idle(s, extra=("--format", "json")).out)["gpus"], [], "JSON")


if __name__ == "__main__":
    harness.main(globals())
