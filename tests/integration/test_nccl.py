"""NCCL tracing (--parallel=nccl) without a GPU: tests/programs/nccl_driver.c plays NCCL 2.28's
part towards libsyscope-nccl.so (init, the calls' events in NCCL's order, kernel channels and
proxy ops from a proxy thread) for a known workload: 3 AllReduce of 1 Mi float32 on two
kernel channels of exactly 1 ms GPU time, 2 Broadcast of 64 Ki float64 from root 2, one user
group with a Send of 1000 int32 to rank 3 and a Recv from rank 0, on rank 1 of 4 of
communicator 0x1234abcd5678ef00. The call wrappers (for what NCCL's profiler does not report)
with nccl_calls.c against a stand-in libnccl.so.2 (fake_nccl.c). Also --follow-exclude, with
tests/programs/spawn_tools.c."""
import json
import os
import sqlite3
import subprocess
import tempfile

import harness
from harness import BUILD, SYSCOPE, check, check_eq, fixture, syscope

import pftrace
from rocpd_checks import rows

PLUGIN = os.path.join(BUILD, "lib", "syscope", "libsyscope-nccl.so")
COMM = "0x1234abcd5678ef00"
ALLREDUCE_BYTES = 4 << 20
BROADCAST_BYTES = 8 << 16


def run_driver(*flags, version="v5", env=None):
    r = syscope("sample", "--output-format", "rocpd", *flags, "--", fixture("nccl_driver"),
                version, env=env)
    check_eq(r.rc, 0, r.describe())
    check("done" in r.out, r.describe())
    return r


def database(r):
    return sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))


# syscope's categories as rocpd files name them (src/store/rocpd_category.c).
ROCPD_CATEGORY = {"nccl": "NCCL_API"}


def regions(db, category):
    """[(name, tid, start, end, {arg: value})] of the regions of `category`, by start."""
    found = []
    for rid, name, tid, start, end in rows(
            db, "SELECT id, name, tid, start, end FROM regions WHERE category = ? "
                "ORDER BY start, id", ROCPD_CATEGORY.get(category, category)):
        args = dict(rows(db, "SELECT name, value FROM region_args WHERE id = ?", rid))
        found.append((name, tid, start, end, args))
    return found


def names(found):
    counts = {}
    for name, *_ in found:
        counts[name] = counts.get(name, 0) + 1
    return counts


def summary(r):
    s = subprocess.run([SYSCOPE, "summary", "--format", "json", "-n", "50",
                        r.path(f"rocpd-{r.main_pid()}.db")], capture_output=True, text=True,
                       timeout=300)
    check_eq(s.returncode, 0, s.stderr)
    return {row["kind"]: row for row in json.loads(s.stdout)["nccl_collectives"]}


def test_calls_are_regions_with_bytes_and_communicator():
    r = run_driver("--parallel=nccl")
    check_eq(r.metadata()["environment"].get("NCCL_PROFILER_PLUGIN"), PLUGIN,
             "the launcher names our plugin")
    db = database(r)
    calls = regions(db, "nccl")
    check_eq(names(calls), {"ncclAllReduce": 3, "ncclBroadcast": 2, "ncclSend": 1,
                            "ncclRecv": 1, "ncclGroup": 1},
             "each call once; only the user's group (NCCL's implicit ones are left out)")
    main_tid = calls[0][1]
    check_eq({c[1] for c in calls}, {main_tid}, "calls on the calling thread")
    for name, _, start, end, a in calls:
        check(end >= start, f"{name} ends after it starts")
        if name == "ncclGroup":
            check_eq(a["depth"], "2", "the user's group")
            continue
        check_eq((a["comm"], a["rank"], a["nranks"], a["stream"]), (COMM, "1", "4", "0x5000"),
                 f"{name}: communicator, rank, ranks, stream")
    allreduce = [c[4] for c in calls if c[0] == "ncclAllReduce"]
    check_eq({(a["kind"], a["count"], a["bytes"], a["datatype"]) for a in allreduce},
             {("AllReduce", "1048576", str(ALLREDUCE_BYTES), "ncclFloat32")}, "AllReduce")
    check("root" not in allreduce[0], "no root for AllReduce")
    bcast = [c[4] for c in calls if c[0] == "ncclBroadcast"]
    check_eq({(a["count"], a["bytes"], a["datatype"], a["root"]) for a in bcast},
             {("65536", str(BROADCAST_BYTES), "ncclFloat64", "2")}, "Broadcast from root 2")
    send = [c[4] for c in calls if c[0] == "ncclSend"][0]
    check_eq((send["count"], send["bytes"], send["datatype"]), ("1000", "4000", "ncclInt32"),
             "Send")
    group = [c for c in calls if c[0] == "ncclGroup"][0]
    inside = [c[0] for c in calls if c[0] != "ncclGroup" and group[2] <= c[2] <= group[3]]
    check_eq(sorted(inside), ["ncclRecv", "ncclSend"], "the group holds its send and receive")


