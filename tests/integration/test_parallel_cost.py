"""What MPI tracing costs in records, and the ranks' clocks (issue 16): calls of no work
(MPI_Comm_rank, MPI_Comm_size, MPI_Barrier, MPI_Finalize on the world) take one 24-byte
MPI_SHORT record each, read back as the same regions, except the queries past a thread's
first 16 on a communicator, which are counted (one 32-byte MPI_COUNT at MPI_Finalize here;
test_parallel_cost2.py has the large counts); every rank but 0 measures its clock
against rank 0's at MPI_Init and MPI_Finalize (CLOCK_SYNC records, "MPI clock sync"
regions); `syscope merge` moves a rank whose clock is off (shifted on purpose through
SYSCOPE_TEST_CLOCK_SHIFT_NS) so that no receive is drawn before its send.

The fixture, tests/programs/mpi_clock.c: rank 1 sends 3 messages to rank 0 (tag 5), then
each rank calls MPI_Comm_rank 100 times and MPI_Barrier once.

OpenMP: a construct whose arguments are all numbers is one OMP_REGION record of 24-32 bytes
(tests/programs/omp_team.c, whose counts test_openmp.py knows), a
REGION_BEGIN only when an argument is text (libgomp's loop schedule)."""
import glob
import os
import shutil
import sqlite3
import struct
import subprocess
import tempfile

import harness
from harness import SYSCOPE, Skip, check, check_eq, fixture

import pftrace
import rawdump
import records
from rocpd_checks import rows

MPIRUN = shutil.which("mpirun")
MESSAGES = 3
SHIFT_NS = 50_000_000  # rank 1's clock, 50 ms ahead
# mpi_functions.def ids of the calls that go short
FN_FINALIZE, FN_COMM_RANK, FN_COMM_SIZE, FN_BARRIER = 3, 4, 5, 16
QUERIES_RECORDED = 16  # SC_MPI_QUERIES_RECORDED: a thread's first on a communicator
SHORT_CALLS = {FN_COMM_RANK: QUERIES_RECORDED, FN_COMM_SIZE: 1, FN_BARRIER: 1, FN_FINALIZE: 1}
COUNTED_RANK_CALLS = 101 - QUERIES_RECORDED


def need_mpi():
    """Skip without Open MPI here; in CI (CI=true) a missing tool is a failure."""
    why = None
    if not MPIRUN:
        why = "mpirun not found (Debian: openmpi-bin)"
    elif not os.path.exists(fixture("mpi_clock")):
        why = "mpi_clock not built: no MPI headers at build time (Debian: libopenmpi-dev)"
    if why and os.environ.get("CI") == "true":
        raise AssertionError(why)
    if why:
        raise Skip(why)


