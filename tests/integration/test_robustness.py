"""Hostile and dying programs: SIGKILL, segfault, own SIGPROF handler, all signals blocked,
all descriptors closed, setuid, 1000 forks, 10000 threads. The program must behave as it
would alone, and syscope must neither crash nor hang nor lose what was recorded."""
import os
import re
import shutil
import tempfile

import harness
from harness import Skip, check, check_eq, fixture, source_line, syscope


def test_killed_by_sigkill_profile_still_built():
    r = syscope("sample", "-f", "500", "--", fixture("self_kill"), "0.6")
    check_eq(r.rc, 128 + 9, "128 + SIGKILL\n" + r.describe())
    p = r.profile()
    check(p.self_samples("doomed_work") > 0.8 * p.total, p.function_names()[:5])
    # No end was recorded (no handler runs at a SIGKILL): the launcher's exit status names it.
    check("was killed by signal 9 (Killed), which no handler can see" in r.err, r.err)
    check_eq(r.metadata()["exit"], {"reason": "signal", "status": 9}, "the launcher's signal")


def test_libraries_never_come_from_the_working_folder():
    """An empty entry in a library search path is the current folder: libraries of the
    names syscope and its runtime load, left in the program's working folder, must never be
    loaded (the build tree's RUNPATH once ended in one: every profiled program searched its
    folder for libunwind)."""
    workdir = tempfile.mkdtemp(prefix="syscope-it-")
    trap = os.path.join(harness.FIXTURES, "libcwd_trap.so")
    for name in ("libunwind.so.8", "liblzma.so.5", "libdw.so.1", "libelf.so.1",
                 "libjansson.so.4", "libsqlite3.so.0", "libcapstone.so.4", "libpfm.so.4",
                 "libcupti.so.13", "libcuda.so.1"):
        shutil.copy(trap, os.path.join(workdir, name))
    r = syscope("sample", "-f", 1000, "--", fixture("hot"), "0.2", cwd=workdir)
    check_eq(r.rc, 0, r.describe())
    check(not os.path.exists(os.path.join(workdir, "TRAP-LOADED")),
          "a library was loaded from the working folder")
    check("hot_loop" in r.err, r.describe())


def test_segfault_names_the_crash_site():
    r = syscope("sample", "-f", "500", "--", fixture("segv"), "0.5")
    check_eq(r.rc, 128 + 11, "128 + SIGSEGV\n" + r.describe())
    p = r.profile()
    check(p.self_samples("busy_before_crash") > 0.8 * p.total, p.function_names()[:5])
    line = source_line("segv.c", "/* CRASH_LINE */")
    check(re.search(rf"crashed \(signal 11\) in crash_here at segv\.c:{line}", r.err), r.err)
    check("killed by signal 11" in r.err, r.err)
    check_eq(r.metadata()["exit"], {"reason": "signal", "status": 11}, "recorded end")


def test_program_with_its_own_sigprof_handler():
    r = syscope("sample", "-f", "500", "--", fixture("own_sigprof"), "0.8")
    check_eq(r.rc, 0, "its handler ran\n" + r.describe())
    ticks = int(re.search(r"own_sigprof: (\d+) ticks", r.out).group(1))
    # ITIMER_PROF ticks on CPU time (every 10 ms of it): a loaded machine gives fewer.
    check(ticks > 2, f"{ticks} SIGPROF ticks")
    p = r.profile()
    check(p.self_samples("prof_work") > 0.8 * p.total, p.function_names()[:5])


def test_program_blocking_every_signal():
    r = syscope("sample", "-f", "500", "--", fixture("hostile_sigblock"), "0.8")
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    check_eq(len(p.threads()), 2, "both threads sampled despite their masks")
    check(p.self_samples("blocked_work") > 0.8 * p.total, p.function_names()[:5])


def test_program_closing_every_descriptor():
    r = syscope("sample", "-f", "500", "--", fixture("hostile_closefds"), "0.8")
    check_eq(r.rc, 0, "the program's own files work\n" + r.describe())
    check_eq(len(r.pids()), 2, "parent and the child forked after the closing")
    for pid in r.pids():
        p = r.profile(pid=pid)
        check(p.self_samples("after_close_work") > 0.8 * p.total, p.function_names()[:5])
    check("nothing lost" in r.err, r.err)


def test_program_dropping_root():
    if os.getuid() != 0:
        raise Skip("needs root to setuid")
    r = syscope("sample", "-f", "500", "--", fixture("hostile_setuid"), "0.8")
    check_eq(r.rc, 0, r.describe())
    check("uid 65534" in r.out, r.out)
    check_eq(len(r.pids()), 2, "the child forked as nobody is recorded too")
    for pid in r.pids():
        p = r.profile(pid=pid)
        check(p.self_samples("nobody_work") > 0.8 * p.total, p.function_names()[:5])


def test_thousand_forks():
    r = syscope("sample", "-f", "1000", "--", fixture("hostile_forks"), "1000", timeout=600)
    check_eq(r.rc, 0, r.describe())
    check("1000 children, 0 failed" in r.out, r.out)
    check_eq(len(r.pids()), 1001, "every process has its metadata")
    check("1001 processes" in r.err, r.err.splitlines()[:5])
    check("nothing lost" in r.err, r.err[-2000:])


def test_ten_thousand_threads():
    r = syscope("sample", "-f", "1000", "--", fixture("hostile_threads"), "10000", timeout=600)
    check_eq(r.rc, 0, r.describe())
    check("10000 threads" in r.out, r.out)
    md = r.metadata()
    check_eq(len(md["threads"]), 10001, "every thread recorded")
    check(all(t["end_ns"] >= t["begin_ns"] > 0 for t in md["threads"][1:]), "begin and end")
    check("nothing lost" in r.err, r.err[-2000:])
    # Chunks of exited threads are reused: the raw file is far smaller than one 64 KiB
    # chunk per thread would make it.
    size = sum(os.path.getsize(f) for f in r.raw_files())
    check(size < 10001 * 65536 / 8, f"raw data {size} bytes for 10001 threads")


def test_threads_exiting_with_a_sample_pending():
    # Threads that run a few sampling periods and exit: a sample signal is often pending
    # when a thread closes its sampler. It must be dropped, never taken for a foreign signal.
    r = syscope("sample", "-f", "10000", "--", fixture("hostile_threads"), "600", "300000")
    check_eq(r.rc, 0, r.describe())
    check("600 threads" in r.out, r.out)
    check(r.profile().self_samples("short_life") > 0, "samples in the threads")


harness.main(globals())
