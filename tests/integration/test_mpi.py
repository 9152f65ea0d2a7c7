"""MPI tracing (--parallel=mpi): every call of tests/programs/mpi_basic.c, run under
`mpirun -np 2`, with its bytes, peers, tags, communicators and requests, in every output;
ranks in output paths (%rank%, %size%), metadata and process names; merged ranks."""
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile

import harness
from harness import SYSCOPE, Skip, check, check_eq, fixture

import pftrace
from rocpd_checks import check_conventions, rows

MPIRUN = shutil.which("mpirun")
MPICH_EXEC = shutil.which("mpiexec.mpich")


def need_mpi(name="mpi_basic"):
    """Skip without Open MPI here; in CI (CI=true) a missing tool is a failure."""
    why = None
    if not MPIRUN:
        why = "mpirun not found (Debian: openmpi-bin)"
    elif not os.path.exists(fixture(name)):
        why = f"{name} not built: no MPI headers at build time (Debian: libopenmpi-dev)"
    if why and os.environ.get("CI") == "true":
        raise AssertionError(why)
    if why:
        raise Skip(why)


def need_mpich(name):
    """Skip without MPICH (mpich, libmpich-dev) or syscope's MPICH tracer; in CI a failure."""
    why = None
    if not MPICH_EXEC:
        why = "mpiexec.mpich not found (Debian: mpich)"
    elif not os.path.exists(fixture(name)):
        why = f"{name} not built: no MPICH headers at build time (Debian: libmpich-dev)"
    if why and os.environ.get("CI") == "true":
        raise AssertionError(why)
    if why:
        raise Skip(why)


def run_ranks(program, *flags, np=2, out="out-%rank%-of-%size%", mpich=False):
    """mpirun -np NP syscope run FLAGS -o OUT -- PROGRAM (MPICH's mpiexec with `mpich`);
    returns (proc, workdir)."""
    workdir = tempfile.mkdtemp(prefix="syscope-mpi-")
    os.chmod(workdir, 0o755)
    harness._workdirs.append(workdir)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    launcher = [MPICH_EXEC] if mpich else [MPIRUN, "--oversubscribe"]
    cmd = [*launcher, "-np", str(np), SYSCOPE, "run", "--parallel=mpi",
           "--no-time-output", "-o", out, *flags, "--", fixture(program)]
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=300)
    return proc, workdir


def describe(proc):
    return f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


def database(folder):
    found = glob.glob(os.path.join(folder, "rocpd-*.db"))
    check_eq(len(found), 1, f"one database in {folder}: {os.listdir(folder)}")
    return sqlite3.connect(found[0])


def mpi_calls(db):
    """[(name, {arg: value})] of the mpi regions, in order of start."""
    calls = []
    for rid, name in rows(db, "SELECT id, name FROM regions WHERE category = 'MPI_API' "
                              "ORDER BY start, id"):
        args = dict(rows(db, "SELECT name, value FROM region_args WHERE id = ?", rid))
        calls.append((name, args))
    return calls


def count(calls, name):
    return len([1 for n, _ in calls if n == name])


def bytes_of(calls, name, key):
    return sum(int(a.get(key, 0)) for n, a in calls if n == name)


# What each rank calls (mpi_basic.c): the same on both ranks but for the first message.
COUNTS = {"MPI_Init": 1, "MPI_Comm_rank": 2, "MPI_Comm_size": 1, "MPI_Irecv": 2,
          "MPI_Isend": 2, "MPI_Waitall": 1, "MPI_Wait": 2, "MPI_Sendrecv": 1,
          "MPI_Barrier": 4, "MPI_Bcast": 1, "MPI_Reduce": 1, "MPI_Allreduce": 6,
          "MPI_Gather": 1, "MPI_Gatherv": 1, "MPI_Scatter": 1, "MPI_Scatterv": 1,
          "MPI_Allgather": 1, "MPI_Allgatherv": 1, "MPI_Alltoall": 1, "MPI_Alltoallv": 1,
          "MPI_Comm_split": 1, "MPI_Comm_dup": 1, "MPI_Comm_free": 2, "MPI_Finalize": 1}
