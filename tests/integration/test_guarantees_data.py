"""Never break the program, never lose its data (tests/programs/guard_data.c): a program that
closes every descriptor keeps its own files byte for byte while libunwind validates addresses;
a raw close_range of syscope's raw file loses nothing; processes that end through daemon(),
fork-then-end, SIGPIPE or SIGTERM keep every call they made; and the summary's account of
losses names each loss with its cause, never "nothing lost" beside one."""
import glob
import os
import re
import shlex
import shutil
import sqlite3
import struct
import subprocess
import tempfile

import harness
from harness import calls_of, check, check_eq, fixture, syscope

LINES = 100


def expected_lines():
    return "".join(f"line {i} of the program's own file\n" for i in range(LINES)).encode()


def instrument(*args):
    return syscope("instrument", "--min-instructions", "0", "--", fixture("guard_data"), *args)


def check_files_intact(r, what):
    check_eq(r.rc, 0, f"{what}: every write of the program succeeded\n" + r.describe())
    check("fds 3 4" in r.out, f"{what}: the program's files got 3 and 4: {r.out}")
    for name in ("a.txt", "b.txt"):
        with open(os.path.join(r.workdir, name), "rb") as f:
            check_eq(f.read(), expected_lines(), f"{what}: {name} byte for byte")


def test_closing_every_descriptor_leaves_the_programs_files_alone():
    """libunwind's validation pipe must not sit where the program's files go (it used to be
    closed by the program, then libunwind closed the program's files and took their numbers);
    with O_RDWR files it read and wrote a byte of them."""
    for how in ("libc", "closefrom"):
        for mode in ("wronly", "rdwr"):
            what = f"{how} {mode}"
            r = syscope("sample", "-f", "1000", "--", fixture("guard_data"), "close", how, mode,
                        LINES)
            check_files_intact(r, what)
            p = r.profile()
            check(p.total > 20, f"{what}: sampled while unwinding deep stacks: {p.total}")
            check(p.samples("deep") > 0.8 * p.total, f"{what}: {p.function_names()[:5]}")
            check("nothing lost" in r.err, f"{what}: {r.err}")


def test_raw_close_range_system_call_loses_nothing():
    """SYS_close_range past the libc wrapper closes syscope's raw file: it is opened again by
    path before the next write, and nothing is written into a number the program now owns."""
    for mode in ("wronly", "rdwr"):
        r = syscope("sample", "-f", "1000", "--", fixture("guard_data"), "close", "raw", mode,
                    LINES)
        check_files_intact(r, f"raw {mode}")
        md = r.metadata()
        losses = md["images"][0]["losses"]
        check(losses["raw_file_reopened"] >= 1 and losses["by_cause"] == {}, losses)
        check("never written" not in r.err and "damaged data" not in r.err, r.err)
        check("nothing lost" in r.err, r.err)
        check(re.search(r"closed syscope's raw file behind its back \d+ times?", r.err), r.err)
        check("1 thread recorded" in r.err, r.err)
        check_eq(md["exit"], {"reason": "exit", "status": 0}, "recorded end")
        # The sampler's perf descriptor went too: its samples stop, and the run says so.
        check("closed syscope's sampling descriptor of thread 0 with a raw close system "
              "call" in r.err, f"the stopped samples are told: {r.err}")


def parent_and_child_calls(mode, child):
    """guard_data MODE under instrument: the parent's 50 calls and its `child`'s 50, each in
    its own process. Returns the result and the parent's pid."""
    r = instrument(mode, 50)
    check_eq(r.rc, 0, r.describe())
    pids = r.pids()
    check_eq(len(pids), 2, f"the parent and the {child}")
    parent, other = pids if pids[0] == r.main_pid() else pids[::-1]
    check_eq(calls_of(r.profile("wall_clock", pid=parent)), {"main": 1, "counted": 50},
             "the parent's calls")
    check_eq(calls_of(r.profile("wall_clock", pid=other)), {"counted": 50},
             f"the {child}'s calls")
    return r, parent


def test_daemon_parent_keeps_its_calls():
    """daemon() leaves the parent through libc's internal _exit: its calls must be there."""
    r, parent = parent_and_child_calls("daemon", "daemon")
    check_eq(r.metadata(parent)["exit"], {"reason": "_exit", "status": 0}, "the parent's end")
    check("nothing lost" in r.err and "never written" not in r.err, r.err)