def test_tasks_kernel_channels_and_proxy_ops_join_their_calls():
    r = run_driver("--parallel=nccl")
    db = database(r)
    calls = {c[4]["id"]: c for c in regions(db, "nccl")}
    tasks = regions(db, "nccl_task")
    check_eq(names(tasks), {"AllReduce": 3, "Broadcast": 2, "Send": 1, "Recv": 1, "Group": 6,
                            "ncclKernelLaunch": 5}, "tasks as launched, groups, launches")
    allreduce = [t[4] for t in tasks if t[0] == "AllReduce"]
    check_eq([a["seq"] for a in allreduce], ["0", "1", "2"], "sequence numbers")
    check_eq({(a["algorithm"], a["protocol"], a["channels"], a["warps"], a["bytes"])
              for a in allreduce}, {("RING", "LL", "2", "16", str(ALLREDUCE_BYTES))},
             "algorithm, protocol, channels, warps")
    for name, _, _, _, a in tasks:
        if name in ("AllReduce", "Broadcast", "Send", "Recv"):
            parent = calls.get(a["parent"])
            check(parent is not None, f"{name} task {a} has its call as parent")
            check_eq(parent[0], "nccl" + name, f"{name} task's call")
    peers = {t[0]: t[4]["peer"] for t in tasks if t[0] in ("Send", "Recv")}
    check_eq(peers, {"Send": "3", "Recv": "0"}, "peers of the group's send and receive")

    task_ids = {a["id"]: name for name, _, _, _, a in tasks}
    kernels = regions(db, "nccl_kernel")
    check_eq(len(kernels), 6, "two kernel channels per AllReduce")
    check_eq(sorted(k[4]["gpu_ns"] for k in kernels), ["1000000"] * 3 + ["899900"] * 3,
             "each channel's GPU time")
    check_eq({task_ids.get(k[4]["parent"]) for k in kernels}, {"AllReduce"},
             "channels belong to the AllReduce tasks")
    proxy = regions(db, "nccl_proxy")
    check_eq(names(proxy), {"ProxyOp Send": 3}, "one proxy op per AllReduce")
    check_eq({(p[4]["peer"], p[4]["steps"], p[4]["chunk_size"], p[4]["channel"]) for p in proxy},
             {("2", "8", "524288", "0")}, "proxy op arguments")
    main_tid = tasks[0][1]
    check_eq({k[1] for k in kernels} | {p[1] for p in proxy} - {main_tid},
             {kernels[0][1]}, "kernel channels and proxy ops on the proxy thread")
    check(kernels[0][1] != main_tid, "the proxy thread is not the caller's")


def test_perfetto_slices_carry_the_arguments():
    r = run_driver("--parallel=nccl", "--output-format", "pftrace")
    with open(r.path(f"perfetto-trace-{r.main_pid()}.pftrace"), "rb") as f:
        t = pftrace.Trace(f.read())
    check_eq(t.errors, [], "trace problems")
    calls = [s for s in t.slices if s[2] == "nccl" and s[1] == "ncclAllReduce"]
    check_eq(len(calls), 3, "three AllReduce slices")
    check_eq({(str(s[5].get("bytes")), s[5].get("datatype"), s[5].get("comm")) for s in calls},
             {(str(ALLREDUCE_BYTES), "ncclFloat32", COMM)}, "their arguments")
    kernels = [s for s in t.slices if s[2] == "nccl_kernel"]
    check_eq(len({t.thread_of(s[0]) for s in kernels}), 1, "channels on one thread")
    check(t.thread_of(kernels[0][0]) != t.thread_of(calls[0][0]), "the proxy thread's own")


def test_summary_gives_bytes_time_and_bus_bandwidth():
    s = summary(run_driver("--parallel=nccl"))
    check_eq(set(s), {"AllReduce", "Broadcast", "Send", "Recv"}, "kinds")
    a = s["AllReduce"]
    check_eq((a["calls"], a["ranks"], a["bytes"], a["gpu_timed"], a["gpu_ms"]),
             (3, 4, 3 * ALLREDUCE_BYTES, 3, 3.0), "AllReduce: bytes, GPU time of its channels")
    # algbw = 12582912 B / 3 ms; busbw = algbw x 2(n-1)/n = x 1.5 for 4 ranks
    check_eq((a["algbw_gbps"], a["busbw_gbps"]), (4.194, 6.291), "nccl-tests bandwidths")
    b = s["Broadcast"]
    check_eq((b["calls"], b["bytes"], b["gpu_timed"]), (2, 2 * BROADCAST_BYTES, 0),
             "Broadcast: no kernel channels")
    check(b["busbw_gbps"] in (None, ""), f"no bandwidth from host time alone: {b}")
    check_eq((s["Send"]["bytes"], s["Recv"]["bytes"]), (4000, 4000), "p2p bytes")


