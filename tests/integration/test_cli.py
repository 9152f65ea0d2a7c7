"""The command line: bad input gets a clear message and the exit status a shell would give;
the program's stdin, stdout, stderr, environment and exit status are its own; signals sent to
syscope reach it."""
import glob
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import harness
from harness import SYSCOPE, check, check_eq, descendant, fixture, syscope


def test_missing_program_is_127():
    r = syscope("sample", "--", "no-such-program-xyz")
    check_eq(r.rc, 127, r.describe())
    check("no-such-program-xyz: command not found" in r.err, r.err)
    r = syscope("sample", "--", "./no/such/path")
    check_eq(r.rc, 127, r.describe())
    check("./no/such/path: No such file or directory" in r.err, r.err)


def test_not_executable_is_126():
    r = syscope("sample", "--", os.path.join(harness.SOURCE, "tests", "programs", "hot.c"))
    check_eq(r.rc, 126, r.describe())
    check("Permission denied" in r.err, r.err)
    r = syscope("sample", "--", "/tmp")
    check_eq(r.rc, 126, r.describe())
    check("Is a directory" in r.err, r.err)


def test_unwritable_output_fails_before_the_program_starts():
    marker = os.path.join(harness.tempfile.mkdtemp(), "ran")
    r = syscope("sample", "-o", "/proc/no-such-dir/out", "--", "/bin/sh", "-c", f"touch {marker}")
    check_eq(r.rc, 1, r.describe())
    check("cannot create output folder /proc/no-such-dir/out" in r.err, r.err)
    check(not os.path.exists(marker), "the program did not run")


def test_bad_sampling_values_name_the_valid_range():
    for value in ("-5", "0", "abc", "200000", "1e400"):
        r = syscope("sample", "-f", value, "--", fixture("hot"), "0.1")
        check_eq(r.rc, 2, f"-f {value}: " + r.describe())
        check(f"-f '{value}' is not valid (valid: a number > 0 and <= 100000 Hz)"
              in r.err, r.err)
        check("hot: done" not in r.out, "program not started")
    r = syscope("sample", "--sampling-delay", "-1", "--", fixture("hot"), "0.1")
    check_eq(r.rc, 2, r.describe())
    check("--sampling-delay '-1' is not valid (valid: a number from 0 to" in r.err, r.err)
    r = syscope("sample", "--sampling-duration", "soon", "--", fixture("hot"), "0.1")
    check_eq(r.rc, 2, r.describe())
    check("seconds" in r.err, r.err)
    r = syscope("sample", "--output-format", "json", "pftace", "--", fixture("hot"), "0.1")
    # "pftace" is not a format, so it is taken as the program and not found... unless
    # written with a comma, which makes it part of the option.
    r = syscope("sample", "--output-format=json,pftace", "--", fixture("hot"), "0.1")
    check_eq(r.rc, 2, r.describe())
    check("--output-format 'pftace' is not valid (valid: rocpd, pftrace, text, json, folded, csv, html)"
          in r.err,
          r.err)


def test_bad_environment_value_is_named():
    r = syscope("sample", "--", fixture("hot"), "0.1", env={"SYSCOPE_SAMPLING_FREQ": "fast"})
    check_eq(r.rc, 2, r.describe())
    check("SYSCOPE_SAMPLING_FREQ 'fast' is not valid" in r.err, r.err)


def test_unknown_option_gets_nearest_spelling():
    r = syscope("sample", "--sampling-frq", "100", "--", fixture("hot"), "0.1")
    check_eq(r.rc, 2, r.describe())
    check("unknown option '--sampling-frq' (did you mean --sampling-freq?)" in r.err, r.err)
    r = syscope("smaple", "--", fixture("hot"))
    check_eq(r.rc, 2, r.describe())
    check("unknown verb 'smaple' (did you mean 'sample'?)" in r.err, r.err)
    r = syscope("sample")
    check_eq(r.rc, 2, r.describe())
    check("no program given" in r.err, r.err)


def test_help_and_version():
    r = syscope("--version")
    check_eq(r.rc, 0, r.describe())
    check(r.out.startswith("syscope "), r.out)
    r = syscope("sample", "--help")
    check_eq(r.rc, 0, r.describe())
    for text in ("-f, --sampling-freq=HZ", "--sampling-realtime", "--output-format",
                 "SYSCOPE_SAMPLING_FREQ"):
        check(text in r.out, f"{text!r} in help")
    r = syscope("sample", "--help=sampling")
    check("--sampling-delay" in r.out and "--output-format" not in r.out, r.out)
    r = syscope("help", "convert")
    check("SESSION-FOLDER" in r.out, r.out)


def test_io_environment_and_exit_status_pass_through():
    r = syscope("sample", "--", fixture("io_passthrough"), "42", input="hello world\n",
                env={"FIXTURE_VAR": "kept"})
    check_eq(r.rc, 42, r.describe())
    check_eq(r.out, "HELLO WORLD\n", "stdout is the program's")
    check("FIXTURE_VAR=kept\n" in r.err, r.err)
    check(r.err.startswith("FIXTURE_VAR=kept\n"), "the program's stderr comes first: " + r.err)


