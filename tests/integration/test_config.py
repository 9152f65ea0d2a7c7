"""Configuration: syscope run and its presets, domain flags, configuration files and the
precedence of every layer (CLI > environment > configuration file > preset > default)."""
import json
import os
import tempfile

import harness
from harness import check, check_eq, fixture, syscope

BUILTINS = ["balanced", "profile-only", "detailed", "trace-gpu", "workload-trace",
            "trace-hw-counters", "trace-hpc", "trace-openmp", "profile-mpi", "sys-trace",
            "runtime-trace", "trace-unified-memory"]


def exported(*args, env=None):
    """The resolved configuration of `syscope run ARGS --export-config`: {name: value}."""
    r = syscope("run", *args, "--export-config", env=env)
    check_eq(r.rc, 0, r.describe())
    return json.loads(r.out)["settings"]


def scratch(name, text):
    d = tempfile.mkdtemp(prefix="syscope-cfg-")
    harness._workdirs.append(d)
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_list_presets_by_category():
    r = syscope("run", "--list-presets")
    check_eq(r.rc, 0, r.describe())
    for name in BUILTINS:
        check(f"  {name} " in r.out, f"{name} listed\n{r.out}")
    cats = [line[:-1] for line in r.out.splitlines() if line and not line.startswith(" ")
            and line.endswith(":")]
    check_eq(cats, ["general", "gpu", "hpc", "tracing"], "grouped by category")
    check(r.out.index("  trace-gpu ") > r.out.index("gpu:") > r.out.index("  balanced "),
          "each under its category")


def test_every_builtin_explains_what_it_sets():
    for name in BUILTINS:
        r = syscope("run", "--explain=" + name)
        check_eq(r.rc, 0, r.describe())
        explained = {}
        for line in r.out.splitlines():
            if line.strip().startswith("SYSCOPE_") and "=" in line:
                key, rest = line.strip()[len("SYSCOPE_"):].split("=", 1)
                explained[key.strip()] = rest.split("(default:")[0].strip()
        check(explained, f"{name}: no settings explained\n{r.out}")
        settings = exported("--preset=" + name)
        for key, value in explained.items():
            got = settings[key]
            got = " ".join(got) if isinstance(got, list) else got
            got = {True: "true", False: "false"}.get(got, got)
            if isinstance(got, float):
                got = f"{got:g}"
            check_eq(str(got), value, f"{name}: {key} as explained")


def test_schema_is_the_settings_table():
    r = syscope("run", "--preset-schema")
    check_eq(r.rc, 0, r.describe())
    schema = json.loads(r.out)
    props = schema["properties"]["settings"]["properties"]
    check_eq(props["SAMPLING_FREQ"]["type"], "number", "typed")
    check_eq(props["SAMPLING_FREQ"]["exclusiveMinimum"], 0, "range")
    check_eq(props["CUDA_DOMAINS"]["items"]["enum"],
             ["runtime", "driver", "kernel", "memory", "nvtx", "sync", "uvm", "graph",
              "overhead"], "list choices")
    for internal in ("SESSION_DIR", "PRESET", "CONFIG_FILE", "PRESET_DIR"):
        check(internal not in props, f"{internal} is not a preset setting")
    installed = os.path.join(harness.BUILD, "share", "syscope", "presets", "schema.json")
    check_eq(json.load(open(installed)), schema, "the installed schema is the same")


def test_precedence_cli_env_config_preset_default():
    cfg = scratch("a.cfg", "SYSCOPE_SAMPLING_FREQ = 77\n")
    env = {"SYSCOPE_SAMPLING_FREQ": "88"}
    check_eq(exported("-c", cfg, "-f", "99", env=env)["SAMPLING_FREQ"], 99, "CLI")
    check_eq(exported("-c", cfg, env=env)["SAMPLING_FREQ"], 88, "environment")
    check_eq(exported("-c", cfg)["SAMPLING_FREQ"], 77, "configuration file")
    check_eq(exported()["SAMPLING_FREQ"], 50, "preset (balanced, run's default)")
    r = syscope("sample", "--export-config")
    check("SAMPLING_FREQ" not in json.loads(r.out)["settings"], "sample: no preset, default")
    # A preset named in the environment or a configuration file... is a preset.
    check_eq(exported(env={"SYSCOPE_PRESET": "profile-only"})["OUTPUT_FORMAT"],
             ["text", "json", "folded"], "SYSCOPE_PRESET")