def test_daemon_under_sampling():
    r = syscope("sample", "-f", "1000", "--", fixture("guard_data"), "daemon", 50)
    check_eq(r.rc, 0, r.describe())
    check_eq(len(r.pids()), 2, "the parent and the daemon")
    for pid in r.pids():
        md = r.metadata(pid)
        check(md["exit"]["reason"] in ("_exit", "exit"), f"{pid}: {md['exit']}")
    check("nothing lost" in r.err and "never written" not in r.err, r.err)
    check("?" not in re.findall(r"process \d+ \((.*?)\)", r.err), r.err)


def test_parent_ending_while_its_child_goes_on():
    r, _ = parent_and_child_calls("forkexit", "child")
    check("nothing lost" in r.err, r.err)


def run_in_pipeline(verb_args, tail):
    """`syscope VERB... | TAIL` through a shell, the way `sort | head` runs; returns a Result."""
    workdir = tempfile.mkdtemp(prefix="syscope-it-")
    harness._workdirs.append(workdir)
    cmd = " ".join(shlex.quote(str(a)) for a in [harness.SYSCOPE] + verb_args) + " | " + tail
    proc = subprocess.run(["sh", "-c", cmd], cwd=workdir, capture_output=True, text=True,
                          timeout=300)
    m = re.findall(r"wrote \d+ files? to (.*)/\n", proc.stderr)
    return harness.Result(proc, workdir, m[-1] if m else None, 0)


def test_sigpipe_keeps_every_call_and_the_command():
    """`prog | head -1`: the program dies of SIGPIPE; every call it made (it counts them into
    a file before each write) is in the profile, and the process shows its real command."""
    r = run_in_pipeline(["instrument", "--min-instructions", "0", "--", fixture("guard_data"),
                         "pipe", "count.txt"], "head -1")
    check_eq(r.out, "line 1\n", r.describe())
    with open(os.path.join(r.workdir, "count.txt")) as f:
        made = int(f.read().split()[0])
    check(made >= 1, f"{made} calls")
    check_eq(calls_of(r.profile("wall_clock")), {"main": 1, "counted": made},
             "every call the program made")
    check_eq(r.metadata()["exit"], {"reason": "signal", "status": 13}, "SIGPIPE recorded")
    check(re.search(r"process \d+ \(guard_data\) was killed by signal 13", r.err), r.err)
    check("nothing lost" in r.err and "never written" not in r.err, r.err)


def test_sigpipe_under_sampling_keeps_the_samples():
    r = run_in_pipeline(["sample", "-f", "1000", "--", fixture("guard_data"), "pipe",
                         "count.txt"], "head -1")
    check_eq(r.out, "line 1\n", r.describe())
    check_eq(r.metadata()["exit"], {"reason": "signal", "status": 13}, "SIGPIPE recorded")
    check(re.search(r"process \d+ \(guard_data\) was killed by signal 13", r.err), r.err)
    check("nothing lost" in r.err and "never written" not in r.err, r.err)


def test_sigterm_is_reported_as_signal_15():
    r = instrument("term", 50)
    check_eq(r.rc, 128 + 15, "the program still dies of SIGTERM\n" + r.describe())
    check_eq(calls_of(r.profile("wall_clock")), {"main": 1, "counted": 50}, "every call")
    check_eq(r.metadata()["exit"], {"reason": "signal", "status": 15}, "recorded end")
    check(re.search(r"process \d+ \(guard_data\) was killed by signal 15", r.err), r.err)
    check("stopped recording without exiting normally" not in r.err, r.err)
    check("nothing lost" in r.err, r.err)


def test_sigkill_is_named_from_the_launcher():
    """No handler runs at a SIGKILL, so the program's file has no end: the launcher saw the
    signal, and the summary and metadata name it; syscope's own host thread is counted apart
    from the program's."""
    r = syscope("instrument", "--min-instructions", "0", "--host", "--", fixture("guard_data"),
                "kill", 100)
    check_eq(r.rc, 128 + 9, "the program still dies of SIGKILL\n" + r.describe())
    check_eq(r.metadata()["exit"], {"reason": "signal", "status": 9}, "the launcher's signal")
    check(re.search(r"process \d+ \(guard_data\) was killed by signal 9 \(Killed\), which "
                    r"no handler can see", r.err), r.err)
    check("stopped recording without exiting normally" not in r.err, r.err)
    check("1 process, 1 thread recorded (and 1 of syscope's own)" in r.err, r.err)
    # the calls flushed before the kill (every 20 ms of the 100 ms): most of them
    calls = calls_of(r.profile("wall_clock")).get("counted", 0)
    check(0 < calls <= 100, f"the calls flushed before the kill: {calls}\n{r.err}")


