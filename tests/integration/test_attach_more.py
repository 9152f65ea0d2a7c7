"""syscope attach, the parts beyond sampling a process: CUDA in a process that runs it already
(CUPTI subscribed after the fact, kernels of the window counted exactly, the program finishing
with correct results after the detach; PyTorch too), children forked while attached recording
under their own pid, wall-clock sampling in an attached process, descriptors after the detach
as before it, and the end reason of an exec while attached.

The GPU tests skip, saying why, where there is no NVIDIA GPU or the CUDA fixtures were not
built."""
import os
import signal
import sqlite3
import sys
import time

import harness
from harness import Skip, check, check_eq, fixture, need_gpu
from rocpd_checks import rows
from test_attach import (CPU_WANTED_S, Attach, Target, attach_after_cpu, check_session,
                         process_state, wait_cpu)

SOURCE_PROGRAMS = os.path.join(harness.SOURCE, "tests", "programs")


def test_fork_child_records_under_its_own_pid():
    t = Target("attach_spin")
    try:
        a = Attach(t.pid, "--output-format", "json")
        a.wait_attached()
        wait_cpu(t.pid, t.pid, CPU_WANTED_S / 2)
        t.send("fork-spin")
        child = int(t.expect(r"^fork-spin pid=(\d+) status=7$").group(1))
        wait_cpu(t.pid, t.pid, CPU_WANTED_S / 2)
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        raws = sorted(f for f in os.listdir(os.path.join(a.session, "raw"))
                      if f.endswith(".sraw"))
        check_eq(raws, [f"{t.pid}-fork0.sraw", f"{t.pid}.sraw"], "the parent's and the child's")
        pc = a.profile(child)
        check(pc.samples("child_spin") >= 20,
              f"child_spin in the child: {pc.samples('child_spin')} of {pc.total}")
        check_eq(pc.samples("main_spin"), 0, "the parent's function in the child's profile")
        check_eq(a.metadata(child)["exit"], {"reason": "exit", "status": 7}, "the child's end")
        p = a.profile(t.pid)
        check(p.samples("main_spin") >= 5, f"main_spin: {p.samples('main_spin')} of {p.total}")
        check_eq(p.samples("child_spin"), 0, "the child's function in the parent's profile")
        check("warning" not in a.err, a.err)  # the child was followed: nothing to say
        t.send("ping")
        t.expect(r"^ok ping$")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def test_spawned_child_not_followed_is_counted():
    t = Target("attach_spin")
    try:
        a = Attach(t.pid, "--output-format", "json")
        a.wait_attached()
        t.send("spawn-sleep")
        t.expect(r"^spawn-sleep status=0$")
        wait_cpu(t.pid, t.pid, CPU_WANTED_S / 2)
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        check(f"1 child process(es) that {t.pid} started while attached were not followed"
              in a.err, a.err)
        raws = [f for f in os.listdir(os.path.join(a.session, "raw")) if f.endswith(".sraw")]
        check_eq(raws, [f"{t.pid}.sraw"], "no file for the spawned child")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def test_descriptors_after_detach_equal_before():
    t = Target("attach_spin")
    try:
        before = process_state(t.pid)
        for round in range(2):  # the second attach loads libunwind again, and gives it back
            a = Attach(t.pid, "--output-format", "json")
            a.wait_attached()
            wait_cpu(t.pid, t.pid, CPU_WANTED_S / 2)
            check_eq(a.finish(signal.SIGINT), 0, a.describe())
            p = a.profile(t.pid)
            check(p.samples("main_spin") >= 5, f"round {round}: main_spin {p.samples('main_spin')}")
            after = process_state(t.pid)
            check_eq(after, before, f"descriptors, caught signals, threads after detach {round}")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def test_exec_while_attached_gives_an_end_reason():
    t = Target("attach_spin")
    try:
        a = attach_after_cpu(t, "--output-format", "json")
        t.send("exec")
        check_eq(int(t.expect(r"^execed pid=(\d+)$").group(1)), t.pid, "same process")
        check_eq(a.finish(), 0, a.describe())  # the attach ends by itself at the exec
        check_session(a, t.pid, "exec")
        check("executed another program" in a.err, a.err)
        check_eq(a.metadata(t.pid)["exit"]["reason"], "exec", "metadata's end")
        p = a.profile(t.pid)
        check(p.samples("main_spin") >= 5, f"main_spin: {p.samples('main_spin')} of {p.total}")
        # The new program runs on, untouched.
        t.send("ping")
        t.expect(r"^ok ping$")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def test_signal_while_attached_is_the_end():
    """SIGTERM, left at its default by the program, ends it while attached: the hidden
    recorder keeps every thread's records and the end, as under `run` (it said "killed, or
    still running" and could lose each thread's last 20 ms)."""
    t = Target("attach_spin")
    try:
        a = attach_after_cpu(t, "--output-format", "json")
        os.kill(t.pid, signal.SIGTERM)
        check_eq(t.proc.wait(timeout=60), -signal.SIGTERM, "the fixture dies of it")
        check_eq(a.finish(), 0, a.describe())
        check_session(a, t.pid, "process ended")
        check(f"process {t.pid} (attach_spin) was killed by signal 15 (Terminated)" in a.err,
              a.err)
        check("stopped recording without exiting normally" not in a.err, a.err)
        check("nothing lost" in a.err, a.err)
        check_eq(a.metadata(t.pid)["exit"], {"reason": "signal", "status": signal.SIGTERM},
                 "metadata's end")
        p = a.profile(t.pid)
        check(p.samples("main_spin") >= 5, f"main_spin: {p.samples('main_spin')} of {p.total}")
    finally:
        t.kill()