def test_domain_flags_and_aliases():
    s = exported("--cuda=kernels,memcpy,markers")
    check_eq((s["USE_CUDA"], s["CUDA_DOMAINS"]), (True, ["kernel", "memory", "nvtx"]),
             "aliases")
    check_eq(exported("--cuda=all")["CUDA_DOMAINS"],
             ["runtime", "driver", "kernel", "memory", "nvtx", "sync", "uvm", "graph",
              "overhead"], "all")
    s = exported("--preset=trace-gpu", "--cpu=250")
    check_eq((s["USE_SAMPLING"], s["SAMPLING_FREQ"]), (True, 250), "--cpu refines a preset")
    check_eq(exported("--preset=trace-gpu")["USE_SAMPLING"], False, "the preset alone")
    s = exported("--preset=trace-gpu", "-P", "-w", "2", "-d", "5s")
    check_eq((s["OUTPUT_FORMAT"], s["SAMPLING_DELAY"], s["SAMPLING_DURATION"]),
             (["rocpd", "pftrace", "text", "json"], 2, 5), "rocprof-sys-run's -P -w -d")
    check_eq(exported("--preset=profile-only", "-T")["OUTPUT_FORMAT"],
             ["text", "json", "folded", "pftrace"], "-T adds the Perfetto trace")
    s = exported("--preset=profile-only", "--gpu=temperature,power,util")
    check_eq((s["USE_NVML"], s["NVML_METRICS"]), (True, ["temp", "power", "busy"]),
             "--gpu with aliases")
    s = exported("--preset=profile-only", "--gpu")
    check(s["USE_NVML"] and "NVML_METRICS" not in s, f"--gpu alone: default metrics: {s}")
    r = syscope("run", "--gpu", "--no-gpu", "--", fixture("hot"))
    check("--gpu and --no-gpu contradict" in r.err, r.err)


def test_bad_input_is_named():
    r = syscope("run", "--preset=balancd", "--", fixture("hot"), "0.1")
    check_eq(r.rc, 2, r.describe())
    check("unknown preset 'balancd' (did you mean balanced?)" in r.err, r.err)
    check("trace-unified-memory" in r.err, "the valid names are listed")
    r = syscope("run", "--cuda=kernal", "--", fixture("hot"))
    check("unknown domain 'kernal' (did you mean kernel?)" in r.err, r.err)
    r = syscope("run", "--cpu=100", "-f", "200", "--", fixture("hot"))
    check_eq(r.rc, 2, r.describe())
    check("--cpu and --sampling-freq=200 contradict" in r.err, r.err)
    r = syscope("run", "--cuda", "--no-cuda", "--", fixture("hot"))
    check("--cuda and --no-cuda contradict" in r.err, r.err)

    bad = scratch("broken.json", '{"metadata": {"name": "x", "description": "y"},\n'
                                 ' "settings": {"SAMPLING_FREQ": 10,}}')
    r = syscope("run", "--preset=" + bad, "--", fixture("hot"))
    check_eq(r.rc, 2, r.describe())
    check(f"{bad}:2:" in r.err, f"file:line:column\n{r.err}")
    typed = scratch("typed.json", '{"metadata": {"name": "x", "description": "y"},'
                                  ' "settings": {"SAMPLING_FREQ": "fast"}}')
    r = syscope("run", "--preset=" + typed, "--", fixture("hot"))
    check("settings.SAMPLING_FREQ: a string is not valid here: expected a number above 0 "
          "to 100000" in r.err, r.err)
    ranged = scratch("ranged.json", '{"metadata": {"name": "x", "description": "y"},'
                                    ' "settings": {"BUFFER_CHUNK_KB": 4}}')
    r = syscope("run", "--preset=" + ranged, "--", fixture("hot"))
    check("settings.BUFFER_CHUNK_KB: 4 is out of range: expected an integer from 16 to 65536"
          in r.err, r.err)
    cfg = scratch("bad.cfg", "# fine\nSAMPLING_FREQ = fast\n")
    r = syscope("run", "-c", cfg, "--", fixture("hot"))
    check(f"{cfg}:2:17: SAMPLING_FREQ 'fast' is not valid" in r.err, r.err)


