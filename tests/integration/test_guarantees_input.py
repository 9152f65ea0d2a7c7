"""Never break the program, never lose its data (issue 14), the CLI's part: outputs never
clobber what the user has, damaged input never crashes a reader, bad values get a clear
error, signals reach the program, and a program that cannot be profiled is said so once."""
import glob
import json
import os
import shutil
import signal
import sqlite3
import stat
import struct
import subprocess
import sys
import tempfile
import time

import harness
from harness import Skip, check, check_eq, fixture, gen_session, syscope

sys.path.insert(0, os.path.join(harness.SOURCE, "tests", "tools"))
import rawdump  # noqa: E402
import records  # noqa: E402

FUZZ = os.path.join(harness.BUILD, "bin", "test_fuzz_sessions")
SAMPLE_FLAGS_SYMBOLIC = 0x8000  # model.h: SC_STACK_SYMBOLIC, meant for imported stacks only


def workdir():
    d = tempfile.mkdtemp(prefix="syscope-guard-")
    harness._workdirs.append(d)
    return d


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def crashed(rc):
    return rc < 0 or rc >= 128


# ---- outputs never clobber what the user has ----

def test_generate_config_never_writes_through_a_link():
    d = workdir()
    write(os.path.join(d, "victim"), "victim's data\n")
    # The old temporary name, planted: it must not be followed.
    os.symlink("victim", os.path.join(d, "mine.cfg.tmp"))
    r = syscope("avail", "-G", "mine.cfg", cwd=d)
    check_eq(r.rc, 0, r.describe())
    check_eq(read(os.path.join(d, "victim")), "victim's data\n", "victim untouched")
    check(read(os.path.join(d, "mine.cfg")).startswith("# syscope "), "the config was written")
    # The destination itself a link: refused, even with --force, and the target untouched.
    os.symlink("victim", os.path.join(d, "link.cfg"))
    for extra in ([], ["--force"]):
        r = syscope("avail", "-G", "link.cfg", *extra, cwd=d)
        check_eq(r.rc, 1, r.describe())
        check("link.cfg is a symbolic link" in r.err, r.err)
        check_eq(read(os.path.join(d, "victim")), "victim's data\n", "victim untouched")
        check(os.path.islink(os.path.join(d, "link.cfg")), "the link itself stays")
    check_eq(sorted(n for n in os.listdir(d) if n.startswith(".")), [".syscope-outputs"],
             "no temporary left behind")


def test_user_file_replaced_only_with_force():
    d = workdir()
    write(os.path.join(d, "user.cfg"), "mine\n")
    r = syscope("avail", "-G", "user.cfg", cwd=d)
    check_eq(r.rc, 1, r.describe())
    check("user.cfg exists and was not written by syscope; give --force" in r.err, r.err)
    check_eq(read(os.path.join(d, "user.cfg")), "mine\n", "kept")
    r = syscope("avail", "-G", "user.cfg", "--force", cwd=d)
    check_eq(r.rc, 0, r.describe())
    check(read(os.path.join(d, "user.cfg")).startswith("# syscope "), "replaced with --force")
    # Now syscope's own (named in the folder's manifest): a second run replaces it freely.
    check_eq(read(os.path.join(d, ".syscope-outputs")), "user.cfg\n", "manifest")
    r = syscope("avail", "-G", "user.cfg", cwd=d)
    check_eq(r.rc, 0, r.describe())
    # The same rules for --export-config.
    write(os.path.join(d, "preset.json"), "{}\n")
    r = syscope("sample", "--export-config=preset.json", cwd=d)
    check_eq(r.rc, 1, r.describe())
    check_eq(read(os.path.join(d, "preset.json")), "{}\n", "kept")
    r = syscope("sample", "--export-config=preset.json", "--force", cwd=d)
    check_eq(r.rc, 0, r.describe())
    check('"settings"' in read(os.path.join(d, "preset.json")), "exported with --force")


def test_non_regular_destinations_refused():
    d = workdir()
    fifo = os.path.join(d, "fifo.json")
    os.mkfifo(fifo)
    # A FIFO with no reader: opening it for writing would block; it must be refused at once.
    r = syscope("sample", "--export-config=" + fifo, "--force", timeout=60)
    check_eq(r.rc, 1, r.describe())
    check("fifo.json is a FIFO" in r.err, r.err)
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO stays")
    # As root, instrument -o /dev/null used to replace the device node with a regular file.
    r = syscope("instrument", "-o", "/dev/null", "--force", "--", fixture("patch_calls"))
    check_eq(r.rc, 1, r.describe())
    check("/dev/null is a character device" in r.err, r.err)
    check(stat.S_ISCHR(os.lstat("/dev/null").st_mode), "/dev/null is still a device")