# more(): the same on both ranks...
COUNTS.update({"MPI_Irecv": 3, "MPI_Issend": 1, "MPI_Waitany": 2, "MPI_Barrier": 5,
               "MPI_Ibarrier": 1, "MPI_Iallreduce": 1, "MPI_Ibcast": 1, "MPI_Wait": 5,
               "MPI_Scan": 1, "MPI_Exscan": 1, "MPI_Reduce_scatter": 1})
# ...but for each rank's part of the messages (rank 0 sends, rank 1 receives).
RANK_COUNTS = [{"MPI_Send": 1, "MPI_Recv": 1, "MPI_Ssend": 1, "MPI_Rsend": 1},
               {"MPI_Send": 1, "MPI_Recv": 2, "MPI_Probe": 1, "MPI_Irecv": 4, "MPI_Wait": 6}]


def calls_of_rank(rank):
    return sum(dict(COUNTS, **RANK_COUNTS[rank]).values())


def check_rank(calls, rank):
    want = dict(COUNTS, **RANK_COUNTS[rank])
    got = {}
    for n, _ in calls:
        got[n] = got.get(n, 0) + 1
    check_eq(got, want, f"rank {rank}: calls by function")
    init = [a for n, a in calls if n == "MPI_Init"][0]
    check_eq((init["rank"], init["comm_size"]), (str(rank), "2"), "MPI_Init names the job")
    sends = [a for n, a in calls if n == "MPI_Send"]
    recvs = [a for n, a in calls if n == "MPI_Recv"]
    world, copy = (sends, recvs) if rank == 0 else (recvs, sends)
    # The first message: 100 ints, tag 7, 0 -> 1, received from MPI_ANY_SOURCE/ANY_TAG.
    check_eq((world[0]["peer"], world[0]["tag"], world[0]["comm"]), (str(1 - rank), "7", "1"),
             "the first message's peer (the actual source on rank 1) and tag")
    check_eq(world[0].get("bytes_sent" if rank == 0 else "bytes_received"), "400", "bytes")
    # The message on the reversed duplicate: its peer is a world rank, its comm a new one.
    check_eq((copy[0]["peer"], copy[0]["tag"], copy[0]["comm_size"]), (str(1 - rank), "11", "2"),
             "peer translated to a world rank")
    check(copy[0]["comm"] not in ("1", "2"), f"a communicator of its own: {copy[0]}")
    # Non-blocking: requests named by the waits that complete them.
    irecv = [a for n, a in calls if n == "MPI_Irecv"]
    isend = [a for n, a in calls if n == "MPI_Isend"]
    waitall = [a for n, a in calls if n == "MPI_Waitall"][0]
    check_eq(waitall["completes"], f"{irecv[0]['request']}<-{1 - rank}:3/1,{isend[0]['request']}",
             "MPI_Waitall names both requests, the receive's source and tag")
    check_eq((waitall["bytes_sent"], waitall["bytes_received"]), ("80", "80"), "waitall bytes")
    waits = [a["completes"] for n, a in calls if n == "MPI_Wait"][:2]
    check_eq(waits, [isend[1]["request"], f"{irecv[1]['request']}<-{1 - rank}:9/1"], "waits")
    check_eq(bytes_of(calls, "MPI_Isend", "bytes_sent"), 82, "Isend bytes")
    sr = [a for n, a in calls if n == "MPI_Sendrecv"][0]
    check_eq((sr["peer"], sr["source"], sr["tag"], sr["bytes_sent"], sr["bytes_received"]),
             (str(1 - rank), str(1 - rank), "5", "4", "4"), "Sendrecv")
    # Collectives: bytes of each call by the rank's part (root 0).
    root = rank == 0
    check_eq(bytes_of(calls, "MPI_Bcast", "bytes_sent"), 256 if root else 0, "Bcast sent")
    check_eq(bytes_of(calls, "MPI_Bcast", "bytes_received"), 0 if root else 256, "Bcast recv")
    check_eq(bytes_of(calls, "MPI_Reduce", "bytes_received"), 64 if root else 0, "Reduce")
    check_eq(bytes_of(calls, "MPI_Allreduce", "bytes_sent"), 5 * 8 + 16,
             "Allreduce, MPI_IN_PLACE included")
    for name in ("MPI_Gather", "MPI_Gatherv"):
        check_eq((bytes_of(calls, name, "bytes_sent"), bytes_of(calls, name, "bytes_received")),
                 (8, 16 if root else 0), name)
    for name in ("MPI_Scatter", "MPI_Scatterv"):
        check_eq((bytes_of(calls, name, "bytes_sent"), bytes_of(calls, name, "bytes_received")),
                 (16 if root else 0, 8), name)
    for name, sent, received in (("MPI_Allgather", 8, 16), ("MPI_Allgatherv", 8, 16),
                                 ("MPI_Alltoall", 8, 8), ("MPI_Alltoallv", 16, 16)):
        check_eq((bytes_of(calls, name, "bytes_sent"), bytes_of(calls, name, "bytes_received")),
                 (sent, received), name)
    roots = {a.get("root") for n, a in calls if n in ("MPI_Bcast", "MPI_Reduce", "MPI_Gather")}
    check_eq(roots, {"0"}, "roots")
    # more(): the other modes, any-of completion, a probe, scans, non-blocking collectives.
    if rank == 0:
        for name, tag, size in (("MPI_Ssend", "21", "12"), ("MPI_Rsend", "23", "4")):
            a = [a for n, a in calls if n == name][0]
            check_eq((a["peer"], a["tag"], a["bytes_sent"]), ("1", tag, size), name)
    else:
        probe = [a for n, a in calls if n == "MPI_Probe"][0]
        check_eq((probe["peer"], probe["tag"]), ("0", "21"), "the message a probe found")
    issend = [a for n, a in calls if n == "MPI_Issend"][0]
    anys = [a["completes"] for n, a in calls if n == "MPI_Waitany"]
    check_eq(sorted(anys), sorted([issend["request"], f"{irecv[2]['request']}<-{1 - rank}:22/1"]),
             "each MPI_Waitany names the one request it completed")
    for name, sent, received in (("MPI_Iallreduce", 8, 8), ("MPI_Scan", 4, 4),
                                 ("MPI_Exscan", 4, 4), ("MPI_Reduce_scatter", 8, 4),
                                 ("MPI_Ibcast", 16 if root else 0, 0 if root else 16)):
        check_eq((bytes_of(calls, name, "bytes_sent"), bytes_of(calls, name, "bytes_received")),
                 (sent, received), name)
    starts = {a["request"] for n, a in calls if n in ("MPI_Ibarrier", "MPI_Iallreduce",
                                                      "MPI_Ibcast")}
    done = {a.get("completes") for n, a in calls if n == "MPI_Wait"}
    check(starts <= done, f"non-blocking collectives completed by waits: {starts} {done}")