def test_crash_while_attached_names_the_crash():
    """A crash while attached, on a thread that had no sample yet (the fixture's stdin
    reader), is recorded with its place, as under `run`."""
    t = Target("attach_spin")
    try:
        a = attach_after_cpu(t, "--output-format", "json")
        t.send("segv")
        check_eq(t.proc.wait(timeout=60), -signal.SIGSEGV, "the fixture crashes")
        check_eq(a.finish(), 0, a.describe())
        check(f"process {t.pid} crashed (signal 11) in crash_here at attach_spin.c:" in a.err,
              a.err)
        check_eq(a.metadata(t.pid)["exit"], {"reason": "signal", "status": signal.SIGSEGV},
                 "metadata's end")
    finally:
        t.kill()


def test_detach_gives_the_default_dispositions_back():
    """The recorders put on signals left at their default go at the detach: the process
    catches what it caught before, and a SIGTERM after the detach ends it by the default
    action, with no syscope code in the way."""
    t = Target("attach_spin")
    try:
        before = process_state(t.pid)
        a = attach_after_cpu(t, "--output-format", "json")
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        check_eq(process_state(t.pid)["SigCgt"], before["SigCgt"], "caught signals")
        os.kill(t.pid, signal.SIGTERM)
        check_eq(t.proc.wait(timeout=60), -signal.SIGTERM, "the fixture dies of it")
    finally:
        t.kill()


def program_caught(pid, state=None):
    """The signals a process catches, less the C library's own two (SIGCANCEL, SIGSETXID),
    which it installs at the first thread made in the process: the attach's, here."""
    caught = int((state or process_state(pid))["SigCgt"], 16)
    return caught & ~(1 << 31 | 1 << 32)