def test_interface_v4_reports_tasks_as_the_calls():
    r = run_driver("--parallel=nccl", version="v4")
    db = database(r)
    check_eq(regions(db, "nccl"), [], "no API events before v5")
    tasks = regions(db, "nccl_task")
    check_eq(names(tasks), {"AllReduce": 3, "Broadcast": 2, "Send": 1, "Recv": 1, "Group": 6},
             "tasks")
    ar = [t[4] for t in tasks if t[0] == "AllReduce"]
    check_eq({(a["comm"], a["rank"], a["nranks"], a["bytes"]) for a in ar},
             {(COMM, "1", "4", str(ALLREDUCE_BYTES))}, "communicator from init")
    s = summary(r)
    check_eq((s["AllReduce"]["calls"], s["AllReduce"]["gpu_ms"], s["AllReduce"]["busbw_gbps"]),
             (3, 3.0, 6.291), "the summary counts the tasks")
    check(any("interface v4" in n["text"] for n in r.metadata()["notes"]), "a note names v4")


def test_interface_v3_names_the_communicator_per_task():
    r = run_driver("--parallel=nccl", version="v3")
    db = database(r)
    tasks = regions(db, "nccl_task")
    check_eq(names(tasks).get("AllReduce"), 3, "AllReduce tasks")
    check_eq({t[4]["comm"] for t in tasks if t[0] in ("AllReduce", "Send")}, {COMM},
             "v3's communicator hash of each task")
    check_eq(regions(db, "nccl_kernel"), [], "v3 has no kernel timer")


def test_event_choice():
    r = run_driver("--parallel=nccl", "--nccl-events=api")
    db = database(r)
    check_eq(names(regions(db, "nccl")).get("ncclAllReduce"), 3, "calls recorded")
    for cat in ("nccl_task", "nccl_kernel", "nccl_proxy"):
        check_eq(regions(db, cat), [], f"no {cat} with --nccl-events=api")


def test_preset_trace_gpu_turns_nccl_on():
    r = run_driver("--preset", "trace-gpu")
    check_eq(names(regions(database(r), "nccl")).get("ncclBroadcast"), 2, "trace-gpu traces NCCL")


def test_users_own_plugin_is_kept():
    other = os.path.join(tempfile.mkdtemp(prefix="syscope-nccl-"), "libnccl-profiler-mine.so")
    harness._workdirs.append(os.path.dirname(other))
    os.symlink(PLUGIN, other)
    r = run_driver("--parallel=nccl", env={"NCCL_PROFILER_PLUGIN": other})
    check("NCCL_PROFILER_PLUGIN is already set" in r.err and "yours is kept" in r.err, r.err)
    check_eq(r.metadata()["environment"].get("NCCL_PROFILER_PLUGIN"), other, "theirs is kept")


def test_nothing_without_the_flag_or_without_syscope():
    r = syscope("sample", "--output-format", "rocpd", "--", fixture("nccl_driver"))
    check_eq(r.rc, 2, "without --parallel=nccl nobody names a plugin: " + r.describe())
    check("NCCL_PROFILER_PLUGIN is not set" in r.err, r.err)
    # Loaded by NCCL in a program syscope does not profile: it asks for no events.
    p = subprocess.run([fixture("nccl_driver")], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, NCCL_PROFILER_PLUGIN=PLUGIN))
    check_eq(p.returncode, 0, p.stderr)
    check("init=0 mask=0x0" in p.stdout, p.stdout)


def wrapped_calls(*flags, env=None, local=False):
    lib = [os.path.join(BUILD, "fixtures", "libnccl_user.so")] if local else []
    r = syscope("sample", "--output-format", "rocpd", *flags, "--", fixture("nccl_calls"),
                *lib, env=env)
    check_eq(r.rc, 0, r.describe())
    check("recv=4" in r.out, f"NCCL's own result comes back: {r.out}")
    return r, regions(database(r), "nccl")


