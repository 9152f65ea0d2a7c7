"""syscope attach -p PID: fixtures started without syscope get sampled from the attach on
(their hot functions, threads made before and during the attach), keep running after the
detach, see no EINTR in the calls they were blocked in, keep their data when they exit while
attached, can be attached twice, and refusals name their cause.

Recording windows end when the fixture's threads have had a known amount of CPU time (read
from /proc), not after a fixed time: a loaded machine only makes the test slower."""
import json
import os
import platform
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import harness
import rocpd_checks
from harness import SYSCOPE, Profile, check, check_eq, fixture

import pftrace

CPU_WANTED_S = 0.3  # CPU time a spinning thread gets inside the window (about 90 samples)
TICK = os.sysconf("SC_CLK_TCK")


def thread_cpu_s(pid, tid):
    """utime + stime of one thread, in seconds (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def wait_cpu(pid, tid, seconds, limit_s=120):
    """Until thread `tid` has had `seconds` more CPU time (bounded, so a hang fails)."""
    start = thread_cpu_s(pid, tid)
    deadline = time.monotonic() + limit_s
    while thread_cpu_s(pid, tid) - start < seconds:
        check(time.monotonic() < deadline, f"thread {tid} got no CPU time in {limit_s} s")
        time.sleep(0.05)


def expect_line(proc, lines, pattern, who):
    """The first line of proc's output matching pattern: among `lines` already read, else
    read on (each line kept in `lines`); fails if `who` ends first."""
    for line in lines:
        m = re.search(pattern, line)
        if m:
            return m
    while True:
        line = proc.stdout.readline()
        check(line, f"{who} ended before printing {pattern!r}: {lines}")
        lines.append(line.rstrip("\n"))
        m = re.search(pattern, line)
        if m:
            return m


class Target:
    """A fixture started without syscope, talked to through its stdin and stdout."""

    def __init__(self, name, *args, argv=None, as_user=None):
        drop = (lambda: (os.setgid(as_user), os.setuid(as_user))) if as_user else None
        self.proc = subprocess.Popen(argv or [fixture(name), *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, preexec_fn=drop)
        self.lines = []
        self.pid = int(self.expect(r"^pid=(\d+)$").group(1))

    def expect(self, pattern):
        return expect_line(self.proc, self.lines, pattern, "fixture")

    def send(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def finish(self):
        try:
            self.send("quit")
        except (BrokenPipeError, ValueError):
            pass
        out, _ = self.proc.communicate(timeout=60)
        self.lines += out.splitlines()
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Attach:
    """syscope attach running in the background; `wait_attached` returns once it records."""

    def __init__(self, pid, *flags):
        self.workdir = tempfile.mkdtemp(prefix="syscope-attach-")
        os.chmod(self.workdir, 0o755)  # a process of another user reaches its session
        harness._workdirs.append(self.workdir)
        self.proc = subprocess.Popen([SYSCOPE, "attach", "-p", str(pid), *flags],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=self.workdir)
        self.err_lines = []

    def wait_attached(self):
        for line in self.proc.stderr:
            self.err_lines.append(line)
            if "syscope: attached to process" in line:
                return line
        self.proc.wait()
        raise AssertionError("attach did not start:\n" + "".join(self.err_lines))

    def finish(self, sig=None):
        if sig:
            self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=300)
        self.out, self.err = out, "".join(self.err_lines) + err
        # "wrote 6 files to DIR/", or "... to DIR/ for 2 processes, by kind:" for many
        m = re.findall(r"wrote \d+ files? to (.*?)/(?: for \d+ processes, by kind:)?\n",
                       self.err)
        self.session = m[-1] if m else None
        return self.proc.returncode

    def describe(self):
        return f"rc={self.proc.returncode}\nstderr:\n{self.err}"

    def info(self):
        with open(os.path.join(self.session, "session.json")) as f:
            return json.load(f)

    def profile(self, pid):
        return Profile(os.path.join(self.session, f"sampling_cpu_clock-{pid}.json"))

    def metadata(self, pid):
        with open(os.path.join(self.session, f"metadata-{pid}.json")) as f:
            return json.load(f)



def attach_after_cpu(t, *flags):
    """syscope attach to Target `t` with `flags`, returned once it is attached and `t` has
    spun CPU_WANTED_S of CPU time under it."""
    a = Attach(t.pid, *flags)
    a.wait_attached()
    wait_cpu(t.pid, t.pid, CPU_WANTED_S)
    return a

def check_session(a, pid, ended_by):
    check(a.session, f"no session written\n{a.describe()}")
    info = a.info()
    check_eq(info["verb"], "attach", "session verb")
    check_eq(info["pid"], pid, "session pid")
    att = info["attach"]
    check_eq(att["pid"], pid, "attach pid")
    check_eq(att["ended_by"], ended_by, "what ended the attach")
    check(att["from"] < att["to"], f"from {att['from']} to {att['to']}")
    check(0 < att["held_ms"], f"held_ms {att['held_ms']}")
    return att


def process_state(pid):
    """What a detach must give back as it was: descriptors, caught signals, threads. One
    pipe may stay: libunwind's memory-validation pipe, made at its first unwind and kept by
    the dormant library for the next attach (closing it would leave libunwind writing into
    whatever the program opens next under those numbers)."""
    with open(f"/proc/{pid}/status") as f:
        caught = re.search(r"^SigCgt:\s*(\w+)", f.read(), re.M).group(1)
    fds = sorted(os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))
    return {"fds": fds, "SigCgt": caught, "threads": len(os.listdir(f"/proc/{pid}/task"))}


def same_but_unwind_pipe(after, before):
    added = list(after["fds"])
    for fd in before["fds"]:
        if fd in added:
            added.remove(fd)
    pipes = [fd for fd in added if fd.startswith("pipe:")]
    one_pipe = added == pipes and (not added or (len(added) == 2 and added[0] == added[1]))
    rest = dict(after, fds=before["fds"])
    return one_pipe and all(fd in after["fds"] for fd in before["fds"]) and rest == before


def test_hot_function_sampled_and_keeps_running():
    t = Target("attach_spin")
    try:
        before = process_state(t.pid)
        a = attach_after_cpu(t, "--output-format", "json text")
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        check_session(a, t.pid, "SIGINT")
        p = a.profile(t.pid)
        check(p.total >= 10, f"{p.total} samples")
        check(p.samples("main_spin") >= 5, f"main_spin: {p.samples('main_spin')} of {p.total}")
        # Every sample is the fixture's own spinning code (its blocked reader takes none).
        spun = sum(p.self_samples(f) for f in ("work", "main_spin", "before_spin"))
        check(spun >= 0.9 * p.total, f"{spun} of {p.total} in the spin loops")
        meta = a.metadata(t.pid)
        check_eq(meta["exit"]["reason"], "detach", "metadata's end")
        check_eq(meta["launcher"]["verb"], "attach", "metadata's verb")
        check_eq(meta["launcher"]["attach"]["from"], a.info()["attach"]["from"], "from")
        check_eq(meta["launcher"]["attach"]["to"], a.info()["attach"]["to"], "to")
        # After the detach: everything as before, and the program runs on, and answers.
        deadline = time.monotonic() + 120  # the runtime's thread ends just after it detached
        while not same_but_unwind_pipe(process_state(t.pid), before):
            check(time.monotonic() < deadline,
                  f"after the detach: {process_state(t.pid)}, before: {before}")
            time.sleep(0.05)
        check(t.proc.poll() is None, "the fixture ended at the detach")
        wait_cpu(t.pid, t.pid, 0.05)
        t.send("ping")
        t.expect(r"^ok ping$")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
        check("done" in t.lines, f"fixture output {t.lines}")
        check(not os.path.exists(f"/proc/{t.pid}"), "fixture still there")
    finally:
        t.kill()


def test_cuda_process_gets_cpu_samples_and_a_note():
    fake = os.path.join(harness.FIXTURES, "attach-fake-cuda", "libcuda.so.1")
    t = Target("attach_spin", fake)
    try:
        a = attach_after_cpu(t, "--output-format", "json")
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        check("the process uses CUDA, but CUDA tracing cannot start in it" in a.err, a.err)
        p = a.profile(t.pid)
        check(p.samples("main_spin") >= 5, f"main_spin: {p.samples('main_spin')} of {p.total}")
    finally:
        t.kill()


def test_rocprof_sys_formats_perfetto_and_rocpd():
    t = Target("attach_spin")
    try:
        a = attach_after_cpu(t, "-F", "perfetto,rocpd")
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        files = sorted(os.listdir(a.session))
        check(f"perfetto-trace-{t.pid}.pftrace" in files and f"rocpd-{t.pid}.db" in files
              and f"sampling_cpu_clock-{t.pid}.json" not in files, f"outputs {files}")
        with open(os.path.join(a.session, f"perfetto-trace-{t.pid}.pftrace"), "rb") as f:
            trace = pftrace.Trace(f.read())
        check_eq(trace.errors, [], "trace problems")
        in_main = [s for s in trace.samples if any(fr[0] == "main_spin" for fr in s[3])]
        check(len(in_main) >= 5, f"{len(in_main)} of {len(trace.samples)} trace samples")
        db = sqlite3.connect(os.path.join(a.session, f"rocpd-{t.pid}.db"))
        rocpd_checks.check_conventions(db)
        n = rocpd_checks.rows(db, "SELECT COUNT(*) FROM rocpd_sample")[0][0]
        check_eq(n, len(trace.samples), "samples in rocpd and in the trace")
    finally:
        t.kill()


def test_threads_before_and_during_attach():
    t = Target("attach_spin")
    try:
        a = Attach(t.pid, "--output-format", "json")
        a.wait_attached()
        t.send("spawn")
        during = int(t.expect(r"^spawned tid=(\d+)$").group(1))
        wait_cpu(t.pid, during, CPU_WANTED_S)
        check_eq(a.finish(signal.SIGTERM), 0, a.describe())
        check_session(a, t.pid, "SIGTERM")
        p = a.profile(t.pid)
        for fn in ("main_spin", "before_spin", "during_spin"):
            check(p.samples(fn) >= 1, f"{fn}: {p.samples(fn)} samples of {p.total}\n{a.err}")
        check(p.samples("during_spin") >= 5, f"during_spin: {p.samples('during_spin')}")
    finally:
        t.kill()


def test_blocked_calls_restart_without_eintr():
    if platform.machine() != "x86_64":
        raise harness.Skip("attach is x86-64 only")
    fifo = os.path.join(tempfile.mkdtemp(prefix="syscope-attach-"), "fifo")
    harness._workdirs.append(os.path.dirname(fifo))
    os.mkfifo(fifo)
    t = Target("attach_block", fifo)
    try:
        reader = int(t.expect(r"^reader tid=(\d+)$").group(1))
        held = {}
        for tid in (reader, t.pid):  # the reader's read(), then main's epoll_wait()
            a = Attach(t.pid, "--tid", str(tid), "-d", "0.2", "--output-format", "json")
            a.wait_attached()
            check_eq(a.finish(), 0, a.describe())
            held[tid] = check_session(a, t.pid, "duration")
        # Stopped inside the calls: read (0), epoll_wait (232) or epoll_pwait (281).
        check_eq(held[reader]["stopped_in_syscall"], 0, "reader's system call")
        check(held[t.pid]["stopped_in_syscall"] in (232, 281, 441),
              f"main's system call {held[t.pid]['stopped_in_syscall']}")
        with open(fifo, "w") as f:
            f.write("hello\n")
        t.expect(r"^read rc=6 data=hello$")
        t.send("ping")
        t.expect(r"^epoll rc=1$")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
        bad = [line for line in t.lines if "errno=" in line]
        check_eq(bad, [], "calls that failed")
    finally:
        t.kill()


def test_child_forked_while_attached_leaves_the_parent_data_whole():
    t = Target("attach_spin")
    try:
        a = Attach(t.pid, "--output-format", "json")
        a.wait_attached()
        wait_cpu(t.pid, t.pid, CPU_WANTED_S / 2)
        t.send("fork")
        t.expect(r"^forked status=7$")  # the child ran its own exit path, as without us
        wait_cpu(t.pid, t.pid, CPU_WANTED_S / 2)
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        raws = sorted(f for f in os.listdir(os.path.join(a.session, "raw"))
                      if f.endswith(".sraw"))
        check_eq(raws, [f"{t.pid}-fork0.sraw", f"{t.pid}.sraw"], "raw files (the child's too)")
        check("warning" not in a.err, a.err)
        p = a.profile(t.pid)
        check(p.samples("main_spin") >= 5, f"main_spin: {p.samples('main_spin')} of {p.total}")
        t.send("ping")
        t.expect(r"^ok ping$")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def test_target_exits_while_attached():
    t = Target("attach_spin")
    try:
        a = attach_after_cpu(t, "--output-format", "json")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
        check_eq(a.finish(), 0, a.describe())
        check_session(a, t.pid, "process ended")
        p = a.profile(t.pid)
        check(p.samples("main_spin") >= 5, f"main_spin: {p.samples('main_spin')} of {p.total}")
        check_eq(a.metadata(t.pid)["exit"], {"reason": "exit", "status": 0}, "metadata's end")
    finally:
        t.kill()


def test_attach_twice():
    t = Target("attach_spin")
    try:
        totals = []
        for n in range(2):
            a = Attach(t.pid, "-d", "2", "--output-format", "json")
            a.wait_attached()
            check_eq(a.finish(), 0, a.describe())
            check_session(a, t.pid, "duration")
            p = a.profile(t.pid)
            check(p.samples("main_spin") >= 1, f"attach {n}: main_spin {p.samples('main_spin')}")
            totals.append(p.total)
            check(t.proc.poll() is None, f"fixture ended after attach {n}")
        # The library is loaded once, and stays dormant between the attaches.
        with open(f"/proc/{t.pid}/maps") as f:
            maps = f.read()
        check("libsyscope.so" in maps, "library not in the maps")
        tasks = [open(f"/proc/{t.pid}/task/{x}/comm").read().strip()
                 for x in os.listdir(f"/proc/{t.pid}/task")]
        check(not [c for c in tasks if c.startswith("syscope")], f"threads left: {tasks}")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def anonymous_kib(pid):
    """KiB of the process's anonymous mappings: (read-write, reserved without access), the
    library's own .bss (the anonymous mapping right after libsyscope.so's) left out."""
    rw = reserved = 0
    after_lib = False
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if len(fields) > 5:
                after_lib = fields[5].endswith("/libsyscope.so")
                continue
            if after_lib:
                after_lib = False
                continue
            if fields[1].startswith("rw"):
                rw += (hi - lo) >> 10
            else:
                reserved += (hi - lo) >> 10
    return rw, reserved


def test_detach_unmaps_what_it_mapped():
    """A detach leaves none of the tables the runtime reserved (binary instrumentation's id
    tables, 256 MiB of address space, mapped at every attach and kept before), and a second
    attach maps nothing that stays: what remains is the library, one thread stack and a
    malloc arena of the runtime's thread (reused by the next attach), and libunwind's few
    pages."""
    t = Target("attach_spin")
    try:
        before = anonymous_kib(t.pid)
        after = []
        for n in range(2):
            a = Attach(t.pid, "-d", "0.5", "--output-format", "json")
            a.wait_attached()
            check_eq(a.finish(), 0, a.describe())
            p = a.profile(t.pid)
            check(p.samples("main_spin") >= 1, f"attach {n}: main_spin {p.samples('main_spin')}")
            deadline = time.monotonic() + 30  # the runtime's thread ends just after the detach
            while syscope_threads(t.pid):
                check(time.monotonic() < deadline, f"threads left: {syscope_threads(t.pid)}")
                time.sleep(0.05)
            after.append(anonymous_kib(t.pid))
        rw_kept = after[0][0] - before[0]
        check(rw_kept < 32 << 10,
              f"read-write anonymous memory kept by the first detach: {rw_kept} KiB "
              f"(before {before}, after {after})")
        grown = [after[1][i] - after[0][i] for i in range(2)]
        check(max(grown) < 4 << 10,
              f"the second attach left {grown} KiB (rw, reserved) more mapped: {after}")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def runnable_as(uid, path):
    """Whether user `uid` may run `path`, asked of the kernel as that user (a build inside a
    folder closed to others, as mktemp -d makes it, is not)."""
    drop = lambda: (os.setgid(uid), os.setuid(uid))
    return subprocess.run(["test", "-x", path], preexec_fn=drop).returncode == 0


def test_root_attaches_to_another_users_process():
    if os.geteuid() != 0:
        raise harness.Skip("needs root (CI runs as root)")
    nobody = 65534
    if not runnable_as(nobody, fixture("attach_spin")):
        raise harness.Skip(f"nobody may not run {fixture('attach_spin')} (a folder above it "
                           "is closed to others)")
    t = Target("attach_spin", as_user=nobody)
    try:
        a = attach_after_cpu(t, "--output-format", "json")
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        raw = os.path.join(a.session, "raw", f"{t.pid}.sraw")
        check_eq(os.stat(raw).st_uid, nobody, "owner of the raw file the process wrote")
        p = a.profile(t.pid)
        check(p.samples("main_spin") >= 5, f"main_spin: {p.samples('main_spin')} of {p.total}")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


PYTHON = "/usr/bin/python3"  # Debian 12's CPython 3.11, what CI runs


def test_python_frames_when_attached():
    if not os.path.exists(PYTHON):
        if os.environ.get("CI") == "true":
            raise AssertionError(f"no {PYTHON}")
        raise harness.Skip(f"no {PYTHON}")
    script = os.path.join(harness.SOURCE, "tests", "programs", "attach_spin.py")
    t = Target(None, argv=[PYTHON, script])
    try:
        a = attach_after_cpu(t, "--output-format", "json")
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        p = a.profile(t.pid)
        check(p.samples("py_hot") >= 5, f"py_hot: {p.samples('py_hot')} of {p.total}\n"
              f"{p.function_names()[:20]}\n{a.err}")
        f = p.function("py_hot")
        check(f["file"].endswith("attach_spin.py"), f"py_hot's file: {f}")
        loop = harness.source_line("attach_spin.py", "# py_hot loop")
        on_loop = [x for x in p.meta["lines"] if x["function"] == "py_hot" and
                   x["line"] == loop]
        check(on_loop and on_loop[0]["samples"] >= 1,
              f"line {loop}: {[x for x in p.meta['lines'] if x['function'] == 'py_hot']}")
        t.send("ping")
        t.expect(r"^ok ping$")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def syscope_threads(pid):
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return [n for n in names if n.startswith("syscope")]


def test_killed_syscope_leaves_the_process_running():
    t = Target("attach_spin")
    try:
        a = Attach(t.pid, "--output-format", "json")
        a.wait_attached()
        check_eq(syscope_threads(t.pid), ["syscope-attach"], "the runtime's thread")
        a.proc.kill()
        a.proc.wait()
        deadline = time.monotonic() + 60
        while syscope_threads(t.pid):  # the runtime sees its syscope gone and detaches
            check(time.monotonic() < deadline, f"still attached: {syscope_threads(t.pid)}")
            time.sleep(0.05)
        t.send("ping")
        t.expect(r"^ok ping$")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


HOLDER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(0x4206, int(sys.argv[1]), None, None) != 0:  # PTRACE_SEIZE
    print("seize failed", ctypes.get_errno(), flush=True)
    sys.exit(1)
print("seized", flush=True)
sys.stdin.read()
"""


