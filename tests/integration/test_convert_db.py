"""syscope convert FILE.db: a rocpd database, syscope's or another producer's, to pftrace,
csv, json, text and folded. Round trip: session -> rocpd -> pftrace shows what
session -> pftrace shows."""
import csv
import os
import shutil
import sqlite3

import harness
from harness import check, check_eq, fixture, gen_session, syscope

import pftrace


def trace_content(path):
    t = pftrace.Trace(open(path, "rb").read())
    check_eq(t.errors, [], f"{path} is valid")
    return pftrace.content(t)


def check_same_content(a, b):
    ca, cb = trace_content(a), trace_content(b)
    for key in ca:
        check_eq(cb[key], ca[key], f"{key} through the database")
        check(ca[key] or key == "flows" or key == "instants", f"some {key}")


def test_round_trip_synthetic_with_gpu():
    s = gen_session("--pid", 6001, "--threads", 2, "--regions", 20, "--samples", 50,
                    "--counters", 10, "--marks", 3, "--kernels", 5, "--copies", 2,
                    "--allocs", 2)
    r = syscope("convert", "--output-format", "rocpd pftrace", s)
    check_eq(r.rc, 0, r.describe())
    out = os.path.join(r.workdir, "from-db")
    r = syscope("convert", "-f", "pftrace", "-o", out, os.path.join(s, "rocpd-6001.db"))
    check_eq(r.rc, 0, r.describe())
    check_same_content(os.path.join(s, "perfetto-trace-6001.pftrace"),
                       os.path.join(out, "perfetto-trace-6001.pftrace"))
    check("GPU: 5 kernels, 2 copies" in r.err, r.err)


def test_round_trip_recorded_program_and_profiles():
    r = syscope("sample", "-f", "1000", "--output-format", "rocpd pftrace text folded", "--",
                fixture("regions"))
    check_eq(r.rc, 0, r.describe())
    pid = r.main_pid()
    out = os.path.join(r.workdir, "from-db")
    c = syscope("convert", "-f", "pftrace", "text", "folded", "-o", out,
                r.path(f"rocpd-{pid}.db"))
    check_eq(c.rc, 0, c.describe())
    check_same_content(r.path(f"perfetto-trace-{pid}.pftrace"),
                       os.path.join(out, f"perfetto-trace-{pid}.pftrace"))
    # Samples keep their weights (the thread CPU time is in the database), so the profiles
    # are the same too.
    for name in (f"sampling_cpu_clock-{pid}.txt", f"sampling_cpu_clock-{pid}.folded"):
        check_eq(open(os.path.join(out, name)).read(), open(r.path(name)).read(), name)
    check(not os.path.exists(os.path.join(out, f"metadata-{pid}.json")),
          "no metadata file from a database")


def test_csv_tables():
    s = gen_session("--pid", 6002, "--regions", 2, "--samples", 8, "--counters", 3,
                    "--kernels", 2, "--copies", 1, "--allocs", 1)
    r = syscope("convert", "-f", "csv", s)
    check_eq(r.rc, 0, r.describe())

    def table(name):
        with open(os.path.join(s, name), newline="") as f:
            return list(csv.DictReader(f))
    funcs = table("sampling_cpu_clock-6002.csv")
    check_eq([(f["Function"], f["Self_Samples"], f["Inclusive_Samples"]) for f in funcs],
             [("gen_leaf_a", "6", "6"), ("gen_leaf_b", "2", "2"), ("gen_root", "0", "8"),
              ("gen_middle", "0", "8")], "functions by self samples")
    check(funcs[0]["File"].endswith("gen_session.c") and int(funcs[0]["Line"]) > 0,
          "hottest line of each function")
    regions = table("regions-6002.csv")
    inner = [x for x in regions if x["Name"] == "inner"]
    check_eq(len(inner), 2, "inner regions")
    check_eq(inner[0]["Args"], "iteration=0;phase=compute", "arguments")
    check_eq(inner[0]["Duration_ns"], "3000", "duration")
    api = [x for x in regions if x["Category"] == "CUDA_RUNTIME_API"]
    kernels = table("kernels-6002.csv")
    check_eq(len(kernels), 2, "kernels")
    k = kernels[0]
    check_eq((k["Kernel_Name"], k["Mangled_Name"], k["Grid_X"], k["Block_X"], k["Duration_ns"]),
             ("vectorAdd(float const*, float const*, float*, int)", "_Z9vectorAddPKfS0_Pfi",
              "256", "128", "50000"), "kernel row")
    launch = [x for x in api if x["Correlation_Id"] == k["Correlation_Id"]]
    check_eq([x["Name"] for x in launch], ["cudaLaunchKernel"], "correlation to the launch")
    copies = table("memory_copies-6002.csv")
    check_eq([(c["Direction"], c["Bytes"], c["Src_Device"], c["Dst_Device"]) for c in copies],
             [("HtoD", str(1 << 20), "host", "GPU 0")], "copy")
    check_eq([a["Operation"] for a in table("memory_allocations-6002.csv")], ["ALLOC", "FREE"],
             "allocations")
    check_eq([float(x["Value"]) for x in table("counters-6002.csv")], [0.0, 1.0, 2.0],
             "counter values")


