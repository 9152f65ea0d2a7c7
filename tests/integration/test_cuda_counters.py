"""GPU hardware counters on a real GPU (scripts/gpu-check): `syscope avail -H -c GPU`, the
check of --gpu-events before a run, per-kernel counters (CUPTI's range profiler, kernel
replay) on a copy kernel and a compute kernel of tests/programs/cuda/counter_kernels.cu, and
PM sampling over time. Skipped, with the reason, where there is no NVIDIA GPU or the CUDA
fixtures were not built; test_gpu_counters.py covers the rest without a GPU."""
import json
import os
import sqlite3

import harness
from harness import check, check_eq, fixture, need_gpu, syscope

import pftrace
from rocpd_checks import check_conventions, rows

COPY_BYTES = 256 << 20
READ, WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
SM_ACTIVE = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
SM_THROUGHPUT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"  # several passes
DURATION = "gpu__time_duration.sum"
COPY, COMPUTE = "copy_kernel(float4 const*, float4*, unsigned long)", "compute_kernel(float*, int)"


def database(r):
    dbs = [f for f in r.files() if f.startswith("rocpd-") and f.endswith(".db")]
    check_eq(len(dbs), 1, f"one database in {r.files()}\n{r.describe()}")
    db = sqlite3.connect(r.path(dbs[0]))
    check_conventions(db)
    return db


def notes(r):
    return [n["text"] for n in r.metadata(r.main_pid())["notes"]]