def test_c_calls_with_their_arguments_per_rank():
    need_mpi()
    proc, workdir = run_ranks("mpi_basic")
    check_eq(proc.returncode, 0, describe(proc))
    check_eq(sorted(os.listdir(workdir)), ["out-0-of-2", "out-1-of-2"], "%rank% and %size%")
    for rank in (0, 1):
        folder = os.path.join(workdir, f"out-{rank}-of-2")
        db = database(folder)
        check_conventions(db)
        check_rank(mpi_calls(db), rank)
        meta = [json.load(open(p)) for p in glob.glob(os.path.join(folder, "metadata-*.json"))]
        check_eq([(m["mpi"]["rank"], m["mpi"]["size"]) for m in meta], [(rank, 2)],
                 "rank and size in the metadata")
        text = open(glob.glob(os.path.join(folder, "wall_clock-*.txt"))[0]).read()
        check("MPI_Allreduce" in text, "MPI calls in the wall-clock profile")


def test_ranks_sharing_one_output_folder_are_told_of_rank():
    # -o without %rank% and --no-time-output: the second rank finds the first's session there.
    need_mpi()
    proc, _ = run_ranks("mpi_basic", out="out")
    check(proc.returncode != 0, describe(proc))
    check("another rank of this job of 2 made it; put %rank% in -o" in proc.stderr,
          describe(proc))


