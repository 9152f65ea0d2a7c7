"""syscope attach with several processes (-p A -p B, -p A,B): one session, one raw file and
one profile per process, each sampled in its own hot function, all detached together and
left running; a process that ends or executes while attached ends only its own recording;
one that cannot be recorded is skipped, said, and named in the summary (none recorded: the
failure of one process); bad input (a pid that is not running, one given twice, --tid or
%rank% with several) is refused before any process is touched.

Recording windows end when the fixtures' threads have had a known amount of CPU time (read
from /proc), not after a fixed time."""
import os
import signal
import subprocess

import harness
from harness import check, check_eq
from test_attach import CPU_WANTED_S, Attach, Target, refused, wait_cpu


def has_syscope(pid):
    with open(f"/proc/{pid}/maps") as f:
        return "libsyscope" in f.read()


def raw_files(a):
    return sorted(f for f in os.listdir(os.path.join(a.session, "raw")) if f.endswith(".sraw"))


def attach_entries(a):
    """session.json's `attach` array, by pid."""
    att = a.info()["attach"]
    check(isinstance(att, list), f"attach is not a list: {att}")
    return {e["pid"]: e for e in att}


def check_both_recorded(a, targets, ended_by):
    pids = [t.pid for t in targets]
    check_eq(raw_files(a), sorted(f"{p}.sraw" for p in pids), "raw files")
    info = a.info()
    check_eq(info["pid"], pids[0], "session pid (the first process's)")
    check_eq(info["pids"], pids, "session pids")
    entries = attach_entries(a)
    check_eq(sorted(entries), sorted(pids), "processes in session.json's attach")
    for pid in pids:
        e = entries[pid]
        check_eq(e["ended_by"], ended_by, f"what ended process {pid}'s recording")
        check(e["from"] < e["to"] and e["held_ms"] > 0, f"process {pid}: {e}")
        p = a.profile(pid)
        check(p.samples("main_spin") >= 5,
              f"process {pid}: main_spin {p.samples('main_spin')} of {p.total}")
        meta = a.metadata(pid)
        check_eq(meta["exit"]["reason"], "detach", f"process {pid}'s end")
        check_eq(meta["launcher"]["attach"]["pid"], pid, f"process {pid}'s own attach entry")


def check_still_running(targets):
    for t in targets:
        check(t.proc.poll() is None, f"process {t.pid} ended at the detach")
        t.send("ping")
        t.expect(r"^ok ping$")
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")


def spin_targets(n):
    return [Target("attach_spin") for _ in range(n)]


def test_two_processes_with_two_p_options():
    targets = spin_targets(2)
    try:
        a, b = targets
        att = Attach(a.pid, "-p", str(b.pid), "--output-format", "json")
        line = att.wait_attached()
        check(f"attached to processes {a.pid}, {b.pid} (threads held " in line, line)
        for t in targets:
            wait_cpu(t.pid, t.pid, CPU_WANTED_S)
        check_eq(att.finish(signal.SIGINT), 0, att.describe())
        for t in targets:
            check(f"detached from process {t.pid} (SIGINT)" in att.err, att.err)
        check_both_recorded(att, targets, "SIGINT")
        check_still_running(targets)
    finally:
        for t in targets:
            t.kill()


def test_two_processes_as_a_list():
    targets = spin_targets(2)
    try:
        a, b = targets
        att = Attach(f"{a.pid},{b.pid}", "--output-format", "json")
        att.wait_attached()
        for t in targets:
            wait_cpu(t.pid, t.pid, CPU_WANTED_S)
        check_eq(att.finish(signal.SIGTERM), 0, att.describe())
        check_both_recorded(att, targets, "SIGTERM")
        check_still_running(targets)
    finally:
        for t in targets:
            t.kill()


def test_duration_detaches_every_process():
    targets = spin_targets(3)
    try:
        att = Attach(targets[0].pid, "-p", f"{targets[1].pid},{targets[2].pid}", "-d", "0.5",
                     "--output-format", "json")
        att.wait_attached()
        check_eq(att.finish(), 0, att.describe())
        check_eq(raw_files(att), sorted(f"{t.pid}.sraw" for t in targets), "raw files")
        entries = attach_entries(att)
        check_eq([entries[t.pid]["ended_by"] for t in targets], ["duration"] * 3, "ends")
        check_still_running(targets)
    finally:
        for t in targets:
            t.kill()


def test_one_process_ends_the_other_goes_on():
    targets = spin_targets(2)
    try:
        gone, stays = targets
        att = Attach(gone.pid, "-p", str(stays.pid), "--output-format", "json")
        att.wait_attached()
        wait_cpu(gone.pid, gone.pid, CPU_WANTED_S)
        check_eq(gone.finish(), 0, f"fixture status\n{gone.lines}")
        # Recording of the other goes on: it gets CPU time of its own after the end.
        wait_cpu(stays.pid, stays.pid, CPU_WANTED_S)
        check(att.proc.poll() is None, "the attach ended with the first process")
        check_eq(att.finish(signal.SIGTERM), 0, att.describe())
        check(f"process {gone.pid} ended its recording (process ended); the others go on"
              in att.err, att.err)
        entries = attach_entries(att)
        check_eq(entries[gone.pid]["ended_by"], "process ended", "the ended one's end")
        check_eq(entries[stays.pid]["ended_by"], "SIGTERM", "the other's end")
        check(entries[gone.pid]["to"] < entries[stays.pid]["to"], f"{entries}")
        check_eq(att.metadata(gone.pid)["exit"], {"reason": "exit", "status": 0},
                 "the ended one's metadata")
        check_eq(att.metadata(stays.pid)["exit"]["reason"], "detach", "the other's metadata")
        p = att.profile(stays.pid)
        check(p.samples("main_spin") >= 5, f"main_spin {p.samples('main_spin')} of {p.total}")
        check_still_running([stays])
    finally:
        for t in targets:
            t.kill()