def test_default_raised_again_after_cleanup_is_the_end():
    """A program that handles SIGTERM (its handler installed before the attach), cleans up,
    gives the signal its default back and raises it again, as xz and gzip do: the recorder
    of the default comes back with it (the signal wrappers in front of the program's calls),
    so the end and the cleanup's records are kept. It said "killed, or still running", and
    the last ~20 ms were lost."""
    t = Target("attach_cleanup")
    try:
        a = attach_after_cpu(t, "--output-format", "json")
        os.kill(t.pid, signal.SIGTERM)
        out, _ = t.proc.communicate(timeout=60)
        check_eq(t.proc.returncode, -signal.SIGTERM, "the fixture dies of it")
        check_eq(out.splitlines(), ["cleanup"], "the program's handler ran once")
        check_eq(a.finish(), 0, a.describe())
        check_session(a, t.pid, "process ended")
        check(f"process {t.pid} (attach_cleanup) was killed by signal 15 (Terminated)"
              in a.err, a.err)
        check("stopped recording without exiting normally" not in a.err, a.err)
        check("nothing lost" in a.err, a.err)
        check_eq(a.metadata(t.pid)["exit"], {"reason": "signal", "status": signal.SIGTERM},
                 "metadata's end")
        p = a.profile(t.pid)
        # 0.2 s of CPU time in the handler: about 60 samples at the attach's rate.
        check(p.samples("cleanup_spin") >= 20,
              f"cleanup_spin: {p.samples('cleanup_spin')} of {p.total}")
        check(p.samples("main_spin") >= 5, f"main_spin: {p.samples('main_spin')} of {p.total}")
    finally:
        t.kill()


def test_detach_leaves_the_programs_handler():
    """At the detach the program's SIGTERM handler is the one in place, as before the
    attach: a SIGTERM after it runs the program's cleanup, which ends by the default action
    with no syscope code in the way."""
    t = Target("attach_cleanup")
    try:
        before = process_state(t.pid)
        a = attach_after_cpu(t, "--output-format", "json")
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        check_eq(program_caught(t.pid), program_caught(t.pid, before), "caught signals")
        os.kill(t.pid, signal.SIGTERM)
        out, _ = t.proc.communicate(timeout=60)
        check_eq(t.proc.returncode, -signal.SIGTERM, "the fixture dies of it")
        check_eq(out.splitlines(), ["cleanup"], "the program's handler ran once")
    finally:
        t.kill()


def spinning_worker(pid):
    """The fixture's before_spin thread: of the threads it started with, the one besides
    main that uses CPU (the other reads stdin). The fixture started it first, so its id
    is the lowest after main's."""
    ids = sorted(int(tid) for tid in os.listdir(f"/proc/{pid}/task") if int(tid) != pid)
    return ids[0]


def test_cpu_events_counted_on_every_thread():
    t = Target("attach_spin")
    try:
        before = process_state(t.pid)
        worker = spinning_worker(t.pid)
        a = Attach(t.pid, "--cpu-events=task-clock", "--parallel=pthread",
                   "--output-format", "rocpd json")
        a.wait_attached()
        # Both spinning threads must run while attached: on a loaded machine one can get
        # the CPU for most of the window while the other barely runs.
        wait_cpu(t.pid, t.pid, CPU_WANTED_S)
        wait_cpu(t.pid, worker, CPU_WANTED_S)
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        db = sqlite3.connect(os.path.join(a.session, f"rocpd-{t.pid}.db"))
        tracks = dict(rows(db, "SELECT I.name, COUNT(*) FROM rocpd_pmc_event E "
                               "JOIN rocpd_info_pmc I ON I.id = E.pmc_id GROUP BY I.name"))
        print("   ", tracks)
        spinning = [n for name, n in tracks.items() if name.startswith("task-clock [")]
        # Samples per thread and the attach's messages, to tell a thread never sampled from
        # one sampled without its counter.
        per_thread = rows(db, "SELECT T.tid, COUNT(*) FROM rocpd_sample S JOIN rocpd_track K "
                              "ON K.id = S.track_id JOIN rocpd_info_thread T ON T.id = K.tid "
                              "GROUP BY T.tid")
        check(f"task-clock [{t.pid}]" in tracks,
              f"the main thread's counter: {tracks}; samples by thread {per_thread} "
              f"(main {t.pid}, worker {worker})\n{a.err}")
        check(len(spinning) >= 2 and min(spinning) >= 5,
              f"both spinning threads counted at their samples: {tracks}")
        check("syscope's wrappers (GOT rewriting) took" in a.err, a.err)
        check_eq(process_state(t.pid), before, "descriptors after the detach (counters closed)")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def test_refusals_of_what_cannot_work_in_attach_name_why():
    t = Target("attach_spin")
    try:
        a = Attach(t.pid, "--sampling-realtime", "--sample-overflow", "task-clock", "1000000",
                   "--output-format", "json")
        a.wait_attached()
        wait_cpu(t.pid, t.pid, CPU_WANTED_S / 2)
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        check("wall-clock sampling is not available in an attached process" in a.err, a.err)
        check("--sample-overflow is not available with attach" in a.err and "EINTR" in a.err,
              a.err)
        p = a.profile(t.pid)
        check(p.samples("main_spin") >= 5, f"CPU samples go on: {p.samples('main_spin')}")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def database(a, pid):
    path = os.path.join(a.session, f"rocpd-{pid}.db")
    check(os.path.exists(path), f"no rocpd database in {os.listdir(a.session)}\n{a.describe()}")
    return sqlite3.connect(path)


