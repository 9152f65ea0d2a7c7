"""syscope attach with the wrappers the launcher would preload, put in front of the program's
calls by GOT rewriting: contended mutex waits of a process started without syscope recorded
as pthread regions with the lock's address, threads made while attached recorded with their
creator, a library loaded while attached patched too, every entry given back at the detach
(the fixture reads its own entries), and _exit while attached leaving its end reason.

The fixture's waits are made to happen: two threads take one mutex, each holding it 3 ms,
so the second to come waits at least once for the first."""
import os
import re
import signal
import sys
import time

import harness
from harness import check, check_eq, fixture
from test_attach import Attach, Target, check_session, process_state, same_but_unwind_pipe

import pftrace

WAIT_MIN_NS = 1_000_000  # the holder sleeps 3 ms; a loaded machine only makes waits longer


def state_of(pid):
    """process_state without glibc's own handlers (SIGCANCEL, SIGSETXID: signals 32 and 33),
    which the C library installs at a process's first pthread_create (the attach thread's
    here, the fixture being single-threaded until then) and keeps."""
    s = process_state(pid)
    return dict(s, SigCgt=int(s["SigCgt"], 16) & ~(3 << 31))


def entries(t):
    """The fixture's call entries for pthread_mutex_lock: {label: (module, value)}."""
    t.send("got")
    line = t.expect(r"^got .*$").group(0)
    t.lines.remove(line)
    return {k: (m, v) for k, m, v in re.findall(r"(\w+)=([^@\s]+)@(0x[0-9a-f]+)", line)}


def trace_of(a, pid):
    with open(os.path.join(a.session, f"perfetto-trace-{pid}.pftrace"), "rb") as f:
        t = pftrace.Trace(f.read())
    check_eq(t.errors, [], "trace problems")
    return t


def pthread_slices(tr):
    """(tid, name, start, end, args) of every slice of category pthread."""
    return [(tr.thread_of(s[0]), s[1], s[3], s[4], s[5]) for s in tr.slices if s[2] == "pthread"]


def as_int(v):
    return int(v, 16) if isinstance(v, str) else v


def lock_waits(slices, address):
    return [s for s in slices
            if s[1] == "pthread_mutex_lock" and as_int(s[4].get("mutex")) == address]


def check_through_syscope(got, labels):
    for label in labels:
        check_eq(got[label][0], "libsyscope.so", f"{label} leads to syscope's wrapper: {got}")


