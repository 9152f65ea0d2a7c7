"""MPI queries of no work counted, not recorded one by one (issue 16's cost goal): past a
thread's first 16 calls of MPI_Comm_rank or MPI_Comm_size on a communicator, a call only
adds one to a per-thread count, written as MPI_COUNT records (32 bytes) every 4096 calls and
at MPI_Finalize; the profile still has the exact number of calls, the first 16 stay regions
on the timeline, and calls that do work (a long MPI_Barrier) are regions as before.

The fixture, tests/programs/mpi_queries.c, under `mpirun -np 2`: rank 0 asks its rank
100 001 times and the size 1 001 times on the world, its rank 50 times on MPI_COMM_SELF and
10 000 times from a second thread; rank 1 asks each once. Rank 0's barrier waits for rank 1,
which enters it 100 ms after a message from rank 0."""
import glob
import json
import os
import shutil
import sqlite3
import struct
import subprocess
import tempfile

import harness
from harness import SYSCOPE, Profile, Skip, check, check_eq, fixture

import rawdump
import records
from rocpd_checks import rows

MPIRUN = shutil.which("mpirun")
FN_FINALIZE, FN_COMM_RANK, FN_COMM_SIZE, FN_BARRIER = 3, 4, 5, 16  # src/store/mpi_functions.def
RECORDED = 16  # SC_MPI_QUERIES_RECORDED
WORLD, SELF = 1, 2  # communicator ids of MPI_SHORT and MPI_COUNT
MAIN_RANK, SIZE, SELF_RANK, THREAD_RANK = 100_001, 1_001, 50, 10_000  # rank 0's calls


def need_mpi():
    """Skip without Open MPI here; in CI (CI=true) a missing tool is a failure."""
    why = None
    if not MPIRUN:
        why = "mpirun not found (Debian: openmpi-bin)"
    elif not os.path.exists(fixture("mpi_queries")):
        why = "mpi_queries not built: no MPI headers at build time (Debian: libopenmpi-dev)"
    if why and os.environ.get("CI") == "true":
        raise AssertionError(why)
    if why:
        raise Skip(why)