def test_quick_exit_keeps_the_calls_of_its_handlers():
    """quick_exit() leaves through libc's own _exit, after the program's at_quick_exit
    handlers: the end is recorded after them."""
    r = instrument("quick", 30)
    check_eq(r.rc, 3, r.describe())
    calls = calls_of(r.profile("wall_clock"))
    check_eq((calls["main"], calls["counted"]), (1, 31), f"30 calls and the handler's: {calls}")
    check_eq(r.metadata()["exit"], {"reason": "_exit", "status": 3}, "recorded end")
    check("nothing lost" in r.err, r.err)


def test_dlopen_dlclose_loop_loses_nothing():
    """A sample landing while its thread changed chunks used to lose its record ("LOST 1
    records", blamed on the buffer limit)."""
    lib = os.path.join(os.path.dirname(fixture("guard_data")), "libhotlib.so")
    r = syscope("sample", "-f", "5000", "--", fixture("guard_data"), "dlloop", lib, 1500)
    check_eq(r.rc, 0, r.describe())
    check("dlloop: 1500 rounds" in r.out, r.out)
    check("LOST" not in r.err and "nothing lost" in r.err, r.err)
    check_eq(r.metadata()["exit"], {"reason": "exit", "status": 0}, "recorded end")


def set_header(path, lost_records, causes):
    """lost_records, lost_bytes and lost_by_cause of a raw file (src/store/format.h)."""
    with open(path, "r+b") as f:
        f.seek(144)
        f.write(struct.pack("<QQ", lost_records, lost_records * 64))
        f.seek(192)
        f.write(struct.pack("<8Q", *causes))


def test_records_from_the_programs_signal_handler_during_a_sample_are_all_kept():
    # marks_in_handler: a timer's handler makes a mark every 50 us while the sampler, at
    # 5 kHz, unwinds a deep stack; a mark made inside a sample comes after the sample's
    # reservation, which then cannot give back its unused tail. Every mark must be there,
    # and the samples around them.
    r = syscope("sample", "-f", "5000", "--output-format", "rocpd", "--",
                fixture("marks_in_handler"))
    check_eq(r.rc, 0, r.describe())
    made = int(re.search(r"marks_in_handler: (\d+) marks", r.out).group(1))
    check(made > 1000, f"the timer ticked: {made} marks")
    check("nothing lost" in r.err and "damaged" not in r.err, r.err[-2000:])
    db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
    kept = db.execute("SELECT COUNT(*) FROM samples WHERE category = 'USER_REGION'").fetchone()[0]
    check_eq(kept, made, "the program's marks in the database")
    samples = int(re.search(r"(\d+) CPU-time samples", r.err).group(1))
    check(samples > 1000, f"the samples beside them: {samples}")


def test_exit_while_other_threads_record_leaves_no_damage():
    # syscope writes every thread's buffers at the exit while their threads go on recording;
    # the records they make after it are lost, and said so ("claimed but never written"),
    # but what was written must read whole: no record body without its header (1 run in
    # 25-40 before), no buffer reused under the write.
    for i in range(8):
        r = syscope("run", "--output-format", "json", "--", fixture("exit_while_recording"), 4)
        check_eq(r.rc, 0, r.describe())
        check("exiting" in r.out, r.describe())
        damaged = [ln for ln in r.err.splitlines() if "damaged data" in ln]
        check(all("claimed but never written" in ln for ln in damaged),
              f"run {i}: only chunks the exit cut off may be missing: {damaged}")
        calls = calls_of(r.profile("wall_clock")).get("busy", 0)
        check(calls > 1000, f"run {i}: the regions written: {calls}")


def test_summary_names_every_loss_with_its_cause():
    r = syscope("sample", "-f", "500", "--", fixture("guard_data"), "term", 20)
    check("nothing lost" in r.err, r.err)
    raw = r.raw_files()
    check_eq(len(raw), 1, "one raw file")
    copy = os.path.join(r.workdir, "copy")
    shutil.copytree(r.session, copy)
    path = os.path.join(copy, "raw", os.path.basename(raw[0]))
    causes = [0] * 8
    causes[2] = 29  # SC_LOST_REENTRY
    set_header(path, 29, causes)
    c = syscope("convert", copy)
    check("LOST 29 records (1856 bytes): 29 because a signal handler recorded while its "
          "thread was changing chunks" in c.err, c.err)
    check("nothing lost" not in c.err and "buffer limit" not in c.err, c.err)
    check_eq(c.metadata()["images"][0]["losses"]["by_cause"], {"handler-during-exchange": 29},
             "metadata")
    # A file of an older writer: a count without causes is said to be one.
    set_header(path, 5, [0] * 8)
    c = syscope("convert", copy)
    check("LOST 5 records (320 bytes): 5 for a cause not recorded" in c.err, c.err)
    # Damaged data is a loss too: never "nothing lost" beside it.
    set_header(path, 0, [0] * 8)
    with open(path, "r+b") as f:
        chunk = struct.unpack_from("<I", f.read(24), 20)[0]
        f.seek(4096 + 64)
        f.write(struct.pack("<I", 3))  # a record of size 3 in chunk 0
    c = syscope("convert", copy)
    check("damaged data" in c.err and "nothing lost" not in c.err, c.err)
    check(re.search(r"LOST the rest of 1 damaged or cut-short chunk", c.err), c.err)
    check(chunk >= 4096, f"chunk size {chunk}")


