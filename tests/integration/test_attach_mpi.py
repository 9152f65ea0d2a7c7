"""syscope attach --parallel=mpi: a rank of a running `mpirun -np 2` job
(tests/programs/mpi_attach.c, mpi_attach_f.f90), attached for a few seconds, records its MPI
calls as regions with the arguments `run` gives them (bytes, peer, tag, communicator), in C and
in Fortran; a communicator and a request made before the attach are named so, never wrongly;
-o's %rank% and %size% and the metadata name the rank's job; after the detach the job goes on
and ends with its own correct answer. Both ranks attached merge into one job, told that their
clocks were not synchronized. An MPI loaded local (dlopen RTLD_LOCAL, as mpi4py does) is
found. Attached again and again, the tracer registers its fork handler once. A process
without MPI is told so and sampled all the same."""
import glob
import json
import os
import re
import signal
import sqlite3
import subprocess
import tempfile
import time

import harness
import pftrace
from harness import SYSCOPE, check, check_eq, fixture
from test_attach import Attach, Target, check_session, expect_line
from test_mpi import MPIRUN, need_mpi
from rocpd_checks import rows

BEFORE = "created before attach #1"


class Job:
    """mpirun -np 2 PROGRAM STOP_FILE: its ranks' pids, and a stop file to end it."""

    def __init__(self, program="mpi_attach", started=True):
        self.dir = tempfile.mkdtemp(prefix="syscope-attach-mpi-")
        os.chmod(self.dir, 0o755)
        harness._workdirs.append(self.dir)
        self.stop_file = os.path.join(self.dir, "stop")
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        self.proc = subprocess.Popen(
            [MPIRUN, "--oversubscribe", "-np", "2", fixture(program), self.stop_file],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.lines = []
        if started:
            self.started()

    def started(self):
        self.pid = int(self.expect(r"^pid=(\d+)$").group(1))
        self.expect(r"^round=1$")  # past MPI_Init: the attach finds the world made

    def expect(self, pattern):
        return expect_line(self.proc, self.lines, pattern, "the job")

    def ranks(self):
        """The pids of the job's two ranks: rank 0's first."""
        pids = []
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:
                continue
            if len(args) > 1 and args[1] == self.stop_file.encode() and b"mpirun" not in args[0]:
                pids.append(int(entry))
        check_eq(len(pids), 2, f"the job's ranks: {pids}")
        return sorted(pids, key=lambda p: p != self.pid)

    def finish(self):
        open(self.stop_file, "w").close()
        out, err = self.proc.communicate(timeout=300)
        self.lines += out.splitlines()
        self.err = err
        return self.proc.returncode

    def check_answer(self, rounds):
        """The job ended by itself with no error, after more rounds than were recorded."""
        check_eq(self.finish(), 0, f"the job's status\n{self.lines}\n{self.err}")
        done = [re.match(r"done rounds=(\d+) errors=(\d+)$", s) for s in self.lines]
        done = [m for m in done if m]
        check_eq(len(done), 1, f"the job's answer: {self.lines}")
        check_eq(done[0].group(2), "0", "errors the ranks found in their messages")
        check(int(done[0].group(1)) > rounds, f"rounds after the detach: {done[0].group(0)}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def mpi_regions(db_path, pid=None):
    """{name: [args]} of the MPI regions of a database (of process `pid` only, if given)."""
    con = sqlite3.connect(db_path)
    calls = {}
    sql = "SELECT id, name FROM regions WHERE category = 'MPI_API'"
    for rid, name in rows(con, sql + (" AND pid = ?" if pid else ""), *([pid] if pid else [])):
        args = dict(rows(con, "SELECT name, value FROM region_args WHERE id = ?", rid))
        calls.setdefault(name, []).append(args)
    return calls


def rank_db(folder, pid):
    db = glob.glob(os.path.join(folder, f"rocpd-{pid}.db"))
    check_eq(len(db), 1, f"the rank's database in {folder}: {os.listdir(folder)}")
    return db[0]


def check_all(calls, name, want, where=None):
    """Every call of `name` (those whose args include `where`, if given) has `want`."""
    got = {tuple(sorted((k, a.get(k)) for k in want)) for a in calls.get(name, [])
           if not where or all(a.get(k) == v for k, v in where.items())}
    check_eq(got, {tuple(sorted(want.items()))}, f"{name}'s arguments ({where or 'all'})")


def check_rank0_rounds(calls, fortran=False):
    """Rank 0's calls of a round: 1000 ints (tag 5) and 10 doubles each way (tag 6)."""
    for name in ("MPI_Send", "MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Allreduce"):
        check(len(calls.get(name, [])) > 0, f"{name} recorded: {sorted(calls)}")
    binding = {"binding": "fortran"} if fortran else {}
    check_all(calls, "MPI_Send", {"bytes_sent": "4000", "peer": "1", "comm": "1", **binding},
              {"tag": "5"})
    check_all(calls, "MPI_Isend", {"bytes_sent": "80", "peer": "1", "tag": "6", "comm": "1",
                                   **binding})
    check_all(calls, "MPI_Irecv", {"peer": "1", "tag": "6", **binding}, {"tag": "6"})
    check_all(calls, "MPI_Waitall", {"bytes_sent": "80", "bytes_received": "80", **binding})
    check_all(calls, "MPI_Allreduce", {"bytes_sent": "4", "comm_size": "2", **binding})
    rounds = len(calls["MPI_Allreduce"])
    sends = [a for a in calls["MPI_Send"] if a.get("tag") == "5"]
    check(abs(len(sends) - rounds) <= 1, f"one send a round: {len(sends)}, {rounds} rounds")
    return rounds


def test_rank_attached_records_its_mpi_calls_and_the_job_goes_on():
    need_mpi("mpi_attach")
    job = Job()
    try:
        a = Attach(job.pid, "--parallel=mpi", "--no-time-output", "-o", "att-%rank%-of-%size%",
                   "-d", "4")
        a.wait_attached()
        time.sleep(1)
        open(job.stop_file + ".early", "w").close()  # rank 0's request made before the attach
        job.expect(r"^early=42$")
        check_eq(a.finish(), 0, a.describe())
        check_session(a, job.pid, "duration")
        check_eq(os.path.basename(a.session), "att-0-of-2", "-o's %rank% and %size%: the job's")
        check(re.search(r"attach: --parallel=mpi: rank 0; \d+ MPI functions wrapped; no clock "
                        r"sync", a.err), a.err)
        calls = mpi_regions(rank_db(a.session, job.pid))
        rounds = check_rank0_rounds(calls)
        # The reversed communicator, made before the attach: named so, its peer world rank 1.
        check_all(calls, "MPI_Send", {"bytes_sent": "4", "peer": "1", "comm": BEFORE,
                                      "comm_size": "2"}, {"tag": "7"})
        # The early receive's wait: a request the tracer did not see started, no bytes.
        check_eq([(w.get("completes_started_before_attach"), w.get("bytes_received"),
                   w.get("completes")) for w in calls["MPI_Wait"]], [("1", None, None)],
                 "MPI_Wait of the request made before the attach")
        check_eq(a.metadata(job.pid)["mpi"]["rank"], 0, "the metadata's rank")
        check_eq(a.metadata(job.pid)["mpi"]["size"], 2, "the metadata's size")
        time.sleep(1)
        job.check_answer(rounds)  # detached: the job goes on and ends with its answer
    finally:
        job.kill()


def test_fortran_rank_attached_records_the_fortran_bindings():
    need_mpi("mpi_attach_f")
    job = Job("mpi_attach_f")
    try:
        a = Attach(job.pid, "--parallel=mpi", "-d", "3")
        a.wait_attached()
        check_eq(a.finish(), 0, a.describe())
        check_session(a, job.pid, "duration")
        calls = mpi_regions(rank_db(a.session, job.pid))
        # Open MPI's C layer does not see Fortran calls: these are the mpi_*_ wrappers'.
        rounds = check_rank0_rounds(calls, fortran=True)
        check_eq(sorted(calls), ["MPI_Allreduce", "MPI_Irecv", "MPI_Isend", "MPI_Send",
                                 "MPI_Waitall"], "the Fortran calls of a round, each once")
        job.check_answer(rounds)
    finally:
        job.kill()


def test_every_rank_attached_merges_into_one_job():
    need_mpi("mpi_attach")
    job = Job()
    try:
        attaches = [Attach(pid, "--parallel=mpi", "--no-time-output", "-o", "r-%rank%", "-d",
                           "3") for pid in job.ranks()]
        for a in attaches:
            a.wait_attached()
        for a in attaches:
            check_eq(a.finish(), 0, a.describe())
        check_eq([os.path.basename(a.session) for a in attaches], ["r-0", "r-1"], "sessions")
        out = os.path.join(job.dir, "merged")
        m = subprocess.run([SYSCOPE, "merge", "-o", out] + [a.session for a in attaches],
                           capture_output=True, text=True, timeout=300)
        check_eq(m.returncode, 0, m.stderr)
        for r in ("r-0", "r-1"):
            check(re.search(rf"{r}\S*: an MPI rank with no clock sync \(syscope attach came "
                            r"after its MPI_Init\).*; its messages get no flows", m.stderr),
                  m.stderr)
        db = os.path.join(out, "rocpd-merged.db")
        t = pftrace.Trace(open(os.path.join(out, "perfetto-trace-merged.pftrace"), "rb").read())
        procs = sorted(i["name"] for i in t.tracks.values() if i["kind"] == "process")
        check_eq(procs, ["rank 0: mpi_attach", "rank 1: mpi_attach"], "one job of two ranks")
        # Message counts start at each attach: no send can be paired with its receive.
        check_eq((t.errors, t.flows), ([], []), "no flow drawn between attached ranks")
        pids = job.ranks()
        r0, r1 = mpi_regions(db, pids[0]), mpi_regions(db, pids[1])
        check_rank0_rounds(r0)
        check_all(r1, "MPI_Recv", {"bytes_received": "4000", "peer": "0", "comm": "1"},
                  {"tag": "5"})
        check_all(r1, "MPI_Recv", {"bytes_received": "4", "peer": "0", "comm": BEFORE},
                  {"tag": "7"})
        s = subprocess.run([SYSCOPE, "summary", "--format", "json", db], capture_output=True,
                           text=True, timeout=300)
        check_eq(s.returncode, 0, s.stderr)
        check_eq(sorted(r["rank"] for r in json.loads(s.stdout)["mpi_ranks"]), [0, 1],
                 "time in MPI of both ranks")
        job.check_answer(0)
    finally:
        job.kill()


def test_both_ranks_attached_by_one_command():
    need_mpi("mpi_attach")
    job = Job()
    try:
        pids = job.ranks()
        a = Attach(pids[0], "-p", str(pids[1]), "--parallel=mpi", "--no-time-output", "-o",
                   "job", "-d", "3")
        line = a.wait_attached()
        check(f"attached to processes {pids[0]}, {pids[1]}" in line, line)
        check_eq(a.finish(), 0, a.describe())
        check(a.session, f"no session written\n{a.describe()}")
        check_eq([e["ended_by"] for e in a.info()["attach"]], ["duration"] * 2, "both ends")
        rounds = check_rank0_rounds(mpi_regions(rank_db(a.session, pids[0])))
        r1 = mpi_regions(rank_db(a.session, pids[1]))
        check_all(r1, "MPI_Recv", {"bytes_received": "4000", "peer": "0", "comm": "1"},
                  {"tag": "5"})
        check_eq(sorted(a.metadata(p)["mpi"]["rank"] for p in pids), [0, 1], "the ranks")
        # One session is one job: the summary reads both ranks' databases together.
        s = subprocess.run([SYSCOPE, "summary", "--format", "json", a.session],
                           capture_output=True, text=True, timeout=300)
        check_eq(s.returncode, 0, s.stderr)
        summary = json.loads(s.stdout)
        check_eq(sorted(r["rank"] for r in summary["mpi_ranks"]), [0, 1],
                 "time in MPI of both ranks")
        colls = [r.get("collective") for r in summary.get("mpi_collectives", [])]
        check("MPI_Allreduce" in colls, f"collectives: {summary.get('mpi_collectives')}")
        job.check_answer(rounds)
    finally:
        job.kill()


def test_mpi_loaded_local_is_found():
    """Attached before MPI_Init to a rank whose MPI a plugin loaded local (mpi_dlopen.c)."""
    need_mpi("mpi_dlopen")
    job = Job("mpi_dlopen", started=False)
    try:
        pid = int(job.expect(r"^loaded pid=(\d+)$").group(1))  # either rank
        a = Attach(pid, "--parallel=mpi", "--no-time-output", "-o", "local-%rank%", "-d", "3")
        a.wait_attached()
        open(job.stop_file + ".go", "w").close()
        job.started()
        check_eq(a.finish(), 0, a.describe())
        check(re.search(r"attach: --parallel=mpi: \S*libmpi\S* was loaded local \(RTLD_LOCAL, "
                        r"with \S*libmpi_attach_plugin.so\): made global", a.err), a.err)
        calls = mpi_regions(rank_db(a.session, pid))
        rank = a.metadata(pid)["mpi"]["rank"]
        # MPI_Init came after the attach: the world is noted there, as under `run`.
        check_eq([c.get("rank") for c in calls["MPI_Init"]], [str(rank)], "MPI_Init's rank")
        check_all(calls, "MPI_Allreduce", {"bytes_sent": "4", "comm_size": "2"})
        if rank == 0:
            check_rank0_rounds(calls)
        else:
            check_all(calls, "MPI_Recv", {"bytes_received": "4000", "peer": "0", "comm": "1"},
                      {"tag": "5"})
        # Made after the attach: the reversed communicator has a number of creation.
        check_all(calls, "MPI_Comm_split", {"comm": "1", "comm_size": "2"})
        job.check_answer(len(calls["MPI_Allreduce"]))
    finally:
        job.kill()


def test_attached_again_registers_one_fork_handler():
    need_mpi("mpi_attach")
    job = Job()
    try:
        for i in range(3):
            a = Attach(job.pid, "--parallel=mpi", "-d", "1")
            a.wait_attached()
            check_eq(a.finish(), 0, a.describe())
            check(len(mpi_regions(rank_db(a.session, job.pid)).get("MPI_Send", [])) > 0,
                  f"attach {i + 1} records")
        job.check_answer(0)
        # mpi_atfork_count.c, linked into the fixture, counts them at the rank's end.
        counts = re.findall(rf"^atfork pid={job.pid} mpi-tracer=(\d+) runtime=(\d+)$", job.err,
                            re.M)
        # libsyscope.so's: attach.c's and loader.c's, each once; the MPI tracer's once.
        check_eq(counts, [("1", "2")], f"fork handlers after 3 attaches\n{job.err}")
    finally:
        job.kill()


def test_process_without_mpi_is_told_and_sampled():
    t = Target("attach_locks")
    try:
        a = Attach(t.pid, "--parallel=mpi", "--output-format", "json")
        a.wait_attached()
        t.send("contend 3")
        t.expect(r"^contend lock=")
        check_eq(a.finish(signal.SIGINT), 0, a.describe())
        check_session(a, t.pid, "SIGINT")
        check(re.search(r"attach: --parallel=mpi: no MPI library in the process", a.err), a.err)
        check_eq(t.finish(), 0, f"fixture status\n{t.lines}")
    finally:
        t.kill()


if __name__ == "__main__":
    harness.main(globals())