def run_job(*flags):
    """The fixture under `mpirun -np 2 syscope run --parallel=mpi FLAGS`, sessions in rank-0
    and rank-1, the profiles as JSON too. Returns (workdir, mpirun's stderr)."""
    workdir = tempfile.mkdtemp(prefix="syscope-pcost2-")
    os.chmod(workdir, 0o755)
    harness._workdirs.append(workdir)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    cmd = [MPIRUN, "--oversubscribe", "-np", "2", SYSCOPE, "run", "--parallel=mpi",
           "--no-time-output", "--output-format", "rocpd,json", "-o", "rank-%rank%", *flags, "--",
           fixture("mpi_queries")]
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=300)
    check_eq(proc.returncode, 0, f"{cmd}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    check_eq(proc.stdout.count("mpi_queries: rank"), 2, proc.stdout)
    return workdir, proc.stderr


def raw_records(session):
    """[(tid, type, flags, payload)] of the rank's raw file (one process per rank)."""
    found = glob.glob(os.path.join(session, "raw", "*.sraw"))
    check_eq(len(found), 1, f"one raw file in {session}: {found}")
    with open(found[0], "rb") as f:
        return list(rawdump.records(f.read()))


def shorts_by_fn_comm(recs):
    """{(function, communicator): MPI_SHORT records}."""
    got = {}
    for _tid, t, fl, p in recs:
        if t == records.MPI_SHORT:
            key = (fl & 0x7fff, struct.unpack_from("<QII", p)[2])
            got[key] = got.get(key, 0) + 1
    return got


def counted_by_fn_comm(recs):
    """{(function, communicator): calls} summed over the MPI_COUNT records, and how many
    records there were."""
    got, n = {}, 0
    for _tid, t, fl, p in recs:
        if t == records.MPI_COUNT:
            comm, _reserved, calls, total_ns = struct.unpack_from("<IIQQ", p)
            check_eq((len(p) + 8, total_ns, fl & 0x8000), (32, 0, 0),
                     "a 32-byte MPI_COUNT of the C binding, queries untimed")
            key = (fl & 0x7fff, comm)
            got[key] = got.get(key, 0) + calls
            n += 1
    return got, n


def test_queries_past_the_first_16_are_counted_not_recorded():
    need_mpi()
    workdir, _err = run_job()
    recs = raw_records(os.path.join(workdir, "rank-0"))
    # Two threads, each recording its first 16 on the world; 16 on self; 16 sizes.
    check_eq(shorts_by_fn_comm(recs),
             {(FN_COMM_RANK, WORLD): 2 * RECORDED, (FN_COMM_RANK, SELF): RECORDED,
              (FN_COMM_SIZE, WORLD): RECORDED, (FN_BARRIER, WORLD): 1, (FN_FINALIZE, 0): 1},
             "rank 0: the recorded calls of no work")
    counted, n = counted_by_fn_comm(recs)
    check_eq(counted, {(FN_COMM_RANK, WORLD): MAIN_RANK + THREAD_RANK - 2 * RECORDED,
                       (FN_COMM_RANK, SELF): SELF_RANK - RECORDED,
                       (FN_COMM_SIZE, WORLD): SIZE - RECORDED},
             "rank 0: every other call counted, exactly")
    # every 4096 counted calls of a thread, and the rest at MPI_Finalize: 24 + 1 for the
    # main thread's ranks, 2 + 1 for the second thread's, 1 each for self and the size
    check_eq(n, 25 + 3 + 1 + 1, "rank 0: MPI_COUNT records")
    query_bytes = sum(len(p) + 8 for _tid, t, _fl, p in recs
                      if t in (records.MPI_COUNT, records.MPI_SHORT))
    calls = MAIN_RANK + THREAD_RANK + SELF_RANK + SIZE + 1
    check(query_bytes / calls < 0.25, f"rank 0: {query_bytes} bytes for {calls} calls")

    recs1 = raw_records(os.path.join(workdir, "rank-1"))
    check_eq(shorts_by_fn_comm(recs1), {(FN_COMM_RANK, WORLD): 1, (FN_COMM_SIZE, WORLD): 1,
                                         (FN_BARRIER, WORLD): 1, (FN_FINALIZE, 0): 1},
             "rank 1: each call recorded")
    check_eq(counted_by_fn_comm(recs1), ({}, 0), "rank 1: nothing counted")


def profile_of(folder):
    found = glob.glob(os.path.join(folder, "wall_clock-*.json"))
    check_eq(len(found), 1, f"one wall-clock profile in {folder}: {os.listdir(folder)}")
    return Profile(found[0])


def test_profile_has_exact_counts():
    """The flat table: every call, recorded or counted; the call tree: the counted calls
    spread over where the recorded ones were made (main, and the second thread's function),
    adding up to the same number."""
    need_mpi()
    workdir, err = run_job()
    p = profile_of(os.path.join(workdir, "rank-0"))
    calls = {f["name"]: f["calls"] for f in p.meta["functions"]}
    check_eq((calls.get("MPI_Comm_rank"), calls.get("MPI_Comm_size"), calls.get("MPI_Barrier")),
             (MAIN_RANK + SELF_RANK + THREAD_RANK, SIZE, 1),
             f"rank 0: exact calls in the profile: {calls}")

    def tree_calls(node, name):
        n = node["node"]["inclusive"]["stats"]["count"] if node["node"]["name"] == name else 0
        return n + sum(tree_calls(c, name) for c in node["children"])

    in_trees = sum(tree_calls(root, "MPI_Comm_rank") for root in p.roots())
    check_eq(in_trees, MAIN_RANK + SELF_RANK + THREAD_RANK, "rank 0: the call trees add up")
    p1 = profile_of(os.path.join(workdir, "rank-1"))
    calls1 = {f["name"]: f["calls"] for f in p1.meta["functions"]}
    check_eq((calls1.get("MPI_Comm_rank"), calls1.get("MPI_Comm_size")), (1, 1),
             "rank 1: one of each")
    meta = [json.load(open(m)) for m in
            glob.glob(os.path.join(workdir, "rank-0", "metadata-*.json"))]
    notes = [n["text"] for m in meta for n in m.get("notes", [])]
    want = (f"MPI: {MAIN_RANK + SELF_RANK + THREAD_RANK - 3 * RECORDED} calls of "
            f"MPI_Comm_rank and {SIZE - RECORDED} of MPI_Comm_size")
    check(any(n.startswith(want) for n in notes), f"the metadata's note: {notes}")
    check(want in err, f"the end-of-run summary says so too:\n{err}")


def test_long_barrier_stays_a_region():
    """Rank 0's barrier, held up 100 ms by rank 1, is a region of the timeline (the database)
    with its communicator, and so are the recorded queries; the counted ones are not."""
    need_mpi()
    workdir, _err = run_job()
    db = sqlite3.connect(glob.glob(os.path.join(workdir, "rank-0", "rocpd-*.db"))[0])
    barrier = rows(db, "SELECT r.end - r.start, a.value FROM regions r JOIN region_args a ON "
                       "a.id = r.id AND a.name = 'comm_size' WHERE r.name = 'MPI_Barrier'")
    check_eq(len(barrier), 1, f"one barrier: {barrier}")
    # a bound by cause, not by speed: rank 1 sleeps 100 ms after rank 0's message
    check(barrier[0][0] >= 50_000_000 and barrier[0][1] == "2",
          f"the barrier waited for rank 1: {barrier}")
    check_eq(rows(db, "SELECT name, COUNT(*) FROM regions WHERE category = 'MPI_API' AND "
                      "name LIKE 'MPI_Comm_%' GROUP BY name ORDER BY name"),
             [("MPI_Comm_rank", 3 * RECORDED), ("MPI_Comm_size", RECORDED)],
             "the recorded queries on the timeline")


def test_every_query_recorded_on_request():
    """--mpi-queries-recorded 1000000000: every call a region, nothing counted, and
    `syscope summary` counts them all; a negative number is refused, naming the range."""
    need_mpi()
    workdir, _err = run_job("--mpi-queries-recorded", "1000000000")
    recs = raw_records(os.path.join(workdir, "rank-0"))
    check_eq(counted_by_fn_comm(recs), ({}, 0), "nothing counted")
    check_eq(shorts_by_fn_comm(recs)[(FN_COMM_RANK, WORLD)], MAIN_RANK + THREAD_RANK,
             "every MPI_Comm_rank on the world recorded")
    db = glob.glob(os.path.join(workdir, "rank-0", "rocpd-*.db"))[0]
    s = subprocess.run([SYSCOPE, "summary", "--format", "json", "-n", "50", db],
                       capture_output=True, text=True, timeout=300)
    check_eq(s.returncode, 0, s.stderr)
    funcs = {f["function"]: f["calls"] for f in json.loads(s.stdout)["mpi_functions"]}
    check_eq((funcs.get("MPI_Comm_rank"), funcs.get("MPI_Comm_size")),
             (MAIN_RANK + SELF_RANK + THREAD_RANK, SIZE), "the summary's calls per function")

    bad = harness.syscope("run", "--parallel=mpi", "--mpi-queries-recorded", "-1", "--",
                          "true")
    check(bad.rc != 0 and "mpi-queries-recorded" in bad.err, bad.describe())


harness.main(globals())