def test_unknown_keys_warn_and_the_run_goes_on():
    typo = scratch("typo.json", '{"metadata": {"name": "typo", "description": "d"},'
                                ' "settings": {"SAMPLNG_FREQ": 10, "SAMPLING_FREQ": 20}}')
    r = syscope("run", "--preset=" + typo, "--output-format", "text", "--",
                fixture("hot"), "0.2")
    check_eq(r.rc, 0, r.describe())
    check("unknown key 'settings.SAMPLNG_FREQ' ignored (did you mean SAMPLING_FREQ?)"
          in r.err, r.err)
    # The rest of the preset applies (read from the metadata: a summary's rate line needs
    # samples, which a loaded machine may not give 0.2 s of work at 20 Hz).
    freq = [s["value"] for s in r.metadata()["settings"] if s["name"] == "SAMPLING_FREQ"]
    check_eq(freq, ["20"], "the rest of the preset applies")


def test_export_round_trip():
    out = os.path.join(tempfile.mkdtemp(prefix="syscope-cfg-"), "mine.json")
    harness._workdirs.append(os.path.dirname(out))
    r = syscope("run", "--preset=sys-trace", "--cpu=123", "--cuda=kernel",
                "--sampling-realtime", "--export-config=" + out)
    check_eq(r.rc, 0, r.describe())
    first = json.load(open(out))["settings"]
    again = exported("--preset=" + out)
    check_eq(again, first, "the exported file, used as a preset, gives the same configuration")
    check_eq((first["SAMPLING_FREQ"], first["CUDA_DOMAINS"], first["SAMPLING_REALTIME"]),
             (123, ["kernel"], True), "what was asked")


def test_user_preset_folder():
    d = tempfile.mkdtemp(prefix="syscope-presets-")
    harness._workdirs.append(d)
    with open(os.path.join(d, "mine.json"), "w") as f:
        json.dump({"metadata": {"name": "mine", "description": "my own", "category": "custom"},
                   "settings": {"SAMPLING_FREQ": 42}}, f)
    with open(os.path.join(d, "balanced.json"), "w") as f:  # replaces the built-in
        json.dump({"metadata": {"name": "balanced", "description": "site default"},
                   "settings": {"SAMPLING_FREQ": 43}}, f)
    env = {"SYSCOPE_PRESET_DIR": d}
    r = syscope("run", "--list-presets", env=env)
    check(r.out.index("  mine ") > r.out.index("custom:"), r.out)
    check_eq(exported("--preset=mine", env=env)["SAMPLING_FREQ"], 42, "by name")
    check_eq(exported(env=env)["SAMPLING_FREQ"], 43, "a folder's preset before the built-in")


def test_what_explain_says_is_what_the_run_uses():
    r = syscope("run", "--preset=profile-only", "--", fixture("hot"), "0.3")
    check_eq(r.rc, 0, r.describe())
    check_eq(sorted(f.split("-")[0] for f in r.files() if "." in f),
             ["metadata", "sampling_cpu_clock", "sampling_cpu_clock", "sampling_cpu_clock",
              "session.json"], "text, json and folded profiles only: no timeline")
    meta = r.metadata()
    used = {s["name"]: s["value"] for s in meta["settings"]} if isinstance(
        meta["settings"], list) else meta["settings"]
    check_eq((used["USE_SAMPLING"], used["SAMPLING_FREQ"], used["CUDA_DOMAINS"]),
             ("true", "100", "kernel"), "what the profiled process ran with")
    check("(100 Hz asked" in r.err, r.err)

    r = syscope("run", "--preset=trace-gpu", "--", fixture("hot"), "0.2")
    check_eq(r.rc, 0, r.describe())
    check("CPU-time samples" not in r.err, "no sampling in trace-gpu")
    check(any(f.startswith("perfetto-trace-") for f in r.files()), "its Perfetto trace")