def test_avail_lists_gpu_metrics():
    need_gpu("counter_kernels")
    r = syscope("avail", "-H", "-c", "GPU", "-d", "--format", "json")
    check_eq(r.rc, 0, r.describe())
    metrics = json.loads(r.out)["gpu_metrics"]
    names = {m["metric"] for m in metrics}
    for base in ("dram__bytes_read", "sm__cycles_active", "gpu__time_duration", "sm__throughput"):
        check(base in names, f"{base} listed among {len(names)}")
    check(len(names) > 500, f"the chip's base metrics: {len(names)}")
    with_text = [m for m in metrics if m["description"]]
    check(len(with_text) > len(metrics) // 2, "descriptions")
    check({m["type"] for m in metrics} <= {"counter", "ratio", "throughput"}, "types")
    r = syscope("avail", "-H", "-c", "GPU", "-r", "^dram__bytes")
    check_eq(r.rc, 0, r.describe())
    check("dram__bytes_read" in r.out and "sm__cycles_active" not in r.out, r.out)


def test_unknown_metric_refused_before_run():
    need_gpu("counter_kernels")
    r = syscope("sample", "--gpu-events", f"{READ},dram__bytes_bogus.sum", "--",
                fixture("counter_kernels"))
    check_eq(r.rc, 2, r.describe())
    check("'dram__bytes_bogus.sum' is not a metric of this GPU" in r.err, r.err)
    check("syscope avail -H -c GPU" in r.err, r.err)
    check("counter_kernels ok" not in r.out, "the program did not run")


def test_copy_and_compute_kernel_counters():
    need_gpu("counter_kernels")
    r = syscope("sample", "--gpu-events", f"{READ},{WRITE},{SM_ACTIVE},{SM_THROUGHPUT}",
                "--output-format", "rocpd pftrace", "--", fixture("counter_kernels"))
    check_eq(r.rc, 0, r.describe())
    check("counter_kernels ok: 1 rounds" in r.out, r.describe())
    check(any(n.startswith("GPU counters on GPU 0") and "5 metrics per kernel" in n
              for n in notes(r)), notes(r))
    db = database(r)
    kernels = rows(db, "SELECT name, COUNT(*), MIN(duration) > 0 FROM kernels GROUP BY name "
                       "ORDER BY name")
    check_eq(kernels, [(COMPUTE, 3, 1), (COPY, 3, 1)],
             "every kernel is there, timed, although kernel replay gives it no timestamps")
    per = rows(db, "SELECT K.name, V.counter_name, COUNT(*) FROM pmc_events V JOIN kernels K "
                   "ON K.dispatch_id = V.dispatch_id AND K.guid = V.guid "
                   "GROUP BY K.name, V.counter_name ORDER BY K.name, V.counter_name")
    check_eq(per, [(k, m, 3) for k in (COMPUTE, COPY)
                   for m in sorted([READ, WRITE, SM_ACTIVE, SM_THROUGHPUT, DURATION])],
             "five values per kernel, gpu__time_duration.sum added")

    def values(kernel, metric):
        return [v for (v,) in rows(db, "SELECT V.counter_value FROM pmc_events V JOIN kernels "
                                       "K ON K.dispatch_id = V.dispatch_id AND K.guid = "
                                       "V.guid WHERE K.name = ? AND V.counter_name = ?",
                                   kernel, metric)]

    # The copy kernel: DRAM traffic over its time agrees with what it copied over its time.
    for rd, wr, ns in zip(values(COPY, READ), values(COPY, WRITE), values(COPY, DURATION)):
        check(abs(rd / COPY_BYTES - 1) < 0.10 and abs(wr / COPY_BYTES - 1) < 0.10,
              f"copy DRAM bytes read {rd:.0f}, written {wr:.0f} vs {COPY_BYTES}")
        measured, moved = (rd + wr) / ns, 2 * COPY_BYTES / ns
        check(abs(measured / moved - 1) < 0.10,
              f"DRAM {measured:.1f} GB/s vs copied {moved:.1f} GB/s")
    # The compute kernel keeps every SM busy and moves almost nothing.
    for active, rd in zip(values(COMPUTE, SM_ACTIVE), values(COMPUTE, READ)):
        check(active > 90, f"compute kernel SM active {active:.1f}%")
        check(rd < COPY_BYTES / 100, f"compute kernel read {rd:.0f} bytes")
    # Each kernel sits inside the launch call that ran it.
    outside = rows(db, "SELECT COUNT(*) FROM kernels K JOIN regions R ON R.guid = K.guid AND "
                       "R.stack_id = K.stack_id WHERE R.category = 'CUDA_RUNTIME_API' AND "
                       "(K.start < R.start OR K.end > R.end)")
    check_eq(outside, [(0,)], "kernels within their launch calls")
    linked = rows(db, "SELECT COUNT(*) FROM kernels K JOIN regions R ON R.guid = K.guid AND "
                      "R.stack_id = K.stack_id WHERE R.name = 'cudaLaunchKernel'")
    check_eq(linked, [(6,)], "each kernel linked to its launch")
    # Perfetto: the values as arguments of the kernel slices.
    names = [f for f in r.files() if f.endswith(".pftrace")]
    t = pftrace.Trace(open(r.path(names[0]), "rb").read())
    check_eq(t.errors, [], "valid trace")
    slices = [sl for sl in t.slices if sl[2] == "KERNEL_DISPATCH"]
    check_eq(len(slices), 6, "kernel slices")
    check(all(READ in sl[5] and SM_ACTIVE in sl[5] for sl in slices), "counter arguments")
    # The summary: each kernel name's means.
    s = syscope("summary", "--format", "json", "--top", "50", r.session)
    check_eq(s.rc, 0, s.describe())
    means = {(row["kernel"], row["counter"]): row for row in json.loads(s.out)["kernel_counters"]}
    check_eq(means[(COPY, READ)]["dispatches"], 3, "copy dispatches")
    check(abs(means[(COPY, READ)]["mean"] / COPY_BYTES - 1) < 0.10, means[(COPY, READ)])
    check(means[(COMPUTE, SM_ACTIVE)]["mean"] > 90, means[(COMPUTE, SM_ACTIVE)])


def test_stream_capture_unchanged():
    # cuda_workload captures a stream into a graph (cudaStreamCaptureModeGlobal): the
    # profiler must stay out of the capture (stopping it there made the capture fail), the
    # kernels launched outside it get their values.
    need_gpu("counter_kernels")
    r = syscope("sample", "--gpu-events", f"{READ},{SM_ACTIVE}", "--output-format", "rocpd",
                "--", fixture("cuda_workload"))
    check_eq(r.rc, 0, r.describe())
    check("cuda_workload ok" in r.out, r.describe())
    check(not any("GPU counters off" in n for n in notes(r)), notes(r))
    db = database(r)
    got = rows(db, "SELECT K.name, COUNT(DISTINCT K.dispatch_id), COUNT(V.id) FROM kernels K "
                   "LEFT JOIN pmc_events V ON V.dispatch_id = K.dispatch_id AND V.guid = K.guid "
                   "GROUP BY K.name ORDER BY K.name")
    check_eq([g for g in got if not g[0].startswith("bump")],
             [("saxpy(int, float, float const*, float*)", 10, 30),
              ("scale(float*, float)", 5, 15)], "launched kernels: three values each")
    # The graph's kernels (3 launches of 2 captured kernels) have no values; shown, or, if
    # CUPTI could not time them, counted in the note on untimed activities: never lost.
    bumps = [g for g in got if g[0].startswith("bump")]
    check(all(values == 0 for _, _, values in bumps), f"no values for graph kernels: {bumps}")
    untimed = [int(n.split()[0]) for n in notes(r) if "had no timestamps" in n]
    check_eq(sum(d for _, d, _ in bumps) + sum(untimed), 6, f"graph kernels: {bumps}, "
             f"untimed: {untimed}")


def test_pm_sampling_over_time():
    need_gpu("counter_kernels")
    r = syscope("sample", "--gpu-events", f"{SM_ACTIVE},{READ},{SM_THROUGHPUT}",
                "--gpu-events-interval", "1", "--output-format", "rocpd", "--",
                fixture("counter_kernels"), "1500")
    check_eq(r.rc, 0, r.describe())
    check(any("PM sampling leaves out " + SM_THROUGHPUT in n for n in notes(r)),
          f"the metric that needs several passes is named: {notes(r)}")
    check(any("PM sampling of 2 metrics every 1 ms" in n for n in notes(r)), notes(r))
    db = database(r)
    start, end = rows(db, "SELECT start, end FROM processes")[0]
    series = rows(db, "SELECT I.name, COUNT(*), MIN(S.timestamp), MAX(S.timestamp), "
                      "MAX(P.value), AVG(P.value) FROM rocpd_pmc_event P JOIN rocpd_info_pmc "
                      "I ON P.pmc_id = I.id AND P.guid = I.guid JOIN rocpd_sample S ON "
                      "S.event_id = P.event_id AND S.guid = P.guid WHERE I.name LIKE 'GPU0 %' "
                      "GROUP BY I.name ORDER BY I.name")
    check_eq([s[0] for s in series], ["GPU0 " + READ, "GPU0 " + SM_ACTIVE], "two tracks")
    for name, n, first, last, peak, mean in series:
        check(n >= 300, f"{name}: {n} samples in 1.5 s at 1 ms")
        check(start <= first and last <= end, f"{name}: samples within the process "
                                               f"[{start}, {end}]: {first}..{last}")
    sm = series[1]
    check(sm[4] > 90 and sm[5] > 30, f"SM active peaks near 100%: max {sm[4]}, mean {sm[5]}")
    kernels = rows(db, "SELECT COUNT(*) FROM kernels WHERE duration > 0")[0][0]
    check(kernels >= 6, f"kernels keep their own timestamps under PM sampling: {kernels}")


if __name__ == "__main__":
    harness.main(globals())