def test_merged_ranks_have_message_flows():
    need_mpi()
    proc, workdir = run_ranks("mpi_basic", out="rank-%rank%")
    check_eq(proc.returncode, 0, describe(proc))
    out = os.path.join(workdir, "merged")
    m = subprocess.run([SYSCOPE, "merge", "-o", out, os.path.join(workdir, "rank-0"),
                        os.path.join(workdir, "rank-1")], capture_output=True, text=True,
                       timeout=300)
    check_eq(m.returncode, 0, m.stderr)
    # Rank 0 is the clock the others are moved onto: no clock sync of its own to miss.
    check("no clock sync" not in m.stderr, m.stderr)
    db = sqlite3.connect(os.path.join(out, "rocpd-merged.db"))
    check_eq(rows(db, "SELECT COUNT(*) FROM regions WHERE category = 'MPI_API'"),
             [(calls_of_rank(0) + calls_of_rank(1),)], "both ranks' calls in one database")
    t = pftrace.Trace(open(os.path.join(out, "perfetto-trace-merged.pftrace"), "rb").read())
    # No flow ends before it starts (the checker's errors), none left dangling.
    check_eq(t.errors, [], "a valid trace, every receive after its send")
    procs = sorted(i["name"] for i in t.tracks.values() if i["kind"] == "process")
    check_eq(procs, ["rank 0: mpi_basic", "rank 1: mpi_basic"], "processes named by rank")
    # One flow per message: MPI_Send 0->1, an Isend each way twice, a Sendrecv each way,
    # the Send on the reversed duplicate communicator; more()'s Ssend, Issend each way, Rsend.
    sources = sorted(src for _, src, _ in t.flows)
    check_eq(sources, ["MPI_Isend"] * 4 + ["MPI_Issend"] * 2 + ["MPI_Rsend"] +
             ["MPI_Send"] * 2 + ["MPI_Sendrecv"] * 2 + ["MPI_Ssend"], "flows from each send")
    check_eq({dst for _, _, dst in t.flows}, {"MPI message received"}, "flows to receives")

    s = subprocess.run([SYSCOPE, "summary", "--format", "json", "-n", "50",
                        os.path.join(out, "rocpd-merged.db")], capture_output=True, text=True,
                       timeout=300)
    check_eq(s.returncode, 0, s.stderr)
    doc = json.loads(s.stdout)
    per_rank = [(r["rank"], r["calls"]) for r in doc["mpi_ranks"]]
    check_eq(per_rank, [(0, calls_of_rank(0)), (1, calls_of_rank(1))],
             "time in MPI per rank, with its calls")
    check(all(0 < r["percent_of_run"] <= 100 for r in doc["mpi_ranks"]), doc["mpi_ranks"])
    funcs = {f["function"]: f for f in doc["mpi_functions"]}
    check_eq((funcs["MPI_Send"]["calls"], funcs["MPI_Send"]["bytes_sent"]), (2, 404),
             "MPI_Send: 400 bytes on rank 0, 4 on rank 1")
    check_eq(funcs["MPI_Recv"]["bytes_received"], 404 + 12, "MPI_Recv bytes (and the Ssend's)")
    check_eq((funcs["MPI_Bcast"]["bytes_sent"], funcs["MPI_Bcast"]["bytes_received"]),
             (256, 256), "Bcast: root sends, the other receives")
    check_eq(funcs["MPI_Allreduce"]["calls"], 12, "Allreduce calls of both ranks")
    coll = {c["collective"]: c for c in doc["mpi_collectives"]}
    check_eq(set(coll), {"MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce",
                         "MPI_Gather", "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv",
                         "MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv",
                         "MPI_Reduce_scatter", "MPI_Scan", "MPI_Exscan"}, "every collective")
    check_eq((coll["MPI_Barrier"]["operations"], coll["MPI_Barrier"]["slowest_rank"]), (5, 1),
             "rank 1, late to three of five barriers, kept rank 0 waiting")
    check(coll["MPI_Barrier"]["others_waited_ms"] > 0, coll["MPI_Barrier"])
    check_eq(coll["MPI_Allreduce"]["operations"], 6, "each Allreduce is one operation")