def test_one_process_execs_the_other_goes_on():
    targets = spin_targets(2)
    try:
        execs, stays = targets
        att = Attach(execs.pid, "-p", str(stays.pid), "--output-format", "json")
        att.wait_attached()
        wait_cpu(execs.pid, execs.pid, CPU_WANTED_S)
        execs.send("exec")
        check_eq(int(execs.expect(r"^execed pid=(\d+)$").group(1)), execs.pid, "same process")
        wait_cpu(stays.pid, stays.pid, CPU_WANTED_S)
        check_eq(att.finish(signal.SIGINT), 0, att.describe())
        check(f"process {execs.pid} executed another program" in att.err, att.err)
        entries = attach_entries(att)
        check_eq(entries[execs.pid]["ended_by"], "exec", "the exec'd one's end")
        check_eq(entries[stays.pid]["ended_by"], "SIGINT", "the other's end")
        check_eq(att.metadata(execs.pid)["exit"]["reason"], "exec", "the exec'd one's metadata")
        check_eq(att.metadata(stays.pid)["exit"]["reason"], "detach", "the other's metadata")
        for t in targets:
            p = att.profile(t.pid)
            check(p.samples("main_spin") >= 5, f"{t.pid}: main_spin {p.samples('main_spin')}")
        check_still_running(targets)  # the new program too: untouched
    finally:
        for t in targets:
            t.kill()


def test_one_process_busy_the_other_recorded():
    targets = spin_targets(2)
    try:
        busy, free = targets
        first = Attach(busy.pid, "--output-format", "json")
        first.wait_attached()
        att = Attach(busy.pid, "-p", str(free.pid), "--output-format", "json")
        line = att.wait_attached()
        check(f"attached to process {free.pid} (thread {free.pid} held" in line, line)
        wait_cpu(free.pid, free.pid, CPU_WANTED_S)
        check_eq(att.finish(signal.SIGINT), 0, att.describe())
        check(f"cannot attach to process {busy.pid}: it is being profiled by syscope already"
              in att.err, att.err)
        check("recorded 1 of 2 processes; not recorded:" in att.err, att.err)
        check_eq(raw_files(att), [f"{free.pid}.sraw"], "raw files")
        entries = attach_entries(att)
        check("profiled by syscope already" in entries[busy.pid]["error"], f"{entries}")
        check_eq(entries[free.pid]["ended_by"], "SIGINT", "the recorded one's end")
        check(att.profile(free.pid).samples("main_spin") >= 5, "main_spin samples")
        # The other attach was not disturbed: it still records, and detaches as usual.
        check(first.proc.poll() is None, "the first attach ended")
        check_eq(first.finish(signal.SIGINT), 0, first.describe())
        check_still_running(targets)
    finally:
        for t in targets:
            t.kill()


def test_none_recorded_fails_as_one_does():
    targets = spin_targets(2)
    try:
        a, b = targets
        first = Attach(a.pid, "-p", str(b.pid), "--output-format", "json")
        first.wait_attached()
        r = refused("-p", f"{a.pid},{b.pid}")  # each busy: no session is left behind
        check_eq(r.returncode, 1, r.stderr)
        for t in targets:
            check(f"cannot attach to process {t.pid}: it is being profiled by syscope already"
                  in r.stderr, r.stderr)
        check_eq(first.finish(signal.SIGINT), 0, first.describe())
        check_eq(raw_files(first), sorted(f"{t.pid}.sraw" for t in targets), "first's files")
        check_still_running(targets)
    finally:
        for t in targets:
            t.kill()


def test_bad_input_touches_no_process():
    t = Target("attach_spin")
    try:
        dead = subprocess.Popen(["true"])
        dead.wait()
        r = refused("-p", t.pid, "-p", dead.pid)
        check_eq(r.returncode, 2, r.stderr)
        check(f"cannot attach to process {dead.pid}: no process with id {dead.pid} is running"
              in r.stderr, r.stderr)
        check(not has_syscope(t.pid), "the valid process was injected")
        r = refused("-p", f"{t.pid},{t.pid}")
        check_eq(r.returncode, 2, r.stderr)
        check(f"process {t.pid} is given twice" in r.stderr, r.stderr)
        r = refused("-p", f"{t.pid},")
        check_eq(r.returncode, 2, r.stderr)
        check("is not a process id or a list of them" in r.stderr, r.stderr)
        other = Target("attach_spin")
        try:
            r = refused("-p", t.pid, "-p", other.pid, "--tid", t.pid)
            check_eq(r.returncode, 2, r.stderr)
            check("--tid is for one process" in r.stderr, r.stderr)
            r = refused("-p", t.pid, "-p", other.pid, "-o", "job-%rank%")
            check_eq(r.returncode, 2, r.stderr)
            check("%rank% cannot name it" in r.stderr, r.stderr)
            check(not has_syscope(t.pid) and not has_syscope(other.pid),
                  "a process was injected")
            check_still_running([t, other])
        finally:
            other.kill()
    finally:
        t.kill()


if __name__ == "__main__":
    harness.main(globals())