def test_refused_when_already_traced():
    t = Target("attach_spin")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(t.pid)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline().strip()
        if line != "seized":
            if os.environ.get("CI") == "true":
                raise AssertionError(f"the test could not trace its fixture: {line}")
            raise harness.Skip(f"this user may not ptrace its own child here: {line}")
        r = refused("-p", t.pid)
        check_eq(r.returncode, 1, r.stderr)
        check(f"already traced by process {holder.pid} (python" in r.stderr, r.stderr)
        check("detach that one" in r.stderr, r.stderr)
        check(t.proc.poll() is None, "the fixture ended")
    finally:
        holder.kill()
        holder.wait()
        t.kill()


def refused(*args):
    """syscope attach ARGS in a fresh folder: it must make no session there."""
    cwd = tempfile.mkdtemp(prefix="syscope-attach-")
    harness._workdirs.append(cwd)
    r = subprocess.run([SYSCOPE, "attach", *[str(a) for a in args]], capture_output=True,
                       text=True, timeout=60, cwd=cwd)
    check_eq(os.listdir(cwd), [], "files left by a refused attach")
    return r


def test_refused_when_profiled_already():
    # Started by syscope sample: refused before anything is made.
    cwd = tempfile.mkdtemp(prefix="syscope-attach-")
    harness._workdirs.append(cwd)
    t = Target(None, argv=[SYSCOPE, "sample", "--output-format", "json", "--",
                           fixture("attach_spin")])
    try:
        r = refused("-p", t.pid)
        check_eq(r.returncode, 1, r.stderr)
        check("it was started by syscope (sample, run) and is being profiled already"
              in r.stderr, r.stderr)
        t.send("ping")
        t.expect(r"^ok ping$")
    finally:
        t.kill()
    # Attached already: the second attach is refused, and leaves no folder.
    t = Target("attach_spin")
    try:
        a = Attach(t.pid, "--output-format", "json")
        a.wait_attached()
        r = refused("-p", t.pid)
        check_eq(r.returncode, 1, r.stderr)
        check("another attach is recording it" in r.stderr, r.stderr)
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def test_refusals_name_the_cause():
    r = refused()
    check_eq(r.returncode, 2, r.stderr)
    check("-p PID is required" in r.stderr, r.stderr)
    r = refused("-p", "abc")
    check_eq(r.returncode, 2, r.stderr)
    check("'abc' is not a process id" in r.stderr, r.stderr)
    dead = subprocess.Popen(["true"])
    dead.wait()
    r = refused("-p", dead.pid)
    check_eq(r.returncode, 1, r.stderr)
    check(f"no process with id {dead.pid} is running" in r.stderr, r.stderr)
    t = Target("attach_spin")
    try:
        r = refused("-p", t.pid, "--tid", os.getpid())
        check_eq(r.returncode, 2, r.stderr)
        check(f"--tid {os.getpid()} is not a thread of process {t.pid}" in r.stderr, r.stderr)
    finally:
        t.kill()
    t = Target("attach_static")
    try:
        r = refused("-p", t.pid)
        check_eq(r.returncode, 1, r.stderr)
        check("has no glibc loaded (statically linked" in r.stderr, r.stderr)
        check(t.proc.poll() is None, "the static fixture ended")
    finally:
        t.kill()


if __name__ == "__main__":
    harness.main(globals())