FORTRAN_COUNTS = {"MPI_Init": 1, "MPI_Comm_rank": 1, "MPI_Comm_size": 1, "MPI_Irecv": 1,
                  "MPI_Isend": 1, "MPI_Waitall": 1, "MPI_Barrier": 1, "MPI_Bcast": 1,
                  "MPI_Reduce": 1, "MPI_Allreduce": 3, "MPI_Finalize": 1}


def test_mpich_program_gets_the_mpich_tracer():
    """MPICH's ABI is not Open MPI's (its handles are ints): a program built with MPICH gets
    libsyscope-mpi-mpich.so, and every call is recorded as under Open MPI."""
    need_mpich("mpi_basic_mpich")
    proc, workdir = run_ranks("mpi_basic_mpich", mpich=True)
    check_eq(proc.returncode, 0, describe(proc))
    check("Invalid communicator" not in proc.stderr, describe(proc))
    for rank in (0, 1):
        folder = os.path.join(workdir, f"out-{rank}-of-2")
        check_rank(mpi_calls(database(folder)), rank)


def test_tracer_of_the_other_abi_passes_calls_on():
    """The Open MPI tracer in an MPICH process (a script's MPI may not be the one its job's
    launcher says): it records nothing and passes every call on, and the program works."""
    need_mpich("mpi_basic_mpich")
    workdir = tempfile.mkdtemp(prefix="syscope-mpi-")
    harness._workdirs.append(workdir)
    tracer = os.path.join(os.path.dirname(os.path.dirname(SYSCOPE)), "lib", "syscope",
                          "libsyscope-mpi.so")
    # Added to the program's LD_PRELOAD, after libsyscope.so (not to syscope's own: under
    # ASan the launcher refuses a preloaded library ahead of its runtime).
    proc = subprocess.run([MPICH_EXEC, "-np", "2", SYSCOPE, "run", "--no-time-output", "-o",
                           "w-%rank%", "--", "sh", "-c",
                           f'LD_PRELOAD="$LD_PRELOAD:{tracer}" exec "$0"',
                           fixture("mpi_basic_mpich")], cwd=workdir, capture_output=True,
                          text=True, timeout=300)
    check_eq(proc.returncode, 0, describe(proc))
    check_eq(sorted(ln for ln in proc.stdout.splitlines() if "done" in ln),
             ["mpi_basic rank 0 done", "mpi_basic rank 1 done"], describe(proc))
    check_eq(proc.stderr.count("MPI tracing off: this process's MPI library has another ABI"),
             2, describe(proc))
    for rank in (0, 1):
        check_eq(mpi_calls(database(os.path.join(workdir, f"w-{rank}"))), [],
                 f"rank {rank}: nothing recorded")


def test_script_tracer_follows_the_launcher_not_srun():
    """A program that names no MPI library (a script) gets the tracer of the launcher's MPI:
    MPICH's under Hydra's PMI_RANK; under Slurm's srun --mpi=pmi2, which sets PMI_RANK for
    any MPI, the default build's (the tracer itself passes calls on if that is wrong)."""
    need_mpich("mpi_basic_mpich")
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OMPI_", "PMI_", "PMIX_", "HYDI_", "SLURM_"))}
    for extra, want in (({"PMI_RANK": "0", "PMI_SIZE": "1"}, "libsyscope-mpi-mpich.so"),
                        ({"PMI_RANK": "0", "PMI_SIZE": "1", "SLURM_JOB_ID": "7",
                          "SLURM_PROCID": "0"}, "libsyscope-mpi.so")):
        workdir = tempfile.mkdtemp(prefix="syscope-mpi-")
        harness._workdirs.append(workdir)
        proc = subprocess.run([SYSCOPE, "run", "--parallel=mpi", "--no-sample",
                               "--no-time-output", "-o", "w", "--", "sh", "-c",
                               'echo "preload=$LD_PRELOAD"'], cwd=workdir,
                              env=dict(base, **extra), capture_output=True, text=True,
                              timeout=120)
        check_eq(proc.returncode, 0, describe(proc))
        preload = [ln for ln in proc.stdout.splitlines() if ln.startswith("preload=")]
        check_eq(len(preload), 1, describe(proc))
        tracers = [os.path.basename(p) for p in preload[0][8:].split(":")
                   if "libsyscope-mpi" in p]
        check_eq(tracers, [want], f"{extra}: {describe(proc)}")


