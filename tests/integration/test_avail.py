"""syscope avail: settings, data sources, CPU events, domain flags, presets, in every
format, filtered; and -G, a configuration file that reads back."""
import csv
import io
import json
import os
import subprocess
import tempfile

import harness
from harness import check, check_eq, syscope


def avail_json(*args, env=None):
    r = syscope("avail", "--json", *args, env=env)
    check_eq(r.rc, 0, r.describe())
    return json.loads(r.out)


def test_settings_show_value_and_source():
    doc = avail_json("-S", env={"SYSCOPE_SAMPLING_FREQ": "321"})
    rows = {row["environment"]: row for row in doc["settings"]}
    check("SYSCOPE_SESSION_DIR" not in rows, "internal plumbing is not listed")
    for name in ("SYSCOPE_SAMPLING_FREQ", "SYSCOPE_CUDA_DOMAINS", "SYSCOPE_OUTPUT_FORMAT",
                 "SYSCOPE_PRESET", "SYSCOPE_CONFIG_FILE"):
        check(name in rows, f"{name} listed")
    f = rows["SYSCOPE_SAMPLING_FREQ"]
    check_eq((f["value"], f["source"], f["default"]), ("321", "environment", "300"), "freq")
    check_eq(rows["SYSCOPE_CUDA_BUFFER_KB"]["category"], "buffer,gpu", "categories")


def test_filter_and_formats():
    doc = avail_json("-S", "-r", "^SAMPLING_(FREQ|DELAY)$")
    check_eq(sorted(r["environment"] for r in doc["settings"]),
             ["SYSCOPE_SAMPLING_DELAY", "SYSCOPE_SAMPLING_FREQ"], "-r keeps matching rows")
    r = syscope("avail", "-S", "-d", "-r", "CUDA_DOMAINS", "--csv")
    lines = [l for l in r.out.splitlines() if l and not l.startswith("#")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    check_eq(rows[0], ["environment", "value", "source", "default", "type", "category",
                       "description"], "CSV header with descriptions")
    check_eq(rows[1][0], "SYSCOPE_CUDA_DOMAINS", "the row")
    r = syscope("avail", "-S", "-r", "USE_CUDA", "--markdown")
    check(r.out.startswith("### SETTINGS\n\n| environment |"), r.out)
    check("| SYSCOPE_USE_CUDA | true |" in r.out, r.out)


def test_components_and_cpu_events_say_why_not():
    doc = avail_json("-C", "-H")
    sources = {row["source"]: row for row in doc["components"]}
    for name in ("sampling-cputime", "sampling-realtime", "cuda", "cpu-counters",
                 "gpu-telemetry", "outputs"):
        check(name in sources, f"{name} in {sorted(sources)}")
    for row in doc["components"]:
        check(row["available"] == "yes" or row["state"], f"{row['source']}: a reason")
    # Names as libpfm4 gives them (perf::INSTRUCTIONS), or perf's generic ones without it.
    events = {row["event"].split("::")[-1].lower(): row for row in doc["cpu_events"]}
    check("task-clock" in events and "instructions" in events, sorted(events))
    for row in doc["cpu_events"]:
        check(row["available"] == "yes" or row["why not"], f"{row['event']}: why not")
    if events["instructions"]["available"] == "no":  # these VMs: no PMU
        check(sources["cpu-counters"]["state"].startswith("software events only"),
              f"software events without a PMU: {sources['cpu-counters']}")
    check_eq(sources["host-telemetry"]["available"], "yes", "host telemetry")
    # The clock: the TSC where Linux calls it constant and non-stop (CPUID's invariant TSC).
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    invariant = {"constant_tsc", "nonstop_tsc"} <= flags
    check_eq(sources["clock"]["state"].startswith("invariant TSC"), invariant,
             f"clock against /proc/cpuinfo: {sources['clock']}")


def test_domains_and_presets():
    doc = avail_json("--list-domains")
    flags = {row["flag"]: row for row in doc["domains"]}
    check("nvtx" in flags["--cuda"]["values"], flags)
    check_eq(sorted(flags), ["--cpu", "--cuda", "--gpu", "--parallel"], "domain flags")
    r = syscope("avail", "--list-presets")
    check("  trace-gpu " in r.out and "gpu:" in r.out, r.out)


def test_generated_config_reads_back():
    d = tempfile.mkdtemp(prefix="syscope-avail-")
    harness._workdirs.append(d)
    for name in ("all.cfg", "all.json"):
        path = os.path.join(d, name)
        r = syscope("avail", "-G", path, env={"SYSCOPE_SAMPLING_FREQ": "321",
                                               "SYSCOPE_CUDA_DOMAINS": "kernel"})
        check_eq(r.rc, 0, r.describe())
        r = syscope("run", "-c", path, "--preset=trace-gpu", "--export-config")
        check_eq(r.rc, 0, r.describe())
        s = json.loads(r.out)["settings"]
        check_eq((s["SAMPLING_FREQ"], s["CUDA_DOMAINS"]), (321, ["kernel"]),
                 f"{name}: the changed settings")
        check_eq(s["USE_SAMPLING"], False, f"{name}: defaults left to the preset")


def test_bad_input():
    r = syscope("avail", "-H", "-c", "TPU")
    check_eq(r.rc, 2, r.describe())
    check("-c 'TPU' is not a device (valid: CPU, GPU)" in r.err, r.err)
    r = syscope("avail", "--format", "yaml")
    check("--format 'yaml' unknown (valid: table, csv, json, md)" in r.err, r.err)
    r = syscope("avail", "-r", "(")
    check("-r '(' is not a valid regular expression" in r.err, r.err)


def test_man_page_and_completion_follow_the_settings_table():
    man = open(os.path.join(harness.BUILD, "share", "man", "man1", "syscope.1")).read()
    check(man.startswith(".TH SYSCOPE 1"), "a man page")
    doc = avail_json("-S")
    for row in doc["settings"]:
        check(f".B {row['environment']}\n" in man, f"{row['environment']} in the man page")
    for verb in ("sample", "run", "avail", "convert", "summary", "merge"):
        check(f".SS {verb}\n" in man, f"{verb} in the man page")
    check("\\-\\-sampling\\-freq=HZ" in man, "the flags, escaped for roff")

    script = os.path.join(harness.BUILD, "share", "bash-completion", "completions", "syscope")

    def complete(*words):
        line = " ".join(words)
        cmd = (f'source "{script}"; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; '
               f'_syscope; printf "%s\\n" "${{COMPREPLY[@]}}"')
        env = dict(os.environ, PATH=os.path.join(harness.BUILD, "bin") + ":" +
                   os.environ.get("PATH", ""))
        out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=env)
        check_eq(out.returncode, 0, out.stderr)
        return sorted(w for w in out.stdout.split("\n") if w)

    check_eq(complete("syscope", "ru"), ["run"], "verbs")
    got = complete("syscope", "run", "--cud")
    check("--cuda" in got and "--cuda-domains" in got and "--cuda-api-include" in got, got)
    check("--no-cuda" in complete("syscope", "sample", "--no-cu"), "--no- forms")
    check_eq(complete("syscope", "run", "--sampling-unwinder=f"), ["--sampling-unwinder=fp"],
             "choices")
    check_eq(complete("syscope", "run", "--preset=trace-g"), ["--preset=trace-gpu"], "presets")
    check_eq(complete("syscope", "avail", "--list-d"), ["--list-domains"], "avail's own")


if __name__ == "__main__":
    harness.main(globals())
