"""Issue 14, signals and samplers: the program's use of the sampler's signal, signals a
sampler must not take, blocking calls that a signal would cut short, and CPU time spent in
the kernel. The program must behave as it does alone, and its time must be sampled."""
import re

import harness
from harness import check, check_eq, fixture, syscope


def own_signal_counts(r):
    m = re.search(r"own_signal: sent (\d+) received (\d+) mismatched (\d+)", r.out)
    check(m, r.describe())
    return tuple(int(g) for g in m.groups())


def check_own_signal(sig, when, *options, metric="sampling_cpu_clock"):
    r = syscope("sample", *options, "--", fixture("own_signal"), sig, when, "0.5")
    check_eq(r.rc, 0, f"signal {sig} installed {when}\n" + r.describe())
    check_eq(own_signal_counts(r), (10, 10, 0),
             f"the handler of signal {sig} ({when}) sees its own 10 signals and no sample")
    p = r.profile(metric)
    check(p.self_samples("own_signal_work") > 0.8 * p.total and p.total > 50,
          f"sampled on signal {sig}: {p.total} samples, {p.function_names()[:5]}")


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


harness.main(globals())
