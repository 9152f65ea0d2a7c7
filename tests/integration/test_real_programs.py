"""Defects found by running syscope on real programs nobody here wrote (Debian's gzip, xz,
sqlite3...), each checked here on the program that showed it or on a fixture that does
what it does:

  - a program that handles Ctrl-C itself, cleans up, puts the default action back and
    raises the signal again (gzip, xz, sort; bash, which puts the default back twice): its
    end is recorded as the signal, with its last records, as for a program that never
    handled it (src/runtime/signals.c);
  - a process killed while it exits (a multiprocessing pool's SIGTERM to a worker that is
    already leaving) is recorded as killed, not as exited nor as still running
    (src/runtime/lifecycle.c);
  - `syscope summary` of a session sampled on wall-clock time (--sampling-realtime) gives
    its top functions by wall time, as the sampling_wall_clock profile does, where it gave
    none (src/cmd/summary.c);
  - `syscope causal` takes SYSCOPE_SAMPLING_FREQ from the environment, as every verb does,
    instead of its own 1 kHz (src/cmd/causal.c);
  - a misspelt placeholder in -o (%rnak%) is refused, naming the valid ones, instead of
    becoming part of the folder's name (src/cmd/launch.c);
  - each verb's --help gives the defaults that verb runs with: instrument and python sample
    only with -S, causal samples at 1 kHz, merge and convert write where they do
    (src/cmd/help.c);
  - a stripped library's functions (xz's liblzma) are named by where each function starts
    (.eh_frame_hdr's table), not by where the unwind rules of the sampled instruction start,
    which split one function into as many names as it has pushes and pops
    (src/model/symbols.c);
  - a process that runs a script and then execs a program (bash's exec, pyenv's shims)
    has each image's samples weighed within that image: the first sample after the exec
    covered the exec, the loader and any time unsampled since the script's last sample, and
    the script's first sample weighed 0, as its files were read in name order, 42.1.sraw
    (after the exec) before 42.sraw (src/model/model.c);
  - the frames of syscope's other libraries (libsyscope-pthread.so's lock wrappers with
    their helpers, libsyscope-mpi.so's MPI_Init beside Open MPI's) are left out of
    profiles as libsyscope.so's are: a wrapper stays only as the leaf, named after the
    call it wraps (src/model/model.c);
  - `syscope causal -n 3 --no-time-output -o DIR` runs its three runs into DIR, DIR-2 and
    DIR-3 (the causal profile in the last), where the second run died refusing to reuse
    DIR, leaving its scope file in /tmp (src/cmd/causal.c);
  - `syscope convert` of a session whose session.json is damaged says so, and that the
    run's settings (here its --output-format csv) are not followed, where it said nothing
    (src/cmd/session_settings.c);
  - -o with a %env{NAME}% that is not one (unclosed, an empty or odd name) is refused
    instead of kept in the folder's name or read as the empty variable, and an unset
    variable is named in a warning, since every rank of a job would share its folder
    (src/cmd/output_path.c);
  - a script without "#!" is run by /bin/sh, as execvp (env, make, xargs) and shells run
    it, where syscope said "Exec format error" and exited 126 (src/cmd/launch.c);
  - a program whose handlers run on the signal stack (Go's runtime, which also runs its
    goroutines on stacks of a few KiB) has samples taken there too: on a goroutine's stack
    the handler overran into the memory below (a Go program built with cgo died at once,
    "unexpected return pc for runtime.sigpanic"), and Go's handler, which ours calls for
    the program's own signals, threw on finding itself off its signal stack
    (src/runtime/signals.c);
  - a program whose .debug_aranges lists only some of its units (a Go program built with
    cgo: only the C files' units) has the functions of the others named with their own
    file and line, where each was given the listed unit before it and its last line (every
    Go function at gcc_mmap.c:37), or no line (src/model/symbols.c);
  - a program that needs no shared library and calls the kernel itself (a Go program built
    without cgo as a PIE, as distributions build them) runs unprofiled, with a warning, as
    a statically linked one does: preloaded, the handler it installed on the sampler's
    signal with its own rt_sigaction ended it at the first sample ("SIGSTKFLT: stack
    fault", exit 2) (src/runtime/lifecycle.c, src/cmd/launch.c);
  - code a JIT made (node, java) is named from the perf map the JIT writes for its process
    (node --perf-basic-prof, java -XX:+DumpPerfMapAtExit), where every sample of it was one
    "[unknown]" (80-90% of a Java or Node program's time) (src/model/perf_map.c).
"""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import time