def test_rocprof_sys_settings_and_presets_are_mapped():
    env = {"ROCPROFSYS_SAMPLING_FREQ": "111", "ROCPROFSYS_USE_MPIP": "true",
           "ROCPROFSYS_ROCM_DOMAINS": "hip_runtime_api,kernel_dispatch,scratch_memory",
           "ROCPROFSYS_TRACE": "true", "ROCPROFSYS_PROFILE": "false",
           "ROCPROFSYS_USE_ROCPD": "true"}
    r = syscope("run", "--export-config", env=env)
    check_eq(r.rc, 0, r.describe())
    s = json.loads(r.out)["settings"]
    check_eq((s["SAMPLING_FREQ"], s["CUDA_DOMAINS"], s["OUTPUT_FORMAT"]),
             (111, ["runtime", "kernel"], ["rocpd", "pftrace"]), "their environment")
    check("without a syscope equivalent (ignored): USE_MPIP scratch_memory" in r.err, r.err)
    env["SYSCOPE_SAMPLING_FREQ"] = "222"
    check_eq(exported(env=env)["SAMPLING_FREQ"], 222, "SYSCOPE_* wins over ROCPROFSYS_*")

    smi = {"ROCPROFSYS_USE_AMD_SMI": "true", "ROCPROFSYS_SAMPLING_GPUS": "0-1",
           "ROCPROFSYS_AMD_SMI_METRICS": "busy,temp,vcn_activity,gfx_clock,sdma_usage",
           "ROCPROFSYS_PAPI_EVENTS": "PAPI_TOT_INS,PAPI_TOT_CYC,perf::PAGE-FAULTS,PAPI_FP_OPS",
           "ROCPROFSYS_SAMPLING_OVERFLOW": "true",
           "ROCPROFSYS_SAMPLING_OVERFLOW_EVENT": "perf::PERF_COUNT_HW_CACHE_MISSES",
           "ROCPROFSYS_SAMPLING_OVERFLOW_FREQ": "5000"}
    r = syscope("sample", "--export-config", env=smi)
    s = json.loads(r.out)["settings"]
    check_eq((s["USE_NVML"], s["SAMPLING_GPUS"], s["NVML_METRICS"]),
             (True, "0-1", ["busy", "temp", "encoder", "decoder", "clocks"]),
             "AMD SMI telemetry becomes NVML telemetry")
    check("(ignored): sdma_usage" in r.err and "PAPI_FP_OPS" in r.err, r.err)
    check_eq(s["CPU_EVENTS"], ["instructions", "cycles", "perf::PAGE-FAULTS"],
             "PAPI presets become the kernel's events; libpfm4 names stay")
    check_eq(s["SAMPLING_OVERFLOW"], ["perf::PERF_COUNT_HW_CACHE_MISSES", "5000"],
             "overflow sampling: their event and threshold")

    cfg = scratch("old.cfg", "ROCPROFSYS_SAMPLING_FREQ = 55\nrocprofsys_use_kokkosp = on\n")
    r = syscope("run", "-c", cfg, "--export-config")
    check_eq(json.loads(r.out)["settings"]["SAMPLING_FREQ"], 55, "their config file")
    check("(ignored): USE_KOKKOSP" in r.err, r.err)

    theirs = scratch("theirs.json", json.dumps({
        "metadata": {"name": "old-ai", "description": "from rocprof-sys", "category": "gpu"},
        "tracing": {"enabled": True},
        "profiling": {"enabled": True, "flat_profile": {"enabled": False}},
        "sampling": {"enabled": True, "frequency_hz": {"value": 75}},
        "domains": {"gpu": {"enabled": True},
                    "rocm": {"enabled": True, "api_domains": {
                        "hip_runtime_api": {"enabled": True},
                        "kernel_dispatch": {"enabled": True},
                        "memory_copy": {"enabled": True},
                        "hsa_api": {"enabled": False}}}},
        "output": {"rocpd_output": {"enabled": True}}}))
    r = syscope("run", "--preset=" + theirs, "--export-config")
    check_eq(r.rc, 0, r.describe())
    s = json.loads(r.out)["settings"]
    check_eq((s["SAMPLING_FREQ"], s["CUDA_DOMAINS"], s["OUTPUT_FORMAT"], s["USE_NVML"]),
             (75, ["runtime", "kernel", "memory"], ["rocpd", "pftrace", "text", "json"], True),
             "their preset")
    check("(ignored): FLAT_PROFILE\n" in r.err, r.err)
    r = syscope("run", "--explain=" + theirs)
    check(r.out.startswith("old-ai (gpu;"), r.out)


if __name__ == "__main__":
    harness.main(globals())