def kernels_by_name(db):
    return dict(rows(db, "SELECT name, COUNT(*) FROM kernels GROUP BY name"))


def attach_cuda_window(t, burst):
    """Attach, launch `burst` burst kernels inside the window, let the loop run a moment,
    detach: the session's database."""
    a = Attach(t.pid, "--output-format", "rocpd json")
    a.wait_attached()
    t.send(f"burst {burst}")
    t.expect(rf"^burst {burst} done$")
    time.sleep(1)  # loop kernels (and their copies) inside the window too
    check_eq(a.finish(signal.SIGINT), 0, a.describe())
    check("CUDA tracing through CUPTI" in a.err, f"no CUPTI note\n{a.describe()}")
    return a, database(a, t.pid)


def test_cuda_program_attached_records_its_kernels():
    need_gpu("attach_cuda")
    t = Target("attach_cuda", "60")
    try:
        a, db = attach_cuda_window(t, 300)
        k = kernels_by_name(db)
        print("   ", k)
        burst = [n for name, n in k.items() if name.startswith("burst_add")]
        loop = [n for name, n in k.items() if name.startswith("loop_add")]
        check_eq(burst, [300], f"the burst's kernels, each once: {k}")
        check(loop and loop[0] > 0, f"the loop's kernels in the window: {k}")
        launches = rows(db, "SELECT COUNT(*) FROM regions WHERE name = 'cudaLaunchKernel'")[0][0]
        check(launches >= 300, f"launch calls {launches} for {k}")
        copies = rows(db, "SELECT COUNT(*) FROM memory_copies")[0][0]
        check(copies >= 1, "the loop's copies (one per 100 launches) in the window")
        agents = rows(db, "SELECT COUNT(*) FROM rocpd_info_agent WHERE type = 'GPU'")[0][0]
        check(agents >= 1, "the device recorded as an agent")
        check("NVTX ranges are not recorded in an attached process" in a.err, a.err)
        # After the detach the program goes on, CUDA untouched, and its results are right.
        t.send("burst 50")
        t.expect(r"^burst 50 done$")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
        check(any(line.startswith("attach_cuda ok") for line in t.lines), t.lines)
    finally:
        t.kill()


def test_cuda_program_attached_twice():
    need_gpu("attach_cuda")
    t = Target("attach_cuda", "60")
    try:
        for burst in (40, 70):
            a, db = attach_cuda_window(t, burst)
            k = kernels_by_name(db)
            got = [n for name, n in k.items() if name.startswith("burst_add")]
            check_eq(got, [burst], f"attach with burst {burst}: {k}")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
        check(any(line.startswith("attach_cuda ok") for line in t.lines), t.lines)
    finally:
        t.kill()