def test_mpich_fortran_calls_seen_once():
    """MPICH's f2c conversions are macros (no library defines PMPI_Comm_f2c): the Fortran
    wrappers convert handles themselves instead of ending the program."""
    need_mpich("mpi_fortran_mpich")
    fortran_calls("mpi_fortran_mpich", mpich=True)


def test_fortran_use_mpi_calls_seen_once():
    """Open MPI 4's Fortran layer calls PMPI_* directly: the Fortran wrappers see its calls,
    each once, and Fortran's MPI_IN_PLACE and MPI_STATUS(ES)_IGNORE keep their meaning."""
    fortran_calls("mpi_fortran")


def test_fortran_mpi_f08_calls_seen_once():
    fortran_calls("mpi_f08")


def fortran_calls(program, mpich=False):
    if not mpich:
        need_mpi(program)
    proc, workdir = run_ranks(program, out="f-%rank%", mpich=mpich)
    check_eq(proc.returncode, 0, describe(proc))
    check_eq(proc.stdout.count("in-place sum right"), 2, "MPI_IN_PLACE kept: " + proc.stdout)
    flows = []
    for rank in (0, 1):
        calls = mpi_calls(database(os.path.join(workdir, f"f-{rank}")))
        got = {}
        for n, a in calls:
            got[n] = got.get(n, 0) + 1
            check_eq(a.get("binding"), "fortran", f"{n} through the Fortran binding")
        check_eq(got, dict(FORTRAN_COUNTS, **({"MPI_Send": 1} if rank == 0 else
                                              {"MPI_Recv": 1})), f"rank {rank}: calls")
        p2p = [a for n, a in calls if n in ("MPI_Send", "MPI_Recv")][0]
        check_eq((p2p["peer"], p2p["tag"], p2p.get("bytes_sent", p2p.get("bytes_received"))),
                 (str(1 - rank), "4", "40"), "the actual source and tag, 10 integers")
        wa = [a for n, a in calls if n == "MPI_Waitall"][0]
        check_eq((wa["bytes_sent"], wa["bytes_received"]), ("40", "40"), "waitall bytes")
        check(f"<-{1 - rank}:6/1" in wa["completes"], wa["completes"])
        check_eq(bytes_of(calls, "MPI_Bcast", "bytes_sent" if rank == 0 else
                          "bytes_received"), 32, "Bcast of 8 integers")
        check_eq(bytes_of(calls, "MPI_Allreduce", "bytes_sent"), 36, "3 Allreduce of 12")


def test_syscope_around_mpirun_gives_one_session():
    """syscope run -- mpirun ...: the ranks are children of the launcher, in one session."""
    need_mpi()
    r = harness.syscope("run", "--parallel=mpi", "--", MPIRUN, "--oversubscribe", "-np", "2",
                        fixture("mpi_basic"),
                        env={"OMPI_ALLOW_RUN_AS_ROOT": "1",
                             "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    check_eq(r.rc, 0, r.describe())
    per_process = []
    for db in sorted(glob.glob(os.path.join(r.session, "rocpd-*.db"))):
        n = rows(sqlite3.connect(db), "SELECT COUNT(*) FROM regions WHERE category = 'MPI_API'")
        per_process.append(n[0][0])
    check_eq(sorted(per_process), sorted([0, calls_of_rank(0), calls_of_rank(1)]),
             "mpirun records no MPI call, each rank all of its own")


def test_not_mpi_program_unaffected():
    need_mpi()
    r = harness.syscope("run", "--parallel=mpi", "-o", "solo-%rank%-of-%size%", "--",
                        fixture("hot"), "1")
    check_eq(r.rc, 0, r.describe())
    check_eq(sorted(os.listdir(r.workdir)), ["solo-0-of-1"], "rank 0 of 1 outside a job")
    check("hot: done" in r.out, r.out)
    db = database(r.session)
    check_eq(rows(db, "SELECT COUNT(*) FROM regions WHERE category = 'MPI_API'"), [(0,)],
             "no MPI regions in a program without MPI")


if __name__ == "__main__":
    harness.main(globals())
