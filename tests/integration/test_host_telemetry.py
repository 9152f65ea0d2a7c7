"""Host telemetry (--host): the background sampler's counter tracks against a fixture with
known activity: memory touched, bytes sent over loopback, sleeps."""
import json
import os
import sqlite3

import harness
from harness import check, check_eq, fixture, syscope

import pftrace

MiB = 1 << 20


def counters(r):
    """{track name: [values in time order]} from the run's rocpd database."""
    dbs = [f for f in r.files() if f.startswith("rocpd-")]
    check_eq(len(dbs), 1, r.describe())
    db = sqlite3.connect(r.path(dbs[0]))
    out = {}
    for name, value in db.execute(
            "SELECT T.name, P.value FROM rocpd_pmc_event P JOIN rocpd_info_pmc T "
            "ON P.pmc_id = T.id JOIN rocpd_event E ON P.event_id = E.id "
            "JOIN rocpd_sample S ON S.event_id = E.id ORDER BY S.timestamp"):
        out.setdefault(name, []).append(value)
    return out


def test_memory_network_and_sleeps_are_seen():
    r = syscope("sample", "--host", "--process-freq", "100", "--output-format", "rocpd",
                "--", fixture("host_load"), "128", "32", "0.2")
    check_eq(r.rc, 0, r.describe())
    c = counters(r)
    rss = c["RSS"]
    check(max(rss) - min(rss) >= 120 * MiB, f"RSS rose by the 128 MiB touched: {rss}")
    check(max(c["Peak RSS"]) >= 128 * MiB, "peak RSS")
    check(c["Minor page faults"][-1] >= 0.9 * 128 * MiB / 4096, "a fault per page touched")
    lo = c.get("net lo bytes in")
    check(lo and lo[-1] >= 32 * MiB, f"loopback carried the 32 MiB: {lo and lo[-1]}")
    check(c["net lo bytes out"][-1] >= 32 * MiB, "both directions")
    check(c["Voluntary context switches"][-1] >= 200, c["Voluntary context switches"][-1])
    check(max(c["Threads"]) == 1, f"the program's one thread: {c['Threads']}")
    check(len(rss) >= 10, f"about 100 values a second: {len(rss)}")
    check(all(0 <= v <= 100.5 for v in c["CPU utilization (all CPUs)"]), "a percentage")
    meta = {m["name"]: m["values"] for m in r.metadata()["counters"]}
    check_eq({n: len(v) for n, v in c.items()}, meta,
             "every track in rocpd, with every value (two tracks once shared one row)")


def test_tracks_in_perfetto_with_units_and_filters():
    r = syscope("sample", "--host", "--process-freq", "50", "--interfaces", "lo,nosuch0",
                "--cpus", "0", "--output-format", "pftrace", "--",
                fixture("host_load"), "16", "1", "0.1")
    check_eq(r.rc, 0, r.describe())
    pid = r.main_pid()
    t = pftrace.Trace(open(r.path(f"perfetto-trace-{pid}.pftrace"), "rb").read())
    check_eq(t.errors, [], "valid trace")
    names = {i["name"] for i in t.tracks.values()}
    for track in ("RSS", "net lo bytes in", "CPU 0 utilization", "Voluntary context switches"):
        check(track in names, f"{track} in {sorted(names)}")
    check(not any(n.startswith("net eth") for n in names), "--interfaces keeps lo only")
    check(not any(n.startswith("CPU 1 ") for n in names), "--cpus keeps CPU 0 only")
    check("network interface 'nosuch0' not found" in r.err, r.err)
    units = {i["name"]: i.get("unit") for i in t.tracks.values()}
    check_eq(units.get("RSS"), "bytes", "units")


def test_profiles_and_metadata_summarize_the_counters():
    r = syscope("sample", "--host", "--output-format", "text", "json", "--",
                fixture("host_load"), "64", "1", "0.1")
    check_eq(r.rc, 0, r.describe())
    meta = {c["name"]: c for c in r.metadata()["counters"]}
    rss = meta["RSS"]
    check(rss["max"] >= 64 * MiB and rss["min"] < rss["mean"] < rss["max"], rss)
    check(rss["time_weighted"] and rss["values"] >= 3, rss)
    check_eq(meta["Minor page faults"]["last"], meta["Minor page faults"]["max"],
             "a total only grows")
    prof = r.profile()
    check_eq({c["name"] for c in prof.meta["counters"]}, set(meta), "the JSON profile too")
    text = open(r.path(f"sampling_cpu_clock-{r.main_pid()}.txt")).read()
    check("COUNTERS (MEAN WEIGHTED BY TIME)" in text and "| RSS " in text, text[-2000:])

    # syscope summary computes the same from the rocpd database, in SQL.
    r = syscope("sample", "--host", "--output-format", "rocpd", "--",
                fixture("host_load"), "64", "1", "0.1")
    s = syscope("summary", "--format", "json", r.session)
    check_eq(s.rc, 0, s.describe())
    rows = {c["counter"]: c for c in json.loads(s.out)["counters"]}
    check(rows["RSS"]["max"] >= 64 * MiB and rows["RSS"]["unit"] == "bytes", rows["RSS"])
    check(rows["RSS"]["min"] < rows["RSS"]["mean"] < rows["RSS"]["max"], rows["RSS"])


def test_off_by_default_in_sample_and_on_in_balanced():
    r = syscope("sample", "--output-format", "rocpd", "--", fixture("hot"), "0.2")
    check("RSS" not in counters(r), "sample alone records no host telemetry")
    r = syscope("run", "--output-format", "rocpd", "--", fixture("hot"), "0.3")
    check_eq(r.rc, 0, r.describe())
    check("RSS" in counters(r), "the balanced preset turns it on")


def test_bad_id_lists_are_refused_before_the_program_starts():
    """--cpus and --gpus lists that do not parse, or name ids beyond what the runtime keeps,
    are refused by the CLI, naming the valid range, before the program runs (before: the
    program ran, and a note at its end said the per-CPU tracks or the GPU telemetry were
    left out)."""
    for flag, value, valid in (
            ("--cpus", "zero", "CPU ids and ranges of them from 0 to 1023, e.g. 0,2-5, or 'all'"),
            ("--cpus", "3-1", "CPU ids and ranges of them from 0 to 1023"),
            ("--cpus", "1024", "CPU ids and ranges of them from 0 to 1023"),
            ("--gpus", "x", "GPU indexes and ranges of them from 0 to 63, e.g. 0,2-3, or 'all'"),
            ("--gpus", "64", "GPU indexes and ranges of them from 0 to 63")):
        r = syscope("sample", "--host", flag, value, "--output-format", "rocpd", "--",
                    fixture("hot"), "0.2")
        check_eq(r.rc, 2, f"{flag} {value}: {r.describe()}")
        check(f"{flag} '{value}' is not valid (valid: {valid}" in r.err, r.err)
        check("hot: done" not in r.out, f"{flag} {value}: the program ran: {r.out}")
    r = syscope("sample", "--host", "--cpus", "0", "--gpus", "all", "--output-format", "rocpd",
                "--", fixture("hot"), "0.2")
    check_eq(r.rc, 0, r.describe())
    check("RSS" in counters(r), "a valid list runs as before")


if __name__ == "__main__":
    harness.main(globals())