def test_calls_the_profiler_does_not_report_come_from_the_wrappers():
    # One rank: NCCL 2.28 reports nothing to its profiler; the preloaded wrappers do.
    r, calls = wrapped_calls("--parallel=nccl")
    check_eq([c[0] for c in calls], ["ncclAllReduce"] * 3 + ["ncclBroadcast", "ncclSend",
                                                             "ncclRecv"],
             "each call once (ncclBcast, which calls ncclBroadcast inside NCCL, too)")
    check_eq([c[4]["op"] for c in calls[:3]], ["Sum", "Sum", "Max"], "reduction ops")
    check_eq({(c[4]["count"], c[4]["bytes"], c[4]["datatype"], c[4]["nranks"]) for c in calls[:3]},
             {("1000", "4000", "ncclFloat32", "1")}, "AllReduce count, bytes, type, ranks")
    check_eq((calls[3][4]["root"], calls[3][4]["bytes"]), ("0", "256"), "Bcast")
    check_eq((calls[4][4]["peer"], calls[4][4]["bytes"], calls[4][4]["datatype"]),
             ("1", "80", "ncclInt64"), "Send")
    check_eq((calls[4][4]["result"], calls[5][4]["result"]), ("0", "4"), "NCCL's results")
    s = summary(r)
    check_eq((s["AllReduce"]["calls"], s["AllReduce"]["bytes"], s["AllReduce"]["gpu_timed"]),
             (3, 12000, 0), "the summary counts the wrapped calls")
    # Several ranks, but no profiler plugin ever initialized (an NCCL without the interface).
    r, calls = wrapped_calls("--parallel=nccl", env={"FAKE_NCCL_RANKS": "4"})
    check_eq(len(calls), 6, "recorded when NCCL's profiler never started")
    check_eq({c[4]["nranks"] for c in calls}, {"4"}, "ranks")


def test_wrappers_find_an_nccl_loaded_in_a_local_scope():
    # As PyTorch under Python: the library calling NCCL and its libnccl loaded RTLD_LOCAL,
    # where the preloaded wrappers' RTLD_NEXT does not look; NCCL's own must still be called.
    r, calls = wrapped_calls("--parallel=nccl", local=True)
    check_eq(len(calls), 6, "each call recorded")
    check_eq(calls[5][4]["result"], "4", "NCCL's own ncclRecv answered")
    check("NCCL: 6 calls: AllReduce 3 (11.7 KiB), Broadcast 1 (256 B), Send 1 (80 B), "
          "Recv 1 (80 B)" in r.err, "the end-of-run line: " + r.err)


def test_wrappers_pass_through_without_the_flag():
    r, calls = wrapped_calls()
    check_eq(calls, [], "no NCCL regions without --parallel=nccl")


def tool_dir():
    """A folder with `ptxas`, a stand-in compiler (true under that name)."""
    d = tempfile.mkdtemp(prefix="syscope-tools-")
    harness._workdirs.append(d)
    os.symlink("/bin/true", os.path.join(d, "ptxas"))
    return d


def commands(r):
    return sorted(os.path.basename(r.metadata(pid)["command"][0]) for pid in r.pids())


def test_follow_exclude_leaves_compilers_out_and_counts_them():
    ptxas = os.path.join(tool_dir(), "ptxas")
    r = syscope("sample", "--output-format", "rocpd", "--", fixture("spawn_tools"), ptxas, 3, 4,
                "/bin/true")
    check_eq(r.rc, 0, r.describe())
    check("spawned=3 forked=4 other=1 failed=0" in r.out, r.out)
    # The main program, its two forks (until they exec ptxas) and /bin/true; no ptxas, and
    # no process for the vfork children (they share the parent's until exec).
    check_eq(commands(r), ["spawn_tools"] * 3 + ["true"], "processes profiled")
    main = r.metadata(r.main_pid())["notes"]
    check(any(n["text"] == "5 children were not profiled (--follow-exclude): ptxas x5"
              for n in main), f"3 spawned and 2 vfork children, counted by the parent: {main}")
    forked = [n["text"] for pid in r.pids() if pid != r.main_pid()
              for n in r.metadata(pid)["notes"]]
    check_eq(forked.count("a child running ptxas was not profiled (--follow-exclude)"), 2,
             "each fork that exec'd ptxas says so")


def test_follow_exclude_empty_follows_every_child():
    ptxas = os.path.join(tool_dir(), "ptxas")
    r = syscope("sample", "--output-format", "rocpd", "--follow-exclude=", "--",
                fixture("spawn_tools"), ptxas, 2, 1)
    check_eq(r.rc, 0, r.describe())
    # The two spawned ones; the fork that exec'd ptxas is one process of both programs.
    check_eq(commands(r), ["ptxas", "ptxas", "spawn_tools", "spawn_tools"], "every child")
    check_eq([n for pid in r.pids() for n in r.metadata(pid)["notes"]
              if "follow-exclude" in n["text"]], [], "nothing left out")


if __name__ == "__main__":
    harness.main(globals())