def test_contended_mutex_attached_is_recorded_and_entries_come_back():
    t = Target("attach_locks")
    try:
        before = entries(t)
        check_eq(before["exe_got"][0], "libc.so.6", f"before the attach: {before}")
        state = state_of(t.pid)
        a = Attach(t.pid, "--parallel=pthread", "--output-format", "pftrace")
        a.wait_attached()
        during = entries(t)
        check_through_syscope(during, ["exe_plt", "exe_got"])
        t.send("contend 20")
        m = t.expect(r"^contend lock=(0x[0-9a-f]+) creator=(\d+) tids=(\d+),(\d+)$")
        lock, creator = int(m.group(1), 16), int(m.group(2))
        workers = {int(m.group(3)), int(m.group(4))}
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        check_session(a, t.pid, "SIGINT")
        check(re.search(r"attach: syscope's wrappers \(GOT rewriting\) took \d+ call entries "
                        r"in \d+ objects", a.err), a.err)
        # After the detach every entry is what it was, and the process as before.
        check_eq(entries(t), before, "the call entries after the detach")
        deadline = time.monotonic() + 120  # the runtime's thread ends just after it detached
        while not same_but_unwind_pipe(state_of(t.pid), state):
            check(time.monotonic() < deadline,
                  f"after the detach: {state_of(t.pid)}, before: {state}")
            time.sleep(0.05)

        slices = pthread_slices(trace_of(a, t.pid))
        waits = lock_waits(slices, lock)
        check(waits, f"no wait on the lock {lock:#x}: {slices[:20]}")
        check({s[0] for s in waits} <= workers, f"waits on the workers {workers}: {waits}")
        check(max(s[3] - s[2] for s in waits) >= WAIT_MIN_NS,
              f"one waited for the other's 3 ms: {waits}")
        creates = [s for s in slices if s[1] == "pthread_create"]
        joins = [s for s in slices if s[1] == "pthread_join"]
        check_eq([s[0] for s in creates], [creator] * 2, "the two creations, by the creator")
        check_eq(sorted(s[4]["thread"] for s in joins), sorted(workers),
                 "each join names the worker it waited for")
        tr = trace_of(a, t.pid)
        starts = {tr.thread_of(i[0]): i[4] for i in tr.instants
                  if i[2] == "pthread" and i[1] == "thread start"}
        check_eq(set(starts), workers, "a start mark on each worker made while attached")
        check_eq({m["created_by"] for m in starts.values()}, {creator}, "made by the creator")

        # Calls after the detach reach the C library: nothing recorded, nothing broken.
        t.send("contend 3")
        t.expect(r"^contend lock=.* tids=\d+,\d+$")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def test_library_loaded_while_attached_is_patched():
    t = Target("attach_locks")
    try:
        a = Attach(t.pid, "--parallel=pthread", "--output-format", "pftrace")
        a.wait_attached()
        t.send("load " + os.path.join(harness.BUILD, "fixtures", "libattach_locklib.so"))
        t.expect(r"^loaded$")
        deadline = time.monotonic() + 120
        while entries(t)["lib_plt"][0] != "libsyscope.so":  # the attach thread looks every 10 ms
            check(time.monotonic() < deadline, f"the library was never patched: {entries(t)}")
            time.sleep(0.05)
        t.send("libcontend 10")
        lock = int(t.expect(r"^libcontend lock=(0x[0-9a-f]+)$").group(1), 16)
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        after = entries(t)
        check_eq(after["lib_plt"][0], "libc.so.6", f"the library's entry back: {after}")
        t.send("libcontend 2")  # its read-only (full RELRO) entries work after the detach
        t.expect(r"^libcontend lock=0x[0-9a-f]+$")
        waits = lock_waits(pthread_slices(trace_of(a, t.pid)), lock)
        check(waits, "the library's contended lock recorded")
        check(max(s[3] - s[2] for s in waits) >= WAIT_MIN_NS, f"a wait of 3 ms: {waits}")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def test_attached_twice_patches_again():
    t = Target("attach_locks")
    try:
        before = entries(t)
        for round in range(2):  # the dormant library's second attach patches anew
            a = Attach(t.pid, "--parallel=pthread", "--output-format", "pftrace")
            a.wait_attached()
            check_through_syscope(entries(t), ["exe_plt", "exe_got"])
            t.send("contend 5")
            lock = int(t.expect(r"^contend lock=(0x[0-9a-f]+) ").group(1), 16)
            t.lines.pop()
            check_eq(a.finish(signal.SIGINT), 0, a.describe())
            check_eq(entries(t), before, f"round {round}: the entries after the detach")
            waits = lock_waits(pthread_slices(trace_of(a, t.pid)), lock)
            check(waits, f"round {round}: waits on the lock")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def test_python_threads_lock_waits_attached():
    script = os.path.join(harness.SOURCE, "tests", "programs", "attach_pylocks.py")
    t = Target(None, argv=[sys.executable, script])
    try:
        a = Attach(t.pid, "--parallel=pthread", "--output-format", "pftrace")
        a.wait_attached()
        t.send("contend 10")
        m = t.expect(r"^contend tids=(\d+),(\d+)$")
        workers = {int(m.group(1)), int(m.group(2))}
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        slices = pthread_slices(trace_of(a, t.pid))
        waits = [s for s in slices if s[1].startswith("sem_") and s[0] in workers]
        check(waits, f"the Lock's semaphore waits on the workers {workers}: {slices[:20]}")
        check(max(s[3] - s[2] for s in waits) >= WAIT_MIN_NS, f"a wait of 3 ms: {waits}")
        check(len({as_int(s[4]["semaphore"]) for s in waits}) == 1, f"one lock: {waits}")
        t.send("contend 2")  # and after the detach, as before
        t.expect(r"^contend tids=\d+,\d+$")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def test_entries_bound_to_an_interposer_are_left_alone():
    interposer = os.path.join(harness.BUILD, "fixtures", "libattach_interposer.so")
    t = Target(None, argv=["env", f"LD_PRELOAD={interposer}", fixture("attach_locks")])
    try:
        check_eq(entries(t)["exe_got"][0], "libattach_interposer.so", "the program's own lock")
        a = Attach(t.pid, "--parallel=pthread", "--output-format", "pftrace")
        a.wait_attached()
        during = entries(t)
        check_eq(during["exe_got"][0], "libattach_interposer.so", f"left alone: {during}")
        check_eq(during["exe_plt"][0], "libsyscope.so", f"pthread_create still ours: {during}")
        t.send("contend 3")
        t.expect(r"^contend lock=")
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        check(re.search(r"attach: \d+ call entr\w+ bound to another definition than the C "
                        r"library's .* were left alone", a.err), a.err)
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def test_without_the_flag_locks_are_left_alone():
    t = Target("attach_locks")
    try:
        before = entries(t)
        a = Attach(t.pid, "--output-format", "pftrace")
        a.wait_attached()
        check_eq(entries(t), before, "no lock entry patched without --parallel=pthread")
        t.send("contend 5")
        t.expect(r"^contend lock=")
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        check_eq(pthread_slices(trace_of(a, t.pid)), [], "no pthread region")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


def test_exit_underscore_while_attached_gives_its_end_reason():
    t = Target("attach_locks")
    try:
        a = Attach(t.pid, "--output-format", "json")
        a.wait_attached()
        t.send("_exit 5")
        check_eq(t.proc.wait(timeout=60), 5, "the fixture's status")
        check_eq(a.finish(), 0, a.describe())  # the attach ends with the process
        check_session(a, t.pid, "process ended")
        check_eq(a.metadata(t.pid)["exit"], {"reason": "_exit", "status": 5}, "metadata's end")
    finally:
        t.kill()


if __name__ == "__main__":
    harness.main(globals())
