"""GPU hardware counters (--gpu-events) without a GPU: the settings and their errors, what
avail and a run say on a machine without one, and the per-kernel values of a synthetic
session (gen_session --kernel-metrics, records as the CUDA tracer writes them) in rocpd's PMC
tables, the Perfetto kernel slices and `syscope summary`. The GPU side is
test_cuda_counters.py (scripts/gpu-check)."""
import ctypes
import json
import os
import sqlite3

import harness
from harness import Skip, check, check_eq, fixture, gen_session, syscope

import pftrace
from rocpd_checks import check_conventions, rows

KERNEL = "vectorAdd(float const*, float const*, float*, int)"
DRAM = "dram__bytes_read.sum"
SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
DURATION = "gpu__time_duration.sum"


def gpu_driver_here():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def convert(session, *formats):
    r = syscope("convert", "--output-format", " ".join(formats), session)
    check_eq(r.rc, 0, r.describe())
    return r


def test_settings_listed():
    r = syscope("avail", "-S", "-d", "-r", "^GPU_EVENTS", "--format", "json")
    check_eq(r.rc, 0, r.describe())
    names = sorted(row["environment"] for row in json.loads(r.out)["settings"])
    check_eq(names, ["SYSCOPE_GPU_EVENTS", "SYSCOPE_GPU_EVENTS_INTERVAL"], "both settings")


def test_bad_interval_is_an_error():
    for bad in ("-1", "fast", "20000"):
        r = syscope("sample", "--gpu-events=dram__bytes_read.sum", "--gpu-events-interval",
                    bad, "--", fixture("hot"))
        check_eq(r.rc, 2, f"--gpu-events-interval {bad}\n{r.describe()}")
        check("gpu-events-interval" in r.err and bad in r.err, r.err)
        check(r.session is None or not r.raw_files(), "no run")


def test_interval_without_metrics_is_an_error():
    r = syscope("sample", "--gpu-events-interval", "5", "--", fixture("hot"))
    check_eq(r.rc, 2, r.describe())
    check("--gpu-events-interval samples the metrics of --gpu-events, and none are given"
          in r.err, r.err)


def test_too_many_metrics_is_an_error():
    many = ",".join(f"sm__metric_{i}.sum" for i in range(33))
    r = syscope("sample", "--gpu-events", many, "--", fixture("hot"))
    check_eq(r.rc, 2, r.describe())
    check("--gpu-events: 32 metrics at most" in r.err, r.err)


def test_avail_without_gpu_says_why():
    if gpu_driver_here():
        raise Skip("an NVIDIA driver is here: test_cuda_counters.py lists the metrics")
    r = syscope("avail", "-H", "-c", "GPU")
    check_eq(r.rc, 1, r.describe())
    why = ("built without CUDA support", "no NVIDIA driver here", "no GPU")
    check("avail: no GPU metrics: " in r.err and any(w in r.err for w in why), r.err)
    check_eq(r.out, "", "no table")
    r = syscope("avail", "-H", "-c", "FPGA")
    check_eq(r.rc, 2, r.describe())
    check("valid: CPU, GPU" in r.err, r.err)


def test_run_without_gpu_goes_on():
    # No GPU: the names cannot be checked before the run (said), the program runs profiled.
    if gpu_driver_here():
        raise Skip("an NVIDIA driver is here: test_cuda_counters.py runs the GPU")
    r = syscope("sample", "--gpu-events=dram__bytes_read.sum,no_such_metric.sum",
                "--output-format", "json", "--", fixture("hot"), "1")
    check_eq(r.rc, 0, r.describe())
    check("--gpu-events not checked before the run (" in r.err, r.err)
    prof = r.profile()
    check(prof.meta["functions"], "a CPU profile")


def test_rocpd_pmc_rows():
    s = gen_session("--pid", 5301, "--kernels", 4, "--kernel-metrics")
    convert(s, "rocpd")
    db = sqlite3.connect(os.path.join(s, "rocpd-5301.db"))
    check_conventions(db)
    # pmc_info has upstream's columns; the units and the rest are in its table.
    check_eq(rows(db, "SELECT name, agent_abs_index FROM pmc_info ORDER BY name"),
             [(DRAM, 1), (DURATION, 1), (SM, 1)], "one pmc row per metric of GPU 0")
    table = rows(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND "
                     "name LIKE 'rocpd_info_pmc%'")[0][0]
    info = rows(db, f"SELECT name, symbol, units, target_arch, component FROM {table} "
                    "ORDER BY name")
    check_eq(info, [("dram__bytes_read.sum", DRAM, "bytes", "GPU", "cupti"),
                    (DURATION, DURATION, "ns", "GPU", "cupti"),
                    (SM, SM, "%", "GPU", "cupti")], "the metrics' names and units")
    values = rows(db, "SELECT counter_name, dispatch_id, counter_value FROM pmc_events "
                      "ORDER BY counter_name, dispatch_id")
    check_eq(values, [(DRAM, 1, 1e6), (DRAM, 2, 2e6), (DRAM, 3, 3e6), (DRAM, 4, 4e6),
                      (DURATION, 2, 50000.0), (DURATION, 3, 50000.0), (DURATION, 4, 50000.0),
                      (SM, 1, 50.0), (SM, 2, 90.0), (SM, 3, 50.0), (SM, 4, 90.0)],
             "each kernel's values on its dispatch; kernel 1's unmeasured duration left out")
    joined = rows(db, "SELECT K.name, COUNT(*) FROM pmc_events V JOIN kernels K ON "
                      "K.dispatch_id = V.dispatch_id AND K.guid = V.guid GROUP BY K.name")
    check_eq(joined, [(KERNEL, 11)], "values joined to the kernel")
    coll = rows(db, "SELECT counter_name, COUNT(*), SUM(value) FROM counters_collection "
                    "GROUP BY counter_name ORDER BY counter_name")
    check_eq(coll, [(DRAM, 4, 1e7), (DURATION, 3, 150000.0), (SM, 4, 280.0)],
             "counters_collection view")
    # Values are no samples: the time-weighted counters of the summary do not show them.
    check_eq(rows(db, "SELECT COUNT(*) FROM rocpd_sample"), [(0,)], "no counter samples")