def test_instrument_output_keeps_user_file():
    d = workdir()
    target = os.path.join(d, "copy")
    write(target, "not a program\n")
    r = syscope("instrument", "-o", target, "--", fixture("patch_calls"))
    check_eq(r.rc, 1, r.describe())
    check("exists and was not written by syscope" in r.err, r.err)
    check_eq(read(target), "not a program\n", "kept")
    r = syscope("instrument", "-o", target, "--force", "--", fixture("patch_calls"))
    check_eq(r.rc, 0, r.describe())
    check_eq(read(target, "rb")[:4], b"\x7fELF", "the instrumented copy")
    check(os.access(target, os.X_OK), "executable")
    # A copy instrument -o wrote (it carries its plan) is replaced without --force, and no
    # manifest is left beside programs.
    r = syscope("instrument", "-o", target, "--", fixture("patch_calls"))
    check_eq(r.rc, 0, r.describe())
    check_eq(os.listdir(d), ["copy"], "nothing else in the folder")


def test_merge_and_convert_keep_user_files():
    d = workdir()
    s = gen_session("--pid", 6101, "--samples", 12, workdir=d)
    existing = os.path.join(d, "existing.db")
    write(existing, "junk\n")
    r = syscope("merge", "-o", existing, s)
    check_eq(r.rc, 1, r.describe())
    check("existing.db exists and was not written by syscope" in r.err, r.err)
    check_eq(read(existing), "junk\n", "kept")
    r = syscope("merge", "-o", existing, "--force", s)
    check_eq(r.rc, 0, r.describe())
    check_eq(read(existing, "rb")[:15], b"SQLite format 3", "merged with --force")
    # convert -o DIR: the user's file of an output's name stays; the others are written.
    out = os.path.join(d, "out")
    os.mkdir(out)
    mine = os.path.join(out, "perfetto-trace-6101.pftrace")
    write(mine, "mine\n")
    r = syscope("convert", "-f", "pftrace", "folded", "-o", out, s)
    check_eq(r.rc, 1, r.describe())
    check("perfetto-trace-6101.pftrace exists and was not written by syscope" in r.err, r.err)
    check_eq(read(mine), "mine\n", "kept")
    check(read(os.path.join(out, "sampling_cpu_clock-6101.folded")).count("gen_root") > 0,
          "the other outputs were written")
    r = syscope("convert", "-f", "pftrace", "-o", out, "--force", s)
    check_eq(r.rc, 0, r.describe())
    check(os.path.getsize(mine) > 100, "replaced with --force")
    leftovers = [n for n in os.listdir(out) if n.startswith(".") and n != ".syscope-outputs"]
    check_eq(leftovers, [], "no temporaries")


def test_merging_the_same_session_twice_counts_it_once():
    d = workdir()
    s = gen_session("--pid", 6102, "--samples", 25, workdir=d)
    r = syscope("merge", "-o", os.path.join(d, "once"), s)
    check_eq(r.rc, 0, r.describe())
    r2 = syscope("merge", "-o", os.path.join(d, "twice"), s, s)
    check_eq(r2.rc, 0, r2.describe())
    check("merged already; skipped" in r2.err, r2.err)

    def samples(folder):
        db = sqlite3.connect(os.path.join(d, folder, "rocpd-merged.db"))
        try:
            return db.execute("SELECT COUNT(*) FROM rocpd_sample").fetchone()[0]
        finally:
            db.close()
    check_eq(samples("once"), 25, "one session's samples")
    check_eq(samples("twice"), 25, "the same session given twice")