def test_killed_program_gives_128_plus_signal():
    r = syscope("sample", "--", fixture("io_passthrough"), "0", str(int(signal.SIGTERM)),
                input="")
    check_eq(r.rc, 128 + signal.SIGTERM, r.describe())


def cpu_seconds(pid):
    """utime + stime of process `pid`, in seconds (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_signals_sent_to_syscope_reach_the_program():
    workdir = harness.tempfile.mkdtemp(prefix="syscope-it-")
    harness._workdirs.append(workdir)
    proc = subprocess.Popen([SYSCOPE, "sample", "--", fixture("hot"), "30"], cwd=workdir,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Not a fixed sleep: on a loaded machine (or under ASan) the program may not have
        # reached hot_loop yet. Once it has run its own code for a while, syscope's
        # handlers are installed and samples of hot_loop are recorded.
        deadline = time.monotonic() + 120
        hot = None
        while time.monotonic() < deadline:
            hot = hot or descendant(proc.pid, "hot")
            if hot and cpu_seconds(hot) >= 0.2:
                break
            check(proc.poll() is None, "syscope still running")
            time.sleep(0.05)
        check(hot, "hot started under syscope")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    check_eq(proc.returncode, 128 + signal.SIGTERM, err)
    check("hot_loop" in err, "the profile of the part that ran is summarized: " + err)
    # The program itself ended by the signal, long before its 30 s.
    (meta,) = glob.glob(os.path.join(workdir, "syscope-*-output", "*", f"metadata-{hot}.json"))
    with open(meta) as f:
        check_eq(json.load(f)["exit"], {"reason": "signal", "status": signal.SIGTERM},
                 "the program's end")


def signal_count_lines(proc):
    """The rest of signal_count's output and its status, once it has ended."""
    out, err = proc.communicate(timeout=300)
    return out.splitlines(), proc.returncode, err


def test_signal_to_the_process_group_reaches_the_program_once():
    """kill -INT -PGID reaches the program itself: syscope, in the same group, must not
    forward its own copy (the program counted two, and a Python program's cleanup after
    KeyboardInterrupt was cut short by the second). A signal sent to syscope alone still
    reaches the program (the SIGQUIT that ends it)."""
    workdir = harness.tempfile.mkdtemp(prefix="syscope-it-")
    harness._workdirs.append(workdir)
    proc = subprocess.Popen([SYSCOPE, "sample", "--", fixture("signal_count")], cwd=workdir,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        check_eq(proc.stdout.readline(), "ready\n", "the fixture's handlers are in")
        os.killpg(proc.pid, signal.SIGINT)
        check_eq(proc.stdout.readline(), "int 1\n", "the group's SIGINT")
        proc.send_signal(signal.SIGQUIT)
        lines, rc, err = signal_count_lines(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    check_eq(lines, ["ints=1"], "SIGINTs the program got\n" + err)
    check_eq(rc, 0, err)


# What `timeout` does when the time is up: the signal to its child (syscope), then to its
# whole process group (which it made, and which the program is in), ignoring it itself.
TIMEOUT_LIKE = r"""
import os, signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                     text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
lines = [p.stdout.readline()]
os.kill(p.pid, signal.SIGINT)
os.kill(0, signal.SIGINT)
lines.append(p.stdout.readline())
os.kill(p.pid, signal.SIGQUIT)
lines += p.stdout.readlines()
print("".join(lines) + f"status={p.wait()}", end="")
"""


def test_signal_to_syscope_then_to_its_group_reaches_the_program_once():
    """`timeout 10 syscope sample -- prog` at the end of the 10 s: the program, alone, would
    get the two signals as one (they come one call after the other); under syscope it got
    syscope's forward, then the group's."""
    workdir = harness.tempfile.mkdtemp(prefix="syscope-it-")
    harness._workdirs.append(workdir)
    proc = subprocess.run([sys.executable, "-c", TIMEOUT_LIKE, SYSCOPE, "sample", "--",
                           fixture("signal_count")], cwd=workdir, capture_output=True,
                          text=True, timeout=300, start_new_session=True)
    check_eq(proc.stdout.splitlines(), ["ready", "int 1", "ints=1", "status=0"],
             "the program's output\n" + proc.stderr)


def test_convert_rejects_what_is_not_a_session():
    r = syscope("convert", "/tmp")
    check_eq(r.rc, 1, r.describe())
    check("/tmp: not a session folder (no raw/ inside)" in r.err, r.err)
    r = syscope("convert", "/no/such/dir")
    check_eq(r.rc, 1, r.describe())
    check("No such file or directory" in r.err, r.err)
    text = os.path.join(r.workdir, "notes.txt")
    with open(text, "w") as f:
        f.write("hello\n")
    r = syscope("convert", "-f", "pftrace", text)
    check_eq(r.rc, 1, r.describe())
    check(f"{text} is not an SQLite database" in r.err, r.err)
    other = os.path.join(r.workdir, "other.db")
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    r = syscope("convert", "-f", "pftrace", other)
    check_eq(r.rc, 1, r.describe())
    check("is an SQLite database but not a rocpd one" in r.err, r.err)


harness.main(globals())