def record_counts(paths):
    """Records of each type in these raw files (tests/tools/rawdump.py)."""
    import rawdump
    import records
    counts = {}
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        for _tid, rtype, _flags, _p in rawdump.records(data):
            name = records.NAMES.get(rtype, str(rtype))
            counts[name] = counts.get(name, 0) + 1
    return counts


def small_ext2(size_mb):
    """A file system of `size_mb` MiB without fallocate (ext2), mounted from a loop image;
    returns (mount point, unmount function). Skips where it cannot be mounted."""
    if os.geteuid() != 0 or not shutil.which("mkfs.ext2"):
        raise harness.Skip("a full disk needs root and mkfs.ext2 (a loop-mounted ext2)")
    top = tempfile.mkdtemp(prefix="syscope-fulldisk-")
    image, mnt = os.path.join(top, "disk.img"), os.path.join(top, "mnt")
    os.mkdir(mnt)
    with open(image, "wb") as f:
        f.truncate(size_mb << 20)
    subprocess.run(["mkfs.ext2", "-q", "-F", image], check=True, capture_output=True)
    m = subprocess.run(["mount", "-o", "loop", image, mnt], capture_output=True, text=True)
    if m.returncode:
        shutil.rmtree(top)
        raise harness.Skip(f"cannot loop-mount an ext2 image here: {m.stderr.strip()}")

    def unmount():
        subprocess.run(["umount", mnt], check=False)
        shutil.rmtree(top, ignore_errors=True)
    return mnt, unmount


def test_full_disk_counts_each_lost_record_once():
    """A disk that fills up while the program records (ext2 has no fallocate, so the chunks'
    writes fail, not their claims): the summary's LOST count is exactly the records missing
    from the raw file, against a run of the same program on a disk with room; failed writes
    are counted once each (before: every retry again, in bytes, beside a second line for the
    same chunks "claimed but never written", and nothing in the LOST records line)."""
    n = 300000  # 7.2 MB of calls, into 6 MiB
    # No telemetry: its readings go on as long as the run does (the full disk slows it).
    args = ["run", "--no-sample", "--no-host", "--no-gpu", "--no-throttle",
            "--buffer-disk-reserve-mb", "0",
            "--output-format", "json", "--", fixture("calls_compact_hooked"), n]
    ref = syscope(*args)
    check_eq(ref.rc, 0, ref.describe())
    check("nothing lost" in ref.err, ref.err)
    expected = record_counts(ref.raw_files())
    check_eq(expected.get("FUNC_CALL"), n + 5, "calls of the reference run")
    mnt, unmount = small_ext2(6)
    try:
        full = syscope(args[0], "-o", os.path.join(mnt, "out"), *args[1:])
        check(f"calls_compact ok {n}" in full.out, full.describe())
        m = re.search(r"LOST (\d+) records \(\d+ bytes\): (.*)", full.err)
        check(m, full.describe())
        raws = glob.glob(os.path.join(mnt, "out", "*", "raw", "*.sraw"))
        check_eq(len(raws), 1, f"raw files in {mnt}")
        got = record_counts(raws)
        missing = sum(expected.values()) - sum(v for k, v in got.items() if k != "LOST")
        check_eq(int(m.group(1)), missing,
                 f"records the summary says were lost vs those missing ({got} of {expected})")
        written = re.search(r"(\d+) because their write into the raw file failed", m.group(2))
        check(written and int(written.group(1)) > 0,
              f"no write failed: the disk did not fill up as meant\n{full.err}")
        check("whose write into the raw file failed" not in full.err, full.err)
        check("claimed but never written (the damaged-data" not in full.err, full.err)
    finally:
        unmount()


if __name__ == "__main__":
    harness.main(globals())