import harness
from harness import Skip, check, check_eq, descendant, fixture, syscope

import rawdump
import records


def need_tool(name):
    """A Debian tool these tests run (Makefile's TEST_PACKAGES): missing fails in CI."""
    path = shutil.which(name)
    if not path:
        if os.environ.get("CI") == "true":
            raise AssertionError(f"{name} is missing: scripts/install-deps installs it in CI")
        raise Skip(f"{name} is not installed")
    return path


def ended_by_signal(r, pid, sig):
    """The summary, the metadata and the exit status all say the process died of `sig`."""
    name = os.path.basename(r.metadata(pid)["images"][-1]["executable"])  # after any exec
    check(f"process {pid} ({name}) was killed by signal {sig} ({signal.strsignal(sig)})"
          in r.err, f"end of {pid}\n{r.describe()}")
    check("stopped recording without exiting normally" not in r.err, r.describe())
    check_eq(r.metadata(pid)["exit"], {"reason": "signal", "status": sig}, "metadata exit")


def test_reraised_signal_after_cleanup_is_the_end():
    prog = fixture("cleanup_reraise")
    plain = subprocess.run([prog, "0.5"], capture_output=True, text=True)
    check_eq(plain.returncode, -signal.SIGTERM, f"plain run\n{plain.stdout}{plain.stderr}")
    r = syscope("sample", "--", prog, "0.5")
    check_eq(r.rc, 128 + signal.SIGTERM, r.describe())
    # The program sees its own handler, then the default it put back, as without syscope.
    check_eq(r.out, plain.stdout, "the program's output")
    check_eq(r.out, "installed: ours\ncaught: 15\nrestored: default\n", "the program's view")
    ended_by_signal(r, r.main_pid(), signal.SIGTERM)
    p = r.profile()
    check(p.self_samples("work_before_signal") > 0.5 * p.total,
          f"work_before_signal is hot: {p.function_names()[:5]}")


def test_signal_while_exiting_is_the_end():
    prog = fixture("late_signal")
    plain = subprocess.run([prog, "0.3"], capture_output=True, text=True)
    check_eq((plain.returncode, plain.stdout), (-signal.SIGTERM, "main returns\n"), "plain")
    r = syscope("sample", "--", prog, "0.3")
    check_eq(r.rc, 128 + signal.SIGTERM, r.describe())
    check_eq(r.out, plain.stdout, "the program's output")
    ended_by_signal(r, r.main_pid(), signal.SIGTERM)
    p = r.profile()
    check(p.self_samples("work_then_exit") > 0.5 * p.total,
          f"work_then_exit is hot: {p.function_names()[:5]}")