def test_pftrace_kernel_args():
    s = gen_session("--pid", 5302, "--kernels", 3, "--kernel-metrics")
    convert(s, "pftrace")
    t = pftrace.Trace(open(os.path.join(s, "perfetto-trace-5302.pftrace"), "rb").read())
    check_eq(t.errors, [], "valid trace")
    kernels = sorted((sl for sl in t.slices if sl[2] == "KERNEL_DISPATCH"), key=lambda k: k[3])
    check_eq(len(kernels), 3, "kernel slices")
    check_eq([k[5].get(DRAM) for k in kernels], [1e6, 2e6, 3e6], "DRAM bytes per kernel")
    check_eq([k[5].get(SM) for k in kernels], [50.0, 90.0, 50.0], "SM throughput per kernel")
    check_eq([k[5].get(DURATION) for k in kernels], [None, 50000.0, 50000.0],
             "no argument for a value not measured")
    check_eq(kernels[0][5]["grid"], "256 x 1 x 1", "the other arguments stay")


def test_database_round_trip_keeps_kernel_counters():
    # A database converted again (syscope convert FILE.db): each kernel keeps its values.
    s = gen_session("--pid", 5305, "--kernels", 3, "--kernel-metrics", "--api-spans")
    r = convert(s, "rocpd pftrace")
    out = os.path.join(r.workdir, "from-db")
    r = syscope("convert", "-f", "pftrace", "-o", out, os.path.join(s, "rocpd-5305.db"))
    check_eq(r.rc, 0, r.describe())
    t = pftrace.Trace(open(os.path.join(out, "perfetto-trace-5305.pftrace"), "rb").read())
    check_eq(t.errors, [], "valid trace")
    kernels = sorted((sl for sl in t.slices if sl[2] == "KERNEL_DISPATCH"), key=lambda k: k[3])
    check_eq([(k[5].get(DRAM), k[5].get(SM), k[5].get(DURATION)) for k in kernels],
             [(1e6, 50.0, None), (2e6, 90.0, 50000.0), (3e6, 50.0, 50000.0)],
             "the values of each kernel, through the database")


def test_summary_kernel_means():
    s = gen_session("--pid", 5303, "--kernels", 4, "--kernel-metrics")
    convert(s, "rocpd")
    r = syscope("summary", "--format", "json", "--top", "50",
                os.path.join(s, "rocpd-5303.db"))
    check_eq(r.rc, 0, r.describe())
    got = {(row["kernel"], row["counter"]): (row["dispatches"], row["mean"], row["unit"])
           for row in json.loads(r.out)["kernel_counters"]}
    check_eq(got, {(KERNEL, DRAM): (4, 2.5e6, "bytes"), (KERNEL, SM): (4, 70.0, "%"),
                   (KERNEL, DURATION): (3, 50000.0, "ns")}, "per kernel name: mean values")
    r = syscope("summary", "--top", "50", os.path.join(s, "rocpd-5303.db"))
    check("GPU COUNTERS PER KERNEL" in r.out and SM in r.out, r.out)


def test_session_without_counters_has_no_pmc_rows():
    s = gen_session("--pid", 5304, "--kernels", 2)
    convert(s, "rocpd")
    db = sqlite3.connect(os.path.join(s, "rocpd-5304.db"))
    check_eq(rows(db, "SELECT COUNT(*) FROM pmc_info"), [(0,)], "no pmc descriptors")
    r = syscope("summary", "--format", "json", os.path.join(s, "rocpd-5304.db"))
    check_eq(json.loads(r.out).get("kernel_counters", []), [], "no counter section rows")


def test_preset_turns_counters_on():
    r = syscope("sample", "--explain", "trace-hw-counters")
    check_eq(r.rc, 0, r.describe())
    line = [ln for ln in r.out.splitlines() if "SYSCOPE_GPU_EVENTS " in ln]
    check_eq(len(line), 1, r.out)
    for metric in (DRAM, SM, "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
                   "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"):
        check(metric in line[0], f"{metric} in {line[0]}")
    check("GPU_EVENTS_INTERVAL" not in r.out, "per kernel, not over time")


if __name__ == "__main__":
    harness.main(globals())