def foreign_copy(src, dst):
    """Make `src` look like another producer wrote it: no syscope extdata, thread row ids
    that are not OS tids, no CPU times on samples."""
    shutil.copy(src, dst)
    db = sqlite3.connect(dst)
    uuid = db.execute("SELECT value FROM rocpd_metadata WHERE tag = 'uuid'").fetchone()[0]
    t = lambda name: f'"rocpd_{name}{uuid}"'
    db.execute(f"UPDATE {t('info_process')} SET extdata = '{{}}'")
    db.execute(f"UPDATE {t('info_thread')} SET extdata = '{{}}'")
    for table in ("region", "track", "kernel_dispatch", "memory_copy", "memory_allocate"):
        db.execute(f"UPDATE {t(table)} SET tid = tid + 100000 WHERE tid IS NOT NULL")
    db.execute(f"UPDATE {t('info_thread')} SET id = id + 100000")
    db.execute(f"UPDATE {t('event')} SET extdata = '{{}}' WHERE extdata LIKE '%cpu_ns%'")
    db.commit()
    db.close()


def test_database_of_another_producer():
    s = gen_session("--pid", 6003, "--threads", 2, "--regions", 3, "--samples", 10,
                    "--kernels", 2)
    r = syscope("convert", "--output-format", "rocpd pftrace", s)
    check_eq(r.rc, 0, r.describe())
    foreign = os.path.join(r.workdir, "foreign.db")
    foreign_copy(os.path.join(s, "rocpd-6003.db"), foreign)
    c = syscope("convert", "-f", "pftrace", "text", foreign)
    check_eq(c.rc, 0, c.describe())
    ours = trace_content(os.path.join(s, "perfetto-trace-6003.pftrace"))
    theirs = trace_content(os.path.join(r.workdir, "perfetto-trace-6003.pftrace"))
    for key in ("slices", "instants", "counters", "flows"):
        check_eq(theirs[key], ours[key], f"{key}: thread ids mapped from row ids")
    check_eq(sorted((s[1], s[2]) for s in theirs["samples"]),
             sorted((s[1], s[2]) for s in ours["samples"]), "samples on their threads")
    text = open(os.path.join(r.workdir, "sampling_cpu_clock-6003.txt")).read()
    check("gen_leaf_a" in text, "profile from the samples: " + text[:400])


def test_damaged_database_is_named():
    s = gen_session("--pid", 6004, "--regions", 2000, "--samples", 2000)
    r = syscope("convert", "--output-format", "rocpd", s)
    check_eq(r.rc, 0, r.describe())
    db = os.path.join(s, "rocpd-6004.db")
    size = os.path.getsize(db)
    with open(db, "r+b") as f:
        f.truncate(size // 2)
    c = syscope("convert", "-f", "pftrace", "-o", os.path.join(r.workdir, "out"), db)
    check(c.rc in (0, 1), c.describe())
    check(db in c.err and ("malformed" in c.err or "cannot read" in c.err), c.err)
    check("Traceback" not in c.err and "Sanitizer" not in c.err, c.err)


def test_rocpd_is_not_a_target_from_a_database():
    s = gen_session("--pid", 6005, "--regions", 1)
    r = syscope("convert", "--output-format", "rocpd", s)
    c = syscope("convert", "-f", "rocpd", os.path.join(s, "rocpd-6005.db"))
    check_eq(c.rc, 2, c.describe())
    check("the input is a rocpd database already" in c.err and "syscope merge" in c.err, c.err)


def test_region_arguments_of_each_process():
    """The importer looks a region's arguments up in a table of its own (not a map of every
    region in memory): each region gets exactly its own, in every process of a merged file."""
    a = gen_session("--pid", 6006, "--threads", 2, "--regions", 3000)
    b = gen_session("--pid", 6007, "--regions", 1000)
    for s in (a, b):
        r = syscope("convert", "--output-format", "rocpd", s)
        check_eq(r.rc, 0, r.describe())
    m = syscope("merge", "--no-summary", "-f", "rocpd", "-o", "merged",
                os.path.join(a, "rocpd-6006.db"), os.path.join(b, "rocpd-6007.db"))
    check_eq(m.rc, 0, m.describe())
    out = os.path.join(m.workdir, "csv")
    c = syscope("convert", "-f", "csv", "-o", out,
                os.path.join(m.workdir, "merged", "rocpd-merged.db"))
    check_eq(c.rc, 0, c.describe())
    for pid, inner in ((6006, 6000), (6007, 1000)):
        with open(os.path.join(out, f"regions-{pid}.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        by = {}
        for x in rows:
            by.setdefault((x["Name"], x["Args"]), 0)
            by[(x["Name"], x["Args"])] += 1
        check_eq(by, {("inner", "iteration=0;phase=compute"): inner, ("outer", ""): inner},
                 f"process {pid}: every inner region with its two arguments, outer without")


if __name__ == "__main__":
    harness.main(globals())