def test_pool_workers_terminated_are_recorded():
    # Pool.__exit__ terminates its workers: each one is either killed by SIGTERM or exits
    # on its own first, and the records say which, never that it was still running.
    python = need_tool("python3")
    script = ("import multiprocessing as mp\n"
              "def work(n):\n    return sum(i * i for i in range(n))\n"
              "if __name__ == '__main__':\n"
              "    with mp.get_context('fork').Pool(2) as p:\n"
              "        print(sum(p.map(work, [20000] * 8)))\n")
    expected = str(8 * sum(i * i for i in range(20000))) + "\n"
    for _ in range(4):
        r = syscope("sample", "--", python, "-c", script)
        check_eq((r.rc, r.out), (0, expected), r.describe())
        check("stopped recording without exiting normally" not in r.err, r.describe())
        workers = [pid for pid in r.pids() if pid != r.main_pid()]
        check_eq(len(workers), 2, f"two workers: {r.pids()}\n{r.err}")
        for pid in workers:
            end = r.metadata(pid)["exit"]
            check(end in ({"reason": "signal", "status": signal.SIGTERM},
                          {"reason": "_exit", "status": 0}), f"worker {pid} ended {end}")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ctrl_c(program, busy):
    """Run `syscope sample -- program...` in a session of its own, with stdin from
    /dev/zero, and send SIGINT to its process group, as Ctrl-C does, once the process
    `busy` has run its own code for a while. Returns the Result and the pids
    {name: pid} of `busy` and of the program's first process."""
    work = tempfile.mkdtemp(prefix="syscope-it-")
    harness._workdirs.append(work)
    out = os.path.join(work, "out")
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.Popen(
            [harness.SYSCOPE, "sample", "--no-time-output", "-o", out, "--"] + program,
            stdin=zero, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            cwd=work, start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        # Its handlers are installed first thing: after 0.3 s of CPU time they are there.
        deadline = time.monotonic() + 120
        pid = None
        while time.monotonic() < deadline:
            pid = pid or descendant(proc.pid, busy)
            if pid and cpu_seconds(pid) >= 0.3:
                break
            time.sleep(0.05)
        check(pid, f"{busy} started under syscope")
        first = descendant(proc.pid, os.path.basename(program[0]))
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    result = harness.Result(proc, work, out, 0)
    result.err = err
    return result, pid, first


def test_ctrl_c_of_gzip():
    # gzip catches SIGINT to remove its output file, then dies of it by raising it again.
    gzip = need_tool("gzip")
    r, pid, _ = ctrl_c([gzip, "-c"], "gzip")
    check_eq(r.rc, 128 + signal.SIGINT, r.describe())
    ended_by_signal(r, pid, signal.SIGINT)
    p = r.profile(pid=pid)
    modules = {f["module"] for f in p.meta["functions"] if f["self_samples"]}
    check("gzip" in modules, f"gzip's own code sampled: {sorted(modules)}")


def test_ctrl_c_of_a_shell_script():
    # bash waits for gzip; on Ctrl-C it puts back SIGINT's default action twice over, then
    # kills itself with it. Its own recording was lost whole: nothing of it had reached
    # the file yet, and the hidden recorder had stepped aside at the second SIG_DFL.
    bash, gzip = need_tool("bash"), need_tool("gzip")
    r, pid, shell = ctrl_c([bash, "-c", f"{gzip} -c > /dev/null; echo after"], "gzip")
    check_eq(r.rc, 128 + signal.SIGINT, r.describe())
    check(shell, "bash ran")
    ended_by_signal(r, shell, signal.SIGINT)
    ended_by_signal(r, pid, signal.SIGINT)
    images = [os.path.basename(i["executable"] or "?") for i in r.metadata(shell)["images"]]
    check_eq(images, ["bash"], "bash's recording")
    check_eq(len(r.metadata(shell)["threads"]), 1, "bash's thread")


def test_summary_of_wall_clock_session():
    r = syscope("sample", "--sampling-realtime", "--", fixture("sleeper"))
    check_eq(r.rc, 0, r.describe())
    s = syscope("summary", "--format", "json", "--top", "5", r.session)
    check_eq(s.rc, 0, s.describe())
    doc = json.loads(s.out)
    p = r.profile("sampling_wall_clock")
    # By name and module: a sample can land in syscope's own wrapper of a blocking call
    # (poll in libsyscope.so beside libc's), and both tables keep the two apart.
    own = {(f["name"], f["module"] or ""): f for f in p.meta["functions"] if f["self_samples"]}
    rows = doc["wall_functions"]
    check(rows and len(rows) <= 5, f"wall_functions: {rows}")
    # The same samples and about the same wall time as the profile, function by function
    # (a thread's first sample is weighed from the thread's start: the database does not
    # say when its sampler started; on a loaded machine that start can come 50 ms and more
    # after the thread's, so the gap, from the raw records, is allowed beside the 0.05 s).
    with open(r.raw_files()[0], "rb") as raw:
        stamps = {rtype: struct.unpack_from("<Q", payload)[0]
                  for _tid, rtype, _flags, payload in reversed(list(rawdump.records(raw.read())))
                  if rtype in (records.THREAD_BEGIN, records.SAMPLER)}
    gap = (stamps[records.SAMPLER] - stamps[records.THREAD_BEGIN]) * 1e-9
    check(0 <= gap < 5, f"the sampler started {gap:.3f} s after the thread")
    for row in rows:
        f = own.get((row["function"], row["module"] or ""))
        check(f and f["self_samples"] == row["samples"] and
              abs(f["exclusive"] - row["self_s"]) <= 0.05 + gap,
              f"row {row}: profile {f} (sampler {gap:.3f} s after the thread's start)")
    check_eq(rows[0]["function"], max(own.values(), key=lambda f: f["exclusive"])["name"],
             "the top function")
    check_eq(doc["functions"], [], "no CPU-time samples")
    top = doc["wall_functions_total"][0]
    check_eq((top["samples"], top["total_percent"]), (p.total, 100.0), f"top {top}")


def test_causal_sampling_rate_from_the_environment():
    perl = need_tool("perl")
    loop = "my $s = 0; for my $i (1..400000) { $s += $i % 7 } print \"$s\\n\";"
    args = ["causal", "-e", "-n", "1", "-S", "0", "-F", "^Perl_pp_", "--binary", "perl",
            "--", perl, "-e", loop]
    for env, hz in (({}, 1000), ({"SYSCOPE_SAMPLING_FREQ": "200"}, 200)):
        r = syscope(*args, env=env)
        check_eq((r.rc, r.out), (0, "1200003\n"), r.describe())
        check(re.search(rf"CPU-time samples from 1 thread \({hz} Hz asked", r.err),
              f"{env}: {hz} Hz\n{r.err}")


def test_causal_runs_without_time_folders():
    perl = need_tool("perl")
    loop = "my $s = 0; for my $i (1..300000) { $s += $i % 7 } print \"$s\\n\";"
    r = syscope("causal", "-e", "-n", "3", "-S", "0,50", "-F", "^Perl_pp_", "--binary", "perl",
                "--no-time-output", "-o", "out/", "--", perl, "-e", loop)
    check_eq((r.rc, r.out), (0, "899998\n" * 3), r.describe())
    check_eq(sorted(os.listdir(r.workdir)), ["out", "out-2", "out-3"], "one folder per run")
    for d in ("out", "out-2", "out-3"):
        check(os.path.exists(os.path.join(r.workdir, d, "session.json")), f"{d} is a session")
    check(os.path.exists(os.path.join(r.workdir, "out-3", "profile.coz")), "the causal profile")
    check(f"in {os.path.realpath(r.workdir)}/out-3:" in r.err, r.err)


def test_convert_says_a_damaged_session_json_is_not_followed():
    sqlite = need_tool("sqlite3")
    query = ("with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000) "
             "select sum(x) from c;")
    r = syscope("sample", "--convert", "later", "--output-format", "csv", "--", sqlite,
                ":memory:", query)
    check_eq((r.rc, r.out), (0, "200010000\n"), r.describe())
    session = re.search(r"syscope convert (\S+)", r.err)
    check(session, r.err)
    info = os.path.join(session.group(1), "session.json")
    with open(info) as f:
        text = f.read()
    with open(info, "w") as f:
        f.write(text[: len(text) // 2])
    c = subprocess.run([harness.SYSCOPE, "convert", session.group(1)], capture_output=True,
                       text=True)
    check_eq(c.returncode, 0, c.stderr)
    check(f"warning: convert: {info} cannot be read (" in c.stderr and
          "the run's settings (output formats, filters, labels) are not known" in c.stderr,
          c.stderr)


def test_unknown_output_placeholder_refused():
    r = syscope("sample", "-o", "run-%rnak%-of-%size%", "--", "true")
    check_eq(r.rc, 2, r.describe())
    check("-o run-%rnak%-of-%size%: unknown placeholder '%rnak%' (valid: %tag%, %pid%, "
          "%host%, %launch_time%, %rank%, %size%, %env{NAME}%)" in r.err, r.err)
    check_eq(os.listdir(r.workdir), [], "no folder made")
    # A % that starts no placeholder is kept as it is; known ones are expanded.
    r = syscope("sample", "--no-time-output", "-o", "50%-%tag%-%rank%-of-%size%", "--", "true")
    check_eq(r.rc, 0, r.describe())
    check_eq(os.listdir(r.workdir), ["50%-true-0-of-1"], "the folder's name")


def test_script_without_interpreter_line_runs_in_the_shell():
    work = tempfile.mkdtemp(prefix="syscope-it-")
    harness._workdirs.append(work)
    script = os.path.join(work, "no-interpreter-line")
    with open(script, "w") as f:
        f.write('echo "args: $# $1 $2"\nexit 5\n')
    os.chmod(script, 0o755)
    plain = subprocess.run(["env", script, "a b", "c"], capture_output=True, text=True)
    check_eq((plain.returncode, plain.stdout), (5, "args: 2 a b c\n"), "the plain run")
    r = syscope("sample", "--", script, "a b", "c")
    check_eq((r.rc, r.out), (plain.returncode, plain.stdout), r.describe())
    check("Exec format error" not in r.err, r.err)
    images = r.metadata(r.main_pid())["images"]
    check_eq(os.path.realpath(images[0]["executable"]), os.path.realpath("/bin/sh"),
             "the shell ran it, profiled")


def test_env_placeholder_checked():
    for bad, shown in (("run-%env{RANK", "'%env{RANK'"), ("run-%env{}%", "'%env{}'"),
                       ("run-%env{A-B}%", "'%env{A-'"), ("run-%env{1X}%", "'%env{1X}'")):
        r = syscope("sample", "--no-time-output", "-o", bad, "--", "true")
        check_eq(r.rc, 2, r.describe())
        check(f"-o {bad}: {shown} is not a variable's placeholder (valid: %env{{NAME}}%, NAME "
              "made of letters, digits and '_')" in r.err, r.err)
        check_eq(os.listdir(r.workdir), [], "no folder made")
    r = syscope("sample", "--no-time-output", "-o", "run-%env{SYSCOPE_IT_RANK}%-%env{NOT_SET_X}%",
                "--", "true", env={"SYSCOPE_IT_RANK": "7"})
    check_eq(r.rc, 0, r.describe())
    check("warning: -o run-%env{SYSCOPE_IT_RANK}%-%env{NOT_SET_X}%: %env{NOT_SET_X}%: NOT_SET_X "
          "is not set, so it expands to nothing" in r.err, r.err)
    check_eq(os.listdir(r.workdir), ["run-7-"], "the folder's name")


def test_convert_and_merge_expand_output_placeholders():
    r = syscope("sample", "--no-time-output", "-o", "s-%tag%", "--", fixture("hot"))
    check_eq(r.rc, 0, r.describe())
    session = os.path.join(r.workdir, "s-hot")
    out = subprocess.run([harness.SYSCOPE, "convert", "-f", "csv", "-o", "c-%tag%-%size%",
                          session + "/"], cwd=r.workdir, capture_output=True, text=True)
    check_eq(out.returncode, 0, out.stderr)
    check(os.path.isdir(os.path.join(r.workdir, "c-s-hot-1")), os.listdir(r.workdir))
    check("//" not in out.stderr, f"the folder named once, without a doubled slash: {out.stderr}")
    merged = subprocess.run([harness.SYSCOPE, "merge", "-o", "m-%tag%", session + "/"],
                            cwd=r.workdir, capture_output=True, text=True)
    check_eq(merged.returncode, 0, merged.stderr)
    check(os.path.exists(os.path.join(r.workdir, "m-s-hot", "rocpd-merged.db")),
          os.listdir(r.workdir))
    bad = subprocess.run([harness.SYSCOPE, "convert", "-o", "c-%rnak%", session],
                         cwd=r.workdir, capture_output=True, text=True)
    check_eq(bad.returncode, 2, bad.stderr)
    check("unknown placeholder '%rnak%'" in bad.stderr, bad.stderr)


def fde_starts(path):
    """The start of every function that `path`'s unwind table (.eh_frame) describes."""
    out = subprocess.run([need_tool("readelf"), "--debug-dump=frames", path],
                         capture_output=True, text=True).stdout
    return {int(m.group(1), 16) for m in re.finditer(r" FDE cie=\S+ pc=([0-9a-f]+)\.\.", out)}


def loaded_library(program, soname):
    """The file the loader maps for `soname` in `program` (ldd), or None."""
    out = subprocess.run(["ldd", program], capture_output=True, text=True).stdout
    m = re.search(rf"^\s*{re.escape(soname)} => (\S+)", out, re.M)
    return os.path.realpath(m.group(1)) if m else None


def test_stripped_library_functions_named_by_their_start():
    xz = need_tool("xz")
    lzma = loaded_library(xz, "liblzma.so.5")
    if not lzma:
        raise Skip(f"{xz} does not load liblzma.so.5")
    syms = subprocess.run(["nm", lzma], capture_output=True, text=True)
    if syms.returncode == 0 and syms.stdout.strip():
        raise Skip(f"{lzma} has a symbol table: its functions have names")
    starts = fde_starts(lzma)
    check(len(starts) > 50, f"{lzma}'s unwind table: {len(starts)} functions")
    work = tempfile.mkdtemp(prefix="syscope-it-")
    harness._workdirs.append(work)
    data = "".join(f"{i * 7919 % 100003} {i}\n" for i in range(150000)).encode()
    for name in ("plain", "profiled"):
        with open(os.path.join(work, name), "wb") as f:
            f.write(data)
    subprocess.run([xz, "-T1", "-6", os.path.join(work, "plain")], check=True)
    r = syscope("sample", "-f", "1000", "--", xz, "-T1", "-6", os.path.join(work, "profiled"))
    check_eq(r.rc, 0, r.describe())
    with open(os.path.join(work, "plain.xz"), "rb") as a, \
            open(os.path.join(work, "profiled.xz"), "rb") as b:
        check(a.read() == b.read(), "xz wrote the same file as without syscope")
    p = r.profile()
    named = [(f["name"], f["self_samples"]) for f in p.meta["functions"]
             if f["module"] == "liblzma.so.5" and f["self_samples"]]
    check(sum(n for _, n in named) > 0.5 * p.total, f"liblzma is hot: {named[:5]} of {p.total}")
    # Its exported functions (lzma_code...) have names; the others are module+offset.
    unnamed = [name for name, _ in named if re.fullmatch(r"liblzma\.so\.5\+0x[0-9a-f]+", name)]
    check(unnamed, f"functions without a symbol sampled: {named[:5]}")
    for name in unnamed:
        check(int(name.split("+")[1], 16) in starts, f"{name} is where a function starts")


def thread_cpu_span(raw_path):
    """(CPU time at THREAD_BEGIN, at THREAD_END) of the main thread of one raw file, in s."""
    import rawdump
    with open(raw_path, "rb") as f:
        data = f.read()
    pid = rawdump.parse_header(data)["pid"]
    cpu = {}
    for tid, typ, _flags, payload in rawdump.records(data):
        name = rawdump.REC_NAMES.get(typ)
        if tid == pid and name in ("THREAD_BEGIN", "THREAD_END"):
            cpu[name] = struct.unpack_from("<QQ", payload)[1] * 1e-9
    return cpu.get("THREAD_BEGIN"), cpu.get("THREAD_END")


def test_samples_weighed_within_each_image_across_exec():
    bash, perl = need_tool("bash"), need_tool("perl")
    # Both images do a fixed amount of work, so both are sampled however loaded the machine.
    loop = "my $s = 0; for my $i (1..400000) { $s += $i % 7 } print \"$s\\n\";"
    script = f"i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done; exec {perl} -e '{loop}'"
    r = syscope("sample", "-f", "1000", "--", bash, "-c", script)
    check_eq((r.rc, r.out), (0, "1200003\n"), r.describe())
    pid = r.main_pid()
    roots = {}
    for root in r.profile().roots():
        for c in root["children"]:
            module = c["node"]["prefix"].split("[", 1)[1].split("/", 1)[0]
            roots[(c["node"]["name"], module)] = c["node"]["inclusive"]["stats"]
    script_s, perl_s = roots.get(("_start", "bash")), roots.get(("_start", "perl"))
    check(script_s and perl_s, f"samples of both images: {sorted(roots)}")
    check(script_s["min"] > 0, f"bash's first sample weighs its CPU time: {script_s}")
    # perl's samples stand for perl's CPU time only, none of it from before the exec.
    begin, end = thread_cpu_span(os.path.join(r.session, "raw", f"{pid}.1.sraw"))
    check(begin is not None and end is not None, "perl's thread begin and end")
    check(perl_s["sum"] <= end - begin + 1e-6,
          f"perl's samples weigh {perl_s['sum']:.6f} s, more than its own "
          f"{end - begin:.6f} s of CPU time")


def test_plugin_wrapper_frames_left_out():
    r = syscope("sample", "-f", "1000", "--parallel=pthread", "--", fixture("lock_churn"), "0.4")
    check_eq((r.rc, r.out), (0, "lock_churn: done\n"), r.describe())
    p = r.profile()
    in_locks = p.samples("pthread_mutex_lock") + p.samples("pthread_mutex_unlock")
    # Enough samples in the wrapped calls for the checks below to mean something (their
    # share of the total moves with the machine's load: 26-60% seen).
    check(in_locks >= 50, f"the lock calls are hot: {in_locks} of {p.total}")
    ours = [f for f in p.meta["functions"] if f["module"].startswith("libsyscope")]
    for f in ours:
        check(f["samples"] == f["self_samples"] and f["name"].startswith("pthread_"),
              f"only a wrapper, only as the leaf, of syscope's: {f}")
    with open(r.path(f"sampling_cpu_clock-{r.main_pid()}.folded")) as f:
        for line in f:
            frames = line.rsplit(" ", 1)[0].split(";")
            check(frames.count("pthread_mutex_lock") + frames.count("pthread_mutex_unlock")
                  <= 1, f"a lock call once per stack: {line}")


def help_line(verb, flag):
    r = syscope(verb, "--help")
    check_eq(r.rc, 0, r.describe())
    lines = [line for line in r.out.splitlines() if f"{flag} " in line or f"{flag}=" in line]
    check_eq(len(lines), 1, f"{flag} in {verb} --help\n{r.out}")
    return lines[0]


def test_help_gives_each_verbs_defaults():
    for verb in ("instrument", "python"):
        line = help_line(verb, "--sample")
        check("on by default" not in line, f"{verb} samples only with -S: {line}")
    check("(on by default; --no-sample)" in help_line("run", "--sample"), "run samples")
    check("(default: 1000)" in help_line("causal", "--sampling-freq"), "causal's 1 kHz")
    check("(default: 300)" in help_line("sample", "--sampling-freq"), "sample's 300 Hz")
    check("(default: syscope-merged)" in help_line("merge", "--output"), "merge's folder")
    check("(default: rocpd pftrace)" in help_line("merge", "--output-format"), "merge's formats")
    check("(default: the session's folder, or the database's)" in help_line("convert", "--output"),
          "convert writes next to its input")


def test_samples_on_the_signal_stack_where_the_program_asks():
    # small_stacks does what Go's runtime does: SA_ONSTACK handlers on every signal, its work
    # on a 4 KiB stack above an inaccessible page. It ended with SIGSEGV, or with its
    # handler run off the signal stack.
    r = syscope("sample", "--", fixture("small_stacks"), "0.5")
    check_eq(r.rc, 0, r.describe())
    check("small_stacks: received 10 off the signal stack 0," in r.out, r.describe())
    p = r.profile()
    check(p.total > 20 and p.self_samples("small_stack_work") > 0.8 * p.total,
          f"the work on the small stack is sampled: {p.total} samples, {p.function_names()[:5]}")
    check("nothing lost" in r.err, r.err)


def test_units_left_out_of_debug_aranges_keep_their_lines():
    r = syscope("sample", "--", fixture("partial_aranges"), "0.5")
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    f = p.function("unlisted_work")
    check(f is not None and f["self_samples"] > 0.8 * p.total and p.total > 20,
          f"unlisted_work sampled: {p.total} samples, {p.function_names()[:5]}")
    hot = harness.source_line("partial_aranges.c", "/* the hot line */")
    check_eq((os.path.basename(f["file"]), f["line"] in (hot - 1, hot)), ("partial_aranges.c", True),
             f"unlisted_work's file and line ({hot} expected): {f}")
    main = p.function("main")
    check(main is not None and os.path.basename(main["file"]) == "partial_aranges.c",
          f"main, below the listed unit, has its file: {main}")


def test_program_calling_the_kernel_itself_is_left_alone():
    # raw_syscalls does what Go's runtime does without cgo: its own rt_sigaction on
    # SIGSTKFLT, whose handler ends it with status 3.
    prog = fixture("raw_syscalls")
    r = syscope("sample", "--", prog)
    check_eq((r.rc, r.out), (0, "raw_syscalls: done\n"), r.describe())
    check(f"{prog} needs no shared library" in r.err and "runs unprofiled" in r.err, r.err)
    # Started by a shell, it is left alone by the runtime itself; the shell is profiled.
    r = syscope("sample", "--", "/bin/sh", "-c", f"{prog}; exit 7")
    check_eq((r.rc, r.out), (7, "raw_syscalls: done\n"), r.describe())
    check("LOST" not in r.err, r.err)


def test_jit_code_named_from_the_perf_map():
    r = syscope("sample", "--", fixture("jit_code"), "0.5")
    try:
        check_eq((r.rc, r.out), (0, "jit_code: done\n"), r.describe())
        p = r.profile()
        f = p.function("jit_hot_loop")
        check(f is not None and f["module"] == "[jit]" and f["self_samples"] > 0.8 * p.total
              and p.total > 20, f"jit_hot_loop named: {p.total} samples, "
              f"{p.function_names()[:5]}, {f}")
        check_eq(p.self_samples("[unknown]"), 0, "no leaf left unnamed")
    finally:
        for pid in r.pids():
            try:
                os.unlink(f"/tmp/perf-{pid}.map")
            except FileNotFoundError:
                pass


if __name__ == "__main__":
    harness.main(globals())
