"""Issue 14, signals and samplers: the program's use of the sampler's signal, signals a
sampler must not take, blocking calls that a signal would cut short, and CPU time spent in
the kernel. The program must behave as it does alone, and its time must be sampled."""
import os
import re
import shutil
import subprocess

import harness
from harness import Skip, check, check_eq, fixture, syscope


def own_signal_counts(r):
    m = re.search(r"own_signal: sent (\d+) received (\d+) mismatched (\d+)", r.out)
    check(m, r.describe())
    return tuple(int(g) for g in m.groups())


def check_own_signal(sig, when, *options, metric="sampling_cpu_clock"):
    # One second of work: on a loaded machine the program gets a share of a CPU, and the
    # CPU-time sampler's count follows its CPU time, not the wall time.
    r = syscope("sample", *options, "--", fixture("own_signal"), sig, when, "1.0")
    check_eq(r.rc, 0, f"signal {sig} installed {when}\n" + r.describe())
    check_eq(own_signal_counts(r), (10, 10, 0),
             f"the handler of signal {sig} ({when}) sees its own 10 signals and no sample")
    p = r.profile(metric)
    check(p.self_samples("own_signal_work") > 0.8 * p.total and p.total > 20,
          f"sampled on signal {sig}: {p.total} samples, {p.function_names()[:5]}")
    if metric == "sampling_cpu_clock":
        # A standard signal does not queue: one of the program's arriving while a sample is
        # pending would be lost, so the sampler leaves it for a real-time one.
        check(re.search(rf"the program handles signal {sig}, the CPU-time sampler's; the "
                        r"sampler moved to signal \d+", r.err), r.err)


def test_program_handler_on_the_cpu_sampler_signal_gets_only_its_own():
    # 16 is the perf sampler's default signal.
    for when in ("after", "before"):
        check_own_signal(16, when)


def test_program_handler_on_a_chosen_sampler_signal():
    for when in ("after", "before"):
        check_own_signal(10, when, "--sampling-cputime-signal", "10")


def test_program_handler_on_the_wall_sampler_signal():
    # -2 is SIGRTMAX-2, the wall-clock sampler's default; 64 - 2 on Linux.
    for when in ("after", "before"):
        check_own_signal(62, when, "--sampling-realtime", metric="sampling_wall_clock")


def test_synchronous_and_fatal_sampler_signals_are_refused():
    for flag in ("--sampling-cputime-signal", "--sampling-realtime-signal"):
        for sig in (4, 5, 6, 7, 8, 9, 11, 19, 31, 32, 33):
            r = syscope("sample", f"{flag}={sig}", "--", fixture("hot"), "0.1")
            check_eq(r.rc, 2, f"{flag}={sig}\n" + r.describe())
            check(f"{flag} '{sig}' is not valid" in r.err and "11 (SIGSEGV)" in r.err, r.err)
            check(r.session is None or not r.files(), "nothing ran")
    r = syscope("sample", "--sampling-cputime-signal=12", "--", fixture("hot"), "0.3")
    check_eq(r.rc, 0, "a signal the program does not use is fine\n" + r.describe())
    check(r.profile().self_samples("hot_loop") > 0, r.describe())


def test_blocking_calls_return_what_they_return_alone():
    # Each call blocks for 0.2 s; at 1000 Hz a wall-clock sample comes due ~200 times in it.
    plain = subprocess.run([fixture("blocking_calls"), "0.2"], capture_output=True, text=True,
                           timeout=120)
    check_eq(plain.returncode, 0, plain.stderr)
    lines = plain.stdout.splitlines()
    check_eq(len(lines), 39, plain.stdout)
    check("read             -1 EAGAIN" in lines and "pause            -1 EINTR" in lines,
          "timed out, or woken by the program's own signal:\n" + plain.stdout)
    r = syscope("sample", "--sampling-realtime", "-f", "1000", "--", fixture("blocking_calls"),
                "0.2")
    check_eq(r.rc, 0, r.describe())
    got = r.out.splitlines()
    diff = [f"{a!r} alone, {b!r} under syscope" for a, b in zip(lines, got) if a != b]
    check(not diff and len(got) == len(lines), "\n".join(diff) + "\n" + r.out)
    p = r.profile("sampling_wall_clock")
    main = next(t for t in p.threads() if t["index"] == 0)
    check(main["seconds"] > 0.7 * 39 * 0.2, f"the blocked time is sampled: {main}")


