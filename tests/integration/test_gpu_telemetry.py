"""GPU telemetry (--gpu) through NVML, against a stand-in for the driver's library
(tests/programs/fake_nvml.c) whose answers are known, so that it runs without a GPU."""
import os

import harness
from harness import check, check_eq, fixture, syscope

import pftrace
from test_host_telemetry import counters

FAKE_NVML = os.path.join(harness.BUILD, "fixtures", "fake-nvml")
GiB = 1 << 30


def with_fake(extra=None, gpus="2"):
    env = {"LD_LIBRARY_PATH": FAKE_NVML, "FAKE_NVML_GPUS": gpus}
    env.update(extra or {})
    return env


def test_every_metric_of_every_gpu_with_known_values():
    r = syscope("sample", "--gpu=all", "--no-cuda", "--process-freq", "100",
                "--output-format", "rocpd", "--", fixture("hot"), "0.3", env=with_fake())
    check_eq(r.rc, 0, r.describe())
    c = counters(r)
    for gpu in (0, 1):
        p = f"GPU {gpu} "
        check_eq(set(c[p + "utilization"]), {40.0 + gpu}, "GPU busy %")
        check_eq(set(c[p + "memory utilization"]), {10.0 + gpu}, "memory busy %")
        check_eq(set(c[p + "temperature"]), {50.0 + gpu}, "degrees C")
        check_eq(set(c[p + "memory used"]), {(gpu + 1.0) * GiB}, "bytes")
        check_eq(set(c[p + "SM clock"]), {1980.0}, "MHz")
        check_eq(set(c[p + "memory clock"]), {2619.0}, "MHz")
        out, inn = c[p + "PCIe bytes out"], c[p + "PCIe bytes in"]
        check(len(out) >= 10, f"PCIe read at every tick (100 Hz over 0.3 s): {len(out)}")
        check_eq(out, sorted(out), "a total only grows")
        check_eq(out[0], float(1 << 20), "counted from the first reading: one read later")
        check_eq(inn[-1], 2 * out[-1], "in grows twice as fast as out in the stand-in")
        check_eq(set(c[p + "decoder utilization"]), {7.0}, "the slow reading")
        check(not any(n.startswith(p + "NVLink") or n == p + "encoder utilization"
                      for n in c), "unsupported metrics have no track")
    # Instantaneous power where the field exists (GPU 0), else the 1 s average (GPU 1).
    check_eq(set(c["GPU 0 power"]), {123.456}, "watts from the instantaneous field")
    check_eq(set(c["GPU 1 power"]), {200.0}, "watts from nvmlDeviceGetPowerUsage")
    check("GPU 0 (Fake GPU) does not give nvlink (Not Supported), encoder (Not Supported)"
          in r.err, r.err)
    check("slow to read, so read on every tenth tick: decoder" in r.err, r.err)


def test_default_metrics_units_in_perfetto_and_no_host_metrics():
    r = syscope("sample", "--gpu", "--no-cuda", "--output-format", "pftrace", "--",
                fixture("hot"), "0.2", env=with_fake(gpus="1"))
    check_eq(r.rc, 0, r.describe())
    t = pftrace.Trace(open(r.path(f"perfetto-trace-{r.main_pid()}.pftrace"), "rb").read())
    check_eq(t.errors, [], "valid trace")
    units = {i["name"]: i.get("unit") for i in t.tracks.values() if "unit" in i}
    want = {"GPU 0 utilization": "%", "GPU 0 memory utilization": "%",
            "GPU 0 temperature": "C", "GPU 0 power": "W", "GPU 0 memory used": "bytes"}
    check_eq({k: v for k, v in units.items() if k.startswith("GPU ")}, want,
             "busy, temp, power and mem_usage by default")
    check("RSS" not in units, "--gpu alone does not turn on host telemetry")


def test_gpu_selection_by_flag_and_by_cuda_visible_devices():
    r = syscope("sample", "--gpu=busy", "--gpus", "1", "--no-cuda", "--output-format",
                "rocpd", "--", fixture("hot"), "0.1", env=with_fake(gpus="3"))
    check_eq(sorted(n for n in counters(r) if n.startswith("GPU")),
             ["GPU 1 memory utilization", "GPU 1 utilization"], "--gpus 1")
    r = syscope("sample", "--gpu=busy", "--no-cuda", "--output-format", "rocpd", "--",
                fixture("hot"), "0.1",
                env=with_fake({"CUDA_VISIBLE_DEVICES": "GPU-fake-0002,0"}, gpus="3"))
    check_eq(sorted({n.split(" ")[1] for n in counters(r) if n.startswith("GPU")}),
             ["0", "2"], "the GPUs CUDA_VISIBLE_DEVICES leaves, by UUID and index")
    r = syscope("sample", "--gpu=busy", "--gpus", "0,7", "--no-cuda", "--output-format",
                "rocpd", "--", fixture("hot"), "0.1", env=with_fake(gpus="1"))
    check_eq(r.rc, 0, r.describe())
    check("--gpus names GPU 7, but this machine has 1 GPU (valid: 0-0)" in r.err, r.err)
    check("GPU 0 utilization" in counters(r), "the valid one is still recorded")


def test_bad_metric_is_refused_with_the_valid_ones():
    r = syscope("sample", "--gpu=temp,heat", "--", fixture("hot"), "0.1")
    check(r.rc != 0, "refused")
    check("unknown domain 'heat'" in r.err and "temp, power, busy" in r.err, r.err)


def test_no_driver_or_failing_driver_leaves_the_run_alone():
    # No libnvidia-ml at all (an empty library path, a machine without the driver).
    r = syscope("sample", "--gpu", "--host", "--no-cuda", "-v", "--output-format", "rocpd",
                "--", fixture("hot"), "0.2", env={"LD_LIBRARY_PATH": "/nonexistent"})
    check_eq(r.rc, 0, r.describe())
    c = counters(r)
    if not os.path.exists("/dev/nvidiactl"):
        check("GPU telemetry: no NVIDIA driver here" in r.err, r.err)
        check(not any(n.startswith("GPU") for n in c), "no GPU tracks")
    check("RSS" in c, "host telemetry carries on")
    r = syscope("sample", "--gpu", "--no-cuda", "--output-format", "rocpd", "--",
                fixture("hot"), "0.2", env=with_fake({"FAKE_NVML_INIT_FAIL": "1"}))
    check_eq(r.rc, 0, r.describe())
    check("NVML could not start (Driver Not Loaded)" in r.err, r.err)


def test_fork_child_leaves_the_gpus_to_its_parent():
    r = syscope("sample", "--gpu=busy", "--no-cuda", "-v", "--output-format", "rocpd", "--",
                fixture("fork_exec"), fixture("exec_child"), env=with_fake(gpus="1"))
    check_eq(r.rc, 0, r.describe())
    check("recorded by the parent process, not by this child of fork" in r.err, r.err)


if __name__ == "__main__":
    harness.main(globals())