def test_cuda_started_while_attached_is_traced():
    need_gpu("attach_cuda")
    t = Target("attach_cuda", "60", "--late")
    try:
        a = Attach(t.pid, "--output-format", "rocpd json")
        a.wait_attached()
        t.send("init")
        t.expect(r"^cuda ready$")
        for _ in range(5):  # the attach thread looks for CUDA every 50 ms
            t.send("burst 50")
            t.expect(r"^burst 50 done$")
            t.lines.remove("burst 50 done")
            time.sleep(0.3)
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        check("CUDA tracing through CUPTI" in a.err, f"no CUPTI note\n{a.describe()}")
        k = kernels_by_name(database(a, t.pid))
        burst = sum(n for name, n in k.items() if name.startswith("burst_add"))
        check(50 <= burst <= 250, f"the bursts after CUDA started: {k}")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
        check(any(line.startswith("attach_cuda ok") for line in t.lines), t.lines)
    finally:
        t.kill()


def test_pytorch_loop_attached():
    need_gpu("attach_cuda")
    try:
        import torch  # noqa: F401  (only to know whether it is there)
    except ImportError:
        raise Skip("no PyTorch for this python3")
    script = os.path.join(SOURCE_PROGRAMS, "cuda", "attach_torch.py")
    t = Target(None, argv=[sys.executable, script, "60"])
    try:
        a = Attach(t.pid, "--output-format", "rocpd json")
        a.wait_attached()
        t.send("burst 200")
        t.expect(r"^burst 200 done$")
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        db = database(a, t.pid)
        n = rows(db, "SELECT COUNT(*) FROM kernels")[0][0]
        print("    kernels:", n, "notes:",
              [line for line in a.err.splitlines() if "CUDA" in line or "CUPTI" in line])
        check(n >= 200, f"the burst's 200 add kernels at least ({n})")
        # A launch before the thread's first sample must not turn Python frames off.
        check("Python frames off" not in a.err and "did not match" not in a.err, a.err)
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
        check(any(line.startswith("attach_torch ok") for line in t.lines), t.lines)
    finally:
        t.kill()


def test_cupti_of_torch_profiler_is_left_alone():
    need_gpu("attach_cuda")
    try:
        import torch  # noqa: F401  (only to know whether it is there)
    except ImportError:
        raise Skip("no PyTorch for this python3")
    script = os.path.join(SOURCE_PROGRAMS, "cuda", "attach_torch.py")
    t = Target(None, argv=[sys.executable, script, "60", "--torch-profiler"])
    try:
        a = Attach(t.pid, "--output-format", "rocpd json")
        a.wait_attached()
        t.send("burst 100")
        t.expect(r"^burst 100 done$")
        # The loop sleeps between its steps: the window ends after a known CPU time of the
        # main thread, not after the burst (a few ms, often no sample at 300 Hz).
        wait_cpu(t.pid, t.pid, CPU_WANTED_S)
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        check("another CUPTI client" in a.err, f"the note of the profiler's CUPTI\n{a.err}")
        check("CUDA tracing through CUPTI" not in a.err, f"CUPTI left to the profiler\n{a.err}")
        files = sorted(os.listdir(a.session))
        check(f"sampling_cpu_clock-{t.pid}.json" in files, f"no CPU profile: {files}\n{a.err}")
        check_eq(rows(database(a, t.pid), "SELECT COUNT(*) FROM kernels"), [(0,)],
                 "no kernels taken from the profiler's CUPTI")
        p = a.profile(t.pid)
        check(p.total >= 5, f"CPU samples go on: {p.total}")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
        check(any(line.startswith("attach_torch ok") for line in t.lines), t.lines)
    finally:
        t.kill()


if __name__ == "__main__":
    harness.main(globals())