def test_a_sample_in_a_wrapper_counts_as_the_call_it_wraps():
    # poll with no timeout, over and over: some samples land in syscope's wrapper itself.
    r = syscope("sample", "--sampling-realtime", "-f", "1000", "--output-format", "json", "--",
                fixture("poll_spin"), "0.5")
    check_eq(r.rc, 0, r.describe())
    p = r.profile("sampling_wall_clock")
    rows = [f for f in p.meta["functions"] if f["name"] == "poll"]
    check_eq([f["module"] for f in rows], ["libc.so.6"], f"one poll row, libc's: {rows}")
    check(all("libsyscope" not in f["module"] for f in p.meta["functions"]),
          f"no frame of syscope's own: {p.function_names()}")
    check(rows[0]["self_samples"] > 0.5 * p.total, f"the time is poll's: {rows}, {p.total}")


def test_wall_time_of_a_thread_blocked_from_its_start():
    sleep = shutil.which("sleep")
    r = syscope("sample", "--sampling-realtime", "--output-format", "json", "--", sleep, "1")
    check_eq(r.rc, 0, r.describe())
    p = r.profile("sampling_wall_clock")
    (thread,) = p.threads()
    check(0.95 <= thread["seconds"] <= 1.5, f"1 s of sleep, sampled: {thread}")
    check(p.function("nanosleep") or p.function("clock_nanosleep"), p.function_names())


def kernel_time_run(*wrapper):
    r = syscope("sample", "--output-format", "json", "--", *wrapper, fixture("kernel_time"),
                "1")
    check_eq(r.rc, 0, r.describe())
    m = re.search(r"fault_pages ([\d.]+) user_loop ([\d.]+) user ([\d.]+) system ([\d.]+)",
                  r.out)
    check(m, r.describe())
    fault_cpu, user_cpu, user, system = (float(g) for g in m.groups())
    check(system > 0.3, f"the fixture spends its fault time in the kernel: {r.out}")
    p = r.profile()
    (thread,) = p.threads()
    total = user + system
    check(0.9 * total <= thread["seconds"] <= 1.05 * total,
          f"samples add up to getrusage's user + system ({total:.3f} s): {thread}")
    faults = p.function("fault_pages")
    loop = p.function("user_loop")
    check(faults and 0.7 * fault_cpu <= faults["inclusive"] <= 1.3 * fault_cpu,
          f"fault_pages: {fault_cpu:.3f} s of CPU time, sampled {faults}")
    check(loop and 0.7 * user_cpu <= loop["inclusive"] <= 1.3 * user_cpu,
          f"user_loop: {user_cpu:.3f} s of CPU time, sampled {loop}")
    return r


def test_cpu_time_in_the_kernel_is_sampled_on_the_user_stack():
    kernel_time_run()


def test_cpu_time_in_the_kernel_is_sampled_without_privileges():
    # As nobody, perf_event_paranoid 2 lets perf count user time only (3 refuses it):
    # the CPU-time sampler must still see the kernel time.
    setpriv = shutil.which("setpriv")
    if os.getuid() != 0 or not setpriv:
        raise Skip("needs root and setpriv to run the fixture as nobody")
    nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    lib = os.path.join(harness.BUILD, "lib", "syscope", "libsyscope.so")
    # The loader opens libsyscope.so as nobody at exec: a build inside a private folder
    # (a 0700 temporary directory, a home) cannot be preloaded there.
    if subprocess.run(nobody + ["test", "-r", lib, "-a", "-x", fixture("kernel_time")]).returncode:
        raise Skip(f"uid 65534 cannot read {lib} (a private folder above the build)")
    r = kernel_time_run(*nobody)
    paranoid = open("/proc/sys/kernel/perf_event_paranoid").read().strip()
    if paranoid == "2":
        check("perf may count user time only here" in r.err, r.err)


def test_exec_under_a_fast_cpu_sampler():
    # A task clock that counts kernel time can overflow inside execve; the signal would stay
    # pending into the new program, whose handlers are reset: it died of signal 16 in 5 runs
    # of 6 here (setpriv execs right after switching user) before the samplers paused.
    setpriv = shutil.which("setpriv")
    if os.getuid() != 0 or not setpriv:
        raise Skip("needs root and setpriv to exec as nobody")
    for _ in range(4):
        r = syscope("sample", "-f", "1000", "--", setpriv, "--reuid=65534", "--regid=65534",
                    "--clear-groups", fixture("kernel_time"), "0.2")
        check_eq(r.rc, 0, r.describe())
        check("kernel_time: fault_pages" in r.out, r.describe())


harness.main(globals())
