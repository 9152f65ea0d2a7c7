"""Sampling modes: wall-clock sampling of sleeping threads without cutting their sleeps short,
both samplers at once, the POSIX CPU-timer fallback, sampling delay and duration."""
import harness
from harness import check, check_eq, fixture, syscope


def test_wall_clock_sampling_does_not_interrupt_sleeps():
    r = syscope("sample", "--sampling-realtime", "-f", "1000", "--", fixture("sleeper"))
    check_eq(r.rc, 0, "no sleep was cut short\n" + r.describe())
    check("sleeper: done" in r.out, r.out)
    p = r.profile("sampling_wall_clock")
    # About 1.6 s asleep in total: nanosleep, poll and sleep.
    check(1.2 < p.meta["seconds"] < 5.0, f"{p.meta['seconds']} s of wall time")
    asleep = sum(p.self_samples(n) for n in ("nanosleep", "poll", "sleep"))
    slept = sum(f["exclusive"] for f in p.meta["functions"]
                if f["name"] in ("nanosleep", "poll", "sleep"))
    check(slept > 0.8 * p.meta["seconds"], f"{slept:.2f} s attributed to the sleeping calls")
    check(asleep > 0, "samples inside the sleeping calls")
    check(p.samples("nap_nanosleep") > 0 and p.samples("nap_poll") > 0,
          "the call sites appear as callers")
    # syscope's wrappers stand for the libc calls they wrap, module included.
    check_eq(p.function("nanosleep")["module"], "libc.so.6", "module of nanosleep")


def test_both_samplers_at_once():
    r = syscope("sample", "--sampling-cputime", "--sampling-realtime", "-f", "500", "--",
                fixture("hot"), "0.6")
    check_eq(r.rc, 0, r.describe())
    cpu = r.profile("sampling_cpu_clock")
    wall = r.profile("sampling_wall_clock")
    check(cpu.total > 30 and wall.total > 30, f"{cpu.total} CPU, {wall.total} wall samples")
    check(cpu.self_samples("hot_loop") > 0.8 * cpu.total, "CPU profile")
    check(wall.self_samples("hot_loop") > 0.8 * wall.total, "wall profile")
    kinds = [s["metric"] for s in r.metadata()["threads"][0]["samplers"]]
    check_eq(sorted(kinds), ["sampling_cpu_clock", "sampling_wall_clock"], "samplers")


def test_posix_cpu_timer_fallback():
    r = syscope("sample", "--sampling-cputime-timer", "posix", "-f", "100", "--",
                fixture("hot"), "0.8")
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    # The timer counts the thread's CPU time: on a loaded machine the 0.8 s of wall time
    # hold less of it, so the count is judged against the CPU time the thread got.
    got_cpu = r.metadata()["threads"][0]["cpu_ns"] * 1e-9
    check(p.total >= max(5, 0.5 * 100 * got_cpu), f"{p.total} samples in {got_cpu:.2f} s of CPU")
    check(p.self_samples("hot_loop") > 0.8 * p.total, p.function_names()[:5])
    sampler = r.metadata()["threads"][0]["samplers"][0]
    check_eq(sampler["mechanism"], "POSIX CPU-time timer", "mechanism")
    # Sample weights are measured CPU time, so the profile's time matches the CPU time the
    # thread used (from its begin and end records), whatever rate the timer delivered; only
    # the part after the last sample (less than a tick) is missing.
    cpu = r.metadata()["threads"][0]["cpu_ns"] * 1e-9
    check(cpu - 0.05 <= p.meta["seconds"] <= cpu + 0.001,
          f"{p.meta['seconds']} s in the profile, {cpu} s of thread CPU time")


def test_sampling_delay_skips_the_start():
    r = syscope("sample", "-f", "500", "--sampling-delay", "0.7", "--", fixture("phases"),
                "0.4", "0.8")
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    early, late = p.samples("phase_early"), p.samples("phase_late")
    check(early == 0, f"no samples in the first phase ({early})")
    check(late > 50, f"{late} samples in the second phase")


def test_sampling_duration_stops_sampling():
    # The first phase outlasts the duration by 0.5 s of wall-clock time. The samples in the
    # duration are the CPU time the machine gave the program in that 1 s (at 500 Hz, 10
    # samples are 2% of a CPU); the second phase, of CPU time, would give plenty after it.
    r = syscope("sample", "-f", "500", "--sampling-duration", "1.0", "--", fixture("phases"),
                "1.5", "0.4")
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    early, late = p.samples("phase_early"), p.samples("phase_late")
    check(early >= 10, f"{early} samples in the first phase")
    check(late == 0, f"no samples after the duration ({late})")


harness.main(globals())