def test_interrupted_convert_leaves_no_temporary():
    d = workdir()
    s = gen_session("--pid", 6103, "--threads", 4, "--samples", 100000, "--regions", 20000,
                    workdir=d)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        out = os.path.join(d, "out-%d" % sig)
        os.mkdir(out)
        p = subprocess.Popen([harness.SYSCOPE, "convert", "-f", "rocpd", "pftrace", "csv",
                              "-o", out, s], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        # Signalled while the rocpd database is being written (its named temporary is
        # there); wherever it lands, no temporary may remain.
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline and \
                not any(n.startswith(".rocpd-") for n in os.listdir(out)):
            time.sleep(0.01)
        p.send_signal(sig)
        p.wait(timeout=300)
        if sig == signal.SIGKILL:
            # Nothing can run at a SIGKILL: an unnamed (O_TMPFILE) temporary vanishes by
            # itself, SQLite's named one is removed by the next conversion.
            r = syscope("convert", "-f", "rocpd", "-o", out, s)
            check_eq(r.rc, 0, r.describe())
        leftovers = [n for n in os.listdir(out) if n.startswith(".") and
                     n != ".syscope-outputs"]
        check_eq(leftovers, [], f"temporaries after signal {sig}")


# ---- corrupt input never crashes ----

def test_fuzzed_sessions_and_databases_never_crash():
    """The seeds: a sampling session, an instrumented one, a synthetic one with GPU records,
    and their rocpd databases; every mutation goes through reader, model, profiles, every
    sink and the summary (under ASan in the asan build)."""
    if not os.path.exists(FUZZ):
        raise Skip("test_fuzz_sessions not built")
    # 0.3 s of hot's CPU time: 300 samples, every record kind of a sampling session; each
    # of the 60 rounds reads the whole seed through every sink (under ASan, on a loaded
    # machine, a larger seed took this file past its time limit).
    sampled = syscope("sample", "-f", "1000", "--", fixture("hot"), "0.3")
    check_eq(sampled.rc, 0, sampled.describe())
    instrumented = syscope("run", "--", fixture("instrumented"))
    check_eq(instrumented.rc, 0, instrumented.describe())
    gpu = gen_session("--pid", 6104, "--threads", 2, "--regions", 5, "--samples", 20,
                      "--counters", 3, "--marks", 2, "--kernels", 4, "--copies", 2,
                      "--allocs", 1, "--graphs", 1, "--api-spans")
    r = syscope("convert", "-f", "rocpd", gpu)
    check_eq(r.rc, 0, r.describe())
    seeds = [sampled.session, instrumented.session, gpu]
    seeds += [glob.glob(os.path.join(x, "rocpd-*.db"))[0] for x in seeds]
    p = subprocess.run([FUZZ, "60", "0x5eed"] + seeds, capture_output=True, text=True,
                       timeout=1100)  # a hang guard; the file has 1200 s under ASan
    check_eq(p.returncode, 0, p.stdout + p.stderr[-3000:])
    check_eq(p.stdout.count(": 60 rounds"), 6, p.stdout)


def sample_offsets(path):
    data = read(path, "rb")
    return [off for off, _tid, rtype, _flags, _p in rawdump.records(data, offsets=True)
            if rtype == records.SAMPLE]


def test_flipped_flag_in_raw_file_reads_as_unknown_frames():
    """One flipped bit made a raw sample look like an imported (symbolic) stack, whose frame
    addresses were then used as indices: SIGSEGV in convert, summary and merge."""
    d = workdir()
    s = gen_session("--pid", 6105, "--samples", 10, workdir=d)
    raw = glob.glob(os.path.join(s, "raw", "*.sraw"))[0]
    offsets = sample_offsets(raw)
    check_eq(len(offsets), 10, "samples in the seed")
    with open(raw, "r+b") as f:
        f.seek(offsets[3] + 6)
        flags = struct.unpack("<H", f.read(2))[0]
        f.seek(offsets[3] + 6)
        f.write(struct.pack("<H", flags | SAMPLE_FLAGS_SYMBOLIC))
    r = syscope("convert", "-f", "text", s)
    check_eq(r.rc, 0, r.describe())
    text = read(os.path.join(s, "sampling_cpu_clock-6105.txt"))
    check("[unknown]" in text, text[:2000])
    check("gen_leaf" in text, "the undamaged samples keep their names")
    for verb in ("summary", "merge"):
        args = [verb, s] if verb == "summary" else [verb, "-o", os.path.join(d, "m"), s]
        r = syscope(*args)
        check(not crashed(r.rc), r.describe())


def test_damaged_database_is_an_error_never_a_crash():
    d = workdir()
    s = gen_session("--pid", 6106, "--regions", 20, "--samples", 40, workdir=d)
    r = syscope("convert", "-f", "rocpd", s)
    check_eq(r.rc, 0, r.describe())
    db = os.path.join(s, "rocpd-6106.db")
    seed = read(db, "rb")
    for i, at in enumerate(range(100, len(seed), max(1, len(seed) // 40))):
        damaged = os.path.join(d, "damaged-%d.db" % i)
        data = bytearray(seed)
        data[at] ^= 0x5a
        with open(damaged, "wb") as f:
            f.write(data)
        for verb in ("convert", "summary"):
            args = ["convert", "-f", "pftrace", "json", damaged] if verb == "convert" \
                else ["summary", damaged]
            r = syscope(*args)
            check(not crashed(r.rc), f"byte {at}: " + r.describe())
            check(r.rc in (0, 1), f"byte {at}: " + r.describe())


# ---- bad values get a clear error ----

def test_empty_numbers_are_refused():
    r = syscope("sample", "-f", "", "--", "true")
    check_eq(r.rc, 2, r.describe())
    check("-f '' is not valid (valid: a number > 0 and <= 100000 Hz)" in r.err,
          r.err)
    r = syscope("sample", "--", "true", env={"SYSCOPE_SAMPLING_FREQ": ""})
    check_eq(r.rc, 2, r.describe())
    check("SYSCOPE_SAMPLING_FREQ '' is not valid" in r.err, r.err)
    # A number that is unset by default may still be given empty ("unset").
    r = syscope("sample", "--export-config", env={"SYSCOPE_SAMPLING_DURATION": ""})
    check_eq(r.rc, 0, r.describe())


def test_sampling_tids_must_be_numbers():
    r = syscope("sample", "--sampling-tids=abc", "--", "true")
    check_eq(r.rc, 2, r.describe())
    check("--sampling-tids 'abc' is not valid (valid: numbers from 0 to 4095 and ranges" in
          r.err, r.err)
    for bad in ("1-", "4-2", "5000", "-3"):
        r = syscope("sample", "--sampling-tids=" + bad, "--export-config")
        check_eq(r.rc, 2, bad + "\n" + r.describe())
    r = syscope("sample", "--sampling-tids=0,2-4", "--export-config")
    check_eq(r.rc, 0, r.describe())
    check_eq(json.loads(r.out)["settings"]["SAMPLING_TIDS"], ["0", "2-4"], r.out)


def test_config_file_must_be_a_regular_file():
    d = workdir()
    fifo = os.path.join(d, "cfg.fifo")
    os.mkfifo(fifo)
    for path, kind in ((d, "a directory"), (fifo, "a FIFO"),
                       ("/dev/zero", "a character device")):
        # A FIFO or /dev/zero used to hang the launcher: the timeout would fail the test.
        r = syscope("sample", "--", "true", env={"SYSCOPE_CONFIG_FILE": path}, timeout=60)
        check_eq(r.rc, 2, r.describe())
        check(f"configuration file {path} is {kind}; give a regular file" in r.err, r.err)


def test_unreadable_inputs_say_permission_denied():
    if os.geteuid() == 0:
        raise Skip("root reads every file")
    d = workdir()
    s = gen_session("--pid", 6107, "--samples", 5, workdir=d)
    r = syscope("convert", "-f", "rocpd", s)
    check_eq(r.rc, 0, r.describe())
    db = os.path.join(s, "rocpd-6107.db")
    os.chmod(db, 0)
    r = syscope("convert", "-f", "pftrace", db)
    check_eq(r.rc, 1, r.describe())
    check("cannot read it: Permission denied" in r.err, r.err)
    check("not an SQLite database" not in r.err, r.err)
    cfg = os.path.join(d, "secret.cfg")
    write(cfg, "SAMPLING_FREQ = 10\n")
    os.chmod(cfg, 0)
    r = syscope("sample", "--", "true", env={"SYSCOPE_CONFIG_FILE": cfg})
    check_eq(r.rc, 2, r.describe())
    check("Permission denied" in r.err, r.err)


PROGRAM = """
import signal, sys, time
def stop(sig, frame):
    print("got", sig, flush=True)
    sys.exit(3)
signal.signal(signal.SIGINT, stop)
open(sys.argv[1], "w").close()
time.sleep(120)
print("not interrupted", flush=True)
"""


def test_sigint_to_a_background_launcher_reaches_the_program():
    """A shell's background job starts with SIGINT ignored; the launcher forwards it anyway,
    and the program, which installed its own handler, decides."""
    d = workdir()
    prog, ready = os.path.join(d, "prog.py"), os.path.join(d, "ready")
    write(prog, PROGRAM)
    script = (f'"{harness.SYSCOPE}" sample -o "{d}/out" -- "{sys.executable}" "{prog}" '
              f'"{ready}" & pid=$!; while [ ! -e "{ready}" ]; do sleep 0.05; done; '
              'kill -INT $pid; wait $pid; echo "rc=$?"')
    p = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=200)
    check("got 2" in p.stdout, p.stdout + p.stderr[-2000:])
    check("rc=3" in p.stdout, p.stdout + p.stderr[-2000:])


def test_static_program_said_once():
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise Skip("no C compiler")
    d = workdir()
    src, exe = os.path.join(d, "st.c"), os.path.join(d, "st")
    write(src, "#include <stdio.h>\nint main(void) { puts(\"static\"); return 4; }\n")
    if subprocess.run([cc, "-static", "-o", exe, src], capture_output=True).returncode:
        raise Skip("no static C library")
    r = syscope("sample", "--", exe)
    check_eq(r.rc, 4, "the program's status\n" + r.describe())
    check_eq(r.out, "static\n", "the program ran")
    check_eq(r.err.count("statically linked"), 1, r.err)
    check("nothing of it is recorded" in r.err, r.err)
    for misleading in ("did the program start", "holds no recorded data", "retries"):
        check(misleading not in r.err, r.err)


if __name__ == "__main__":
    harness.main(globals())