def run_job(*flags, shift_rank1=0):
    """The fixture under `mpirun -np 2`, one rank per app context, so that rank 1 alone can
    get SYSCOPE_TEST_CLOCK_SHIFT_NS; sessions in rank-0, rank-1. Returns the folder."""
    workdir = tempfile.mkdtemp(prefix="syscope-pcost-")
    os.chmod(workdir, 0o755)
    harness._workdirs.append(workdir)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    rank = [SYSCOPE, "run", "--parallel=mpi", "--no-time-output", "-o", "rank-%rank%", *flags,
            "--", fixture("mpi_clock")]
    shifted = ["env", f"SYSCOPE_TEST_CLOCK_SHIFT_NS={shift_rank1}"] if shift_rank1 else []
    cmd = [MPIRUN, "--oversubscribe", "-np", "1", *rank, ":", "-np", "1", *shifted, *rank]
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=300)
    check_eq(proc.returncode, 0, f"{cmd}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    check_eq(proc.stdout.count("mpi_clock: rank"), 2, proc.stdout)
    return workdir


def raw_records(session):
    """[(type, flags, payload)] of the rank's raw file (one process per rank)."""
    found = glob.glob(os.path.join(session, "raw", "*.sraw"))
    check_eq(len(found), 1, f"one raw file in {session}: {found}")
    with open(found[0], "rb") as f:
        return [(t, fl, p) for _tid, t, fl, p in rawdump.records(f.read())]


def database(folder):
    found = glob.glob(os.path.join(folder, "rocpd-*.db"))
    check_eq(len(found), 1, f"one database in {folder}: {os.listdir(folder)}")
    return sqlite3.connect(found[0])


def run_merge(out, *inputs):
    """`syscope merge -o OUT INPUTS`: (its database, its trace, its stderr)."""
    m = subprocess.run([SYSCOPE, "merge", "-o", out, *inputs], capture_output=True, text=True,
                       timeout=300)
    check_eq(m.returncode, 0, m.stderr)
    db = sqlite3.connect(os.path.join(out, "rocpd-merged.db"))
    trace = pftrace.Trace(open(os.path.join(out, "perfetto-trace-merged.pftrace"), "rb").read())
    return db, trace, m.stderr


def merge(workdir, name="merged"):
    """The job's two ranks merged into workdir/name: (database, trace)."""
    db, trace, _err = run_merge(os.path.join(workdir, name), os.path.join(workdir, "rank-0"),
                                os.path.join(workdir, "rank-1"))
    return db, trace


def clock_syncs(db):
    """{at: {arg: value}} of the "MPI clock sync" regions, with their category."""
    out = {}
    for rid, cat in rows(db, "SELECT id, category FROM regions WHERE name = 'MPI clock sync'"):
        args = dict(rows(db, "SELECT name, value FROM region_args WHERE id = ?", rid))
        args["category"] = cat
        out[args["at"]] = args
    return out


def messages(db, pid_of_rank):
    """[(send start, receive end)] of the fixture's 3 messages, in order."""
    # the MPI calls, not samples whose stack passed through the wrapper of that name
    sends = rows(db, "SELECT start FROM regions WHERE name = 'MPI_Send' AND pid = ? AND "
                     "category = 'MPI_API' ORDER BY start", pid_of_rank[1])
    recvs = rows(db, "SELECT end FROM regions WHERE name = 'MPI_Recv' AND pid = ? AND "
                     "category = 'MPI_API' ORDER BY start", pid_of_rank[0])
    check_eq((len(sends), len(recvs)), (MESSAGES, MESSAGES), "the fixture's messages")
    return [(s[0], r[0]) for s, r in zip(sends, recvs)]


def pids_by_rank(db):
    """{rank: pid}, from MPI_Init's rank argument."""
    got = {}
    for pid, rank in rows(db, "SELECT r.pid, a.value FROM regions r JOIN region_args a ON "
                              "a.id = r.id WHERE r.name = 'MPI_Init' AND a.name = 'rank'"):
        got[int(rank)] = pid
    check_eq(sorted(got), [0, 1], "both ranks' MPI_Init")
    return got


def check_messages_run_forward(db, trace):
    """Merged: each receive ends after its send began, in the database and in the trace (a
    flow per message, none back in time)."""
    pairs = messages(db, pids_by_rank(db))
    check(all(send <= recv_end for send, recv_end in pairs),
          f"merged: each receive ends after its send began: {pairs}")
    check_eq(trace.errors, [], "merged trace: no flow runs back in time")
    check_eq(sorted(src for _, src, _ in trace.flows), ["MPI_Send"] * MESSAGES,
             "a flow per message")


def test_calls_of_no_work_take_24_bytes():
    """Each call of no work is one MPI_SHORT record of 24 bytes (16 after the header), its
    function in the flags, until a query was made 16 times: the other 85 MPI_Comm_rank calls
    are one MPI_COUNT; calls with arguments stay MPI_CALL (72 bytes); the reader gives the
    same regions as before, with the world's size."""
    need_mpi()
    workdir = run_job()
    for rank in (0, 1):
        recs = raw_records(os.path.join(workdir, f"rank-{rank}"))
        short = [(fl, p) for t, fl, p in recs if t == records.MPI_SHORT]
        calls = [p for t, _fl, p in recs if t == records.MPI_CALL]
        check_eq({len(p) + 8 for _fl, p in short}, {24}, "24 bytes per call of no work")
        by_fn = {}
        for fl, _p in short:
            by_fn[fl & 0x7fff] = by_fn.get(fl & 0x7fff, 0) + 1
        check_eq(by_fn, SHORT_CALLS, f"rank {rank}: the short calls by function")
        counts = [(fl, struct.unpack_from("<IIQQ", p)) for t, fl, p in recs
                  if t == records.MPI_COUNT]
        check_eq(counts, [(FN_COMM_RANK, (1, 0, COUNTED_RANK_CALLS, 0))],
                 f"rank {rank}: the other MPI_Comm_rank calls, counted on the world")
        # MPI_Init, and the 3 sends (rank 1) or receives (rank 0): arguments of their own.
        check_eq(len(calls), 1 + MESSAGES, f"rank {rank}: calls with arguments")
        check_eq({len(p) + 8 for p in calls}, {72}, "MPI_CALL stays 72 bytes")
        mpi_bytes = sum(len(p) + 8 for t, _fl, p in recs
                        if t in (records.MPI_SHORT, records.MPI_CALL, records.MPI_COUNT))
        check_eq(mpi_bytes, 24 * 19 + 72 * 4 + 32, f"rank {rank}: bytes of MPI records")

        db = database(os.path.join(workdir, f"rank-{rank}"))
        ranks = rows(db, "SELECT r.start = r.end, a1.value, a2.value FROM regions r "
                         "JOIN region_args a1 ON a1.id = r.id AND a1.name = 'comm' "
                         "JOIN region_args a2 ON a2.id = r.id AND a2.name = 'comm_size' "
                         "WHERE r.name = 'MPI_Comm_rank' AND r.category = 'MPI_API'")
        check_eq(ranks, [(1, "1", "2")] * QUERIES_RECORDED,
                 "MPI_Comm_rank: stamped once, on the world of 2, read back from short records")
        barrier = rows(db, "SELECT r.end >= r.start, a.value FROM regions r JOIN region_args "
                           "a ON a.id = r.id AND a.name = 'comm_size' WHERE "
                           "r.name = 'MPI_Barrier'")
        check_eq(barrier, [(1, "2")], "the barrier, timed, with its communicator's size")


def test_each_rank_measures_its_clock_at_init_and_finalize():
    need_mpi()
    workdir = run_job()
    check_eq([t for t, _f, _p in raw_records(os.path.join(workdir, "rank-0"))
              if t == records.CLOCK_SYNC], [], "rank 0 is the reference: no measurement")
    syncs = [(fl, p) for t, fl, p in raw_records(os.path.join(workdir, "rank-1"))
             if t == records.CLOCK_SYNC]
    check_eq([(fl, len(p) + 8) for fl, p in syncs], [(0, 56), (1, 56)],
             "rank 1: one 56-byte CLOCK_SYNC at MPI_Init, one at MPI_Finalize")
    for _fl, p in syncs:
        ts, end, when, offset, rtt, peer, rounds = struct.unpack_from("<QQQqQiI", p)
        check(ts <= when <= end, (ts, when, end))
        check_eq((peer, rounds), (0, 8), "8 ping-pongs with rank 0")
        check(0 < rtt <= end - ts, f"the kept round trip lies in the measurement: {rtt}")
    db = database(os.path.join(workdir, "rank-1"))
    got = clock_syncs(db)
    check_eq(sorted(got), ["MPI_Finalize", "MPI_Init"], "both measurements, as regions")
    check_eq({a["category"] for a in got.values()}, {"SYSCOPE_CONTROL"}, "syscope's own time")
    check_eq(rows(db, "SELECT COUNT(*) FROM regions WHERE category = 'MPI_API'"),
             [(1 + MESSAGES + 19,)], "the measurement is no MPI call of the program")


def test_merge_aligns_a_rank_whose_clock_is_off():
    """Rank 1's clock 50 ms ahead: in its own database its sends begin after rank 0's
    receives ended; merged, its offset (about -50 ms) moves it back, and every receive
    ends after its send began (the trace's flows all run forward)."""
    need_mpi()
    workdir = run_job(shift_rank1=SHIFT_NS)
    syncs = clock_syncs(database(os.path.join(workdir, "rank-1")))
    for at, a in syncs.items():
        offset = int(a["offset_ns"])
        # On one host the true offset is ~0: what is measured is the shift, within the
        # round trip kept (and far less than 1 ms of the two processes' clock steering).
        check(abs(offset + SHIFT_NS) <= int(a["rtt_ns"]) + 1_000_000,
              f"{at}: offset {offset}, {a}")
    own = {r: database(os.path.join(workdir, f"rank-{r}")) for r in (0, 1)}
    send_starts = [s for (s,) in rows(own[1], "SELECT start FROM regions WHERE "
                                              "name = 'MPI_Send' AND category = 'MPI_API' "
                                              "ORDER BY start")]
    recv_ends = [e for (e,) in rows(own[0], "SELECT end FROM regions WHERE "
                                            "name = 'MPI_Recv' AND category = 'MPI_API' "
                                            "ORDER BY start")]
    check(all(s > e for s, e in zip(send_starts, recv_ends)),
          f"the shift is real: sends {send_starts} after receives {recv_ends}")

    db, trace = merge(workdir)
    check_messages_run_forward(db, trace)


def move_to_host(folder, host, realtime_shift_ns=0):
    """Rewrite a rank's database as if recorded on another host (its node's machine id, hash
    and name), whose wall clock was `realtime_shift_ns` off."""
    path = glob.glob(os.path.join(folder, "rocpd-*.db"))[0]
    db = sqlite3.connect(path)
    table = {kind: rows(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND "
                            f"name LIKE 'rocpd_info_{kind}_%'")[0][0]
             for kind in ("node", "process")}
    db.execute(f'UPDATE "{table["node"]}" SET hash = hash + 1, machine_id = ?, hostname = ?',
               (host, host))
    db.execute(f'UPDATE "{table["process"]}" SET extdata = json_set(extdata, '
               "'$.syscope.start_realtime_ns', json_extract(extdata, "
               "'$.syscope.start_realtime_ns') + ?)", (realtime_shift_ns,))
    db.commit()
    db.close()


def test_merge_across_hosts_keeps_the_measured_offsets():
    """Rank 1 on another host whose wall clock is 2 s off: the merge moves it by the offsets
    it measured against rank 0 (not by the wall clocks), and the merged trace draws it where
    the merged database has it: every flow runs forward."""
    need_mpi()
    workdir = run_job(shift_rank1=SHIFT_NS)
    move_to_host(os.path.join(workdir, "rank-1"), "nodeB", realtime_shift_ns=2_000_000_000)
    db, trace = merge(workdir)
    check_eq(rows(db, "SELECT COUNT(DISTINCT nid) FROM processes"), [(2,)], "two hosts")
    check_messages_run_forward(db, trace)
    check_eq(sorted(v for (v,) in rows(db, "SELECT json_extract(extdata, '$.syscope.clock') "
                                           "FROM rocpd_info_process")),
             ["mpi", "reference"], "each process says how its clock was set")


def test_merge_across_hosts_without_clock_sync_uses_the_wall_clock():
    """No offsets measured and rank 1 on another host whose wall clock reads 3 s later than
    rank 0's for the same moment: its times move by those 3 s (the hosts' clocks are
    unrelated otherwise), and the merge says so."""
    need_mpi()
    workdir = run_job("--no-mpi-clock-sync")
    wall_ns = 3_000_000_000
    move_to_host(os.path.join(workdir, "rank-1"), "nodeB", realtime_shift_ns=wall_ns)
    own = sorted(s for (s,) in rows(database(os.path.join(workdir, "rank-1")),
                                    "SELECT start FROM regions WHERE name = 'MPI_Send' AND "
                                    "category = 'MPI_API'"))
    db, _trace, err = run_merge(os.path.join(workdir, "merged"),
                                os.path.join(workdir, "rank-0"), os.path.join(workdir, "rank-1"))
    check("rank-1" in err and "by the two hosts' wall clocks" in err, err)
    moved = sorted(s for (s,) in rows(db, "SELECT start FROM regions WHERE name = 'MPI_Send' "
                                          "AND category = 'MPI_API' AND pid = ?",
                                      pids_by_rank(db)[1]))
    # One host in truth: its wall and monotonic clocks keep their difference to within
    # the microseconds between the two reads of a process's start.
    check(len(moved) == MESSAGES and
          all(abs(m - o - wall_ns) < 5_000_000 for m, o in zip(moved, own)),
          f"moved by the wall clocks' 3 s: {moved} from {own}")


def test_merge_of_a_merged_job_keeps_its_clock_as_the_reference():
    """A job merged once, merged again with a process of another host (whose clock started
    at another boot): the merged job keeps its times and is the reference, and the new
    process is moved onto its clock by the wall clocks (it was the reference itself, and
    kept a clock unrelated to the job's)."""
    need_mpi()
    workdir = run_job(shift_rank1=SHIFT_NS)
    job_db, _trace = merge(workdir)
    job_path = os.path.join(workdir, "merged", "rocpd-merged.db")
    job_starts = sorted(s for (s,) in rows(job_db, "SELECT start FROM processes"))
    other = harness.gen_session("--pid", 4321, "--hostname", "nodeC", "--regions", 3,
                                "--start", 10**15, workdir=workdir)
    db, _trace, err = run_merge(os.path.join(workdir, "again"), other, job_path)
    check_eq(sorted(s for (s,) in rows(db, "SELECT start FROM processes WHERE pid != 4321")),
             job_starts, "the merged job's times unchanged")
    (start,), = rows(db, "SELECT start FROM processes WHERE pid = 4321")
    # Written a second or two after the job, on the job's clock now (10^15 ns on its own).
    check(0 < start - job_starts[0] < 120 * 10**9,
          f"the new process on the job's clock: {start} against {job_starts}")
    check_eq(rows(db, "SELECT json_extract(extdata, '$.syscope.clock') FROM "
                      "rocpd_info_process WHERE pid = 4321"), [("wall clock",)], err)


def test_merge_interpolates_between_init_and_finalize():
    """Offsets of rank 1 rewritten in its database (a clock drifting by 20 us between
    MPI_Init and MPI_Finalize, a few ms apart): merged, each of its regions moves by the
    offset interpolated at its start."""
    need_mpi()
    workdir = run_job(shift_rank1=SHIFT_NS)
    path = glob.glob(os.path.join(workdir, "rank-1", "rocpd-*.db"))[0]
    db = sqlite3.connect(path)
    args_table = rows(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND "
                          "name LIKE 'rocpd_arg%'")[0][0]
    syncs = clock_syncs(db)
    w0, w1 = int(syncs["MPI_Init"]["when"]), int(syncs["MPI_Finalize"]["when"])
    o0, o1 = -SHIFT_NS, -SHIFT_NS - 20_000
    for at, offset in (("MPI_Init", o0), ("MPI_Finalize", o1)):
        db.execute(f'UPDATE "{args_table}" SET value = ? WHERE name = \'offset_ns\' AND '
                   f'event_id = (SELECT R.event_id FROM rocpd_region R JOIN rocpd_arg A ON '
                   f'A.event_id = R.event_id WHERE A.name = \'at\' AND A.value = ?)',
                   (str(offset), at))
    db.commit()
    own = sorted(s for (s,) in rows(db, "SELECT start FROM regions WHERE name = 'MPI_Send' "
                                        "AND category = 'MPI_API'"))
    merged, _trace = merge(workdir)
    pid = pids_by_rank(merged)[1]
    moved = sorted(s for (s,) in rows(merged, "SELECT start FROM regions WHERE "
                                              "name = 'MPI_Send' AND category = 'MPI_API' "
                                              "AND pid = ?", pid))
    want = [t + o0 + int((t - w0) * (o1 - o0) / (w1 - w0)) for t in own]
    check(all(w0 < t < w1 for t in own), "the sends lie between the two measurements")
    check(all(abs(m - w) <= 1 for m, w in zip(moved, want)) and len(moved) == MESSAGES,
          f"moved by the interpolated offset: {moved} != {want}")


def test_merge_without_clock_sync_leaves_clocks_alone():
    """The same shift with --no-mpi-clock-sync: nothing measured, nothing moved, and the
    merged trace shows receives before their sends (what the alignment prevents)."""
    need_mpi()
    workdir = run_job("--no-mpi-clock-sync", shift_rank1=SHIFT_NS)
    check_eq([t for t, _f, _p in raw_records(os.path.join(workdir, "rank-1"))
              if t == records.CLOCK_SYNC], [], "no measurement when turned off")
    db, trace = merge(workdir)
    pairs = messages(db, pids_by_rank(db))
    check(all(send > recv_end for send, recv_end in pairs), f"left as recorded: {pairs}")
    check(trace.errors, "receives before their sends: the trace checker objects")


# omp_team.c: 6 parallel regions of 4 threads, a barrier per member in 3, 8 tasks.
# Each an OMP_REGION, its end in it: 24 bytes, the first argument in them if it fits 32 bits
# (two if both fit 16: an implicit task's), 8 for each other (test_omp_cost.py); the master's
# implicit task of each parallel region in the region's record (size 0 here).
OMP_COMPACT = {("omp parallel", 32): 6, ("omp implicit task", 24): 18,
               ("omp implicit task", 0): 6,
               ("omp implicit barrier", 24): 24, ("omp barrier", 24): 12,
               ("omp task", 24): 8, ("omp taskwait", 24): 1, ("omp critical", 24): 4,
               ("omp critical wait", 24): 4, ("omp lock", 24): 4, ("omp lock wait", 24): 4}


def omp_begins(compiler):
    path = fixture(f"omp_team_{compiler}")
    if not os.path.exists(path):
        why = f"{path} not built (clang -fopenmp needs clang and libomp-dev)"
        if os.environ.get("CI") == "true":
            raise AssertionError(why)
        raise Skip(why)
    r = harness.syscope("sample", "--parallel=openmp", "--output-format", "json", "--", path,
                        env={"OMP_WAIT_POLICY": "passive"})
    check_eq(r.rc, 0, r.describe())
    compact, full = {}, []
    for raw in r.raw_files():
        with open(raw, "rb") as f:
            for _tid, rtype, flags, payload in rawdump.records(f.read()):
                if rtype == records.OMP_REGION:
                    for i, (_ts, _end, name, _args) in enumerate(
                            records.decode_omp_regions(flags, payload)):
                        key = (name, 0 if i else len(payload) + 8)  # 0: held by its parallel's
                        compact[key] = compact.get(key, 0) + 1
                elif rtype == records.REGION_BEGIN:
                    full.append(bytes(payload[32:]).split(b"\0")[0].decode())
    return compact, full


def test_openmp_begins_take_16_to_32_bytes_gcc():
    compact, full = omp_begins("gcc")
    check_eq(compact, OMP_COMPACT, "libgomp: compact begins by construct and size")
    check_eq(full, ["omp loop"] * 4, "only the loops (a schedule name) stay REGION_BEGIN")


def test_openmp_begins_take_16_to_32_bytes_clang():
    compact, full = omp_begins("clang")
    want = dict(OMP_COMPACT)
    want.update({("omp loop", 24): 4, ("omp single", 24): 1})
    check_eq(compact, want, "OMPT: compact begins by construct and size (loops: iterations)")
    check_eq(full, [], "every OMPT begin of the fixture is compact")


harness.main(globals())
