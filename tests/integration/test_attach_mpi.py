"""syscope attach --parallel=mpi: rank 0 of a running `mpirun -np 2` job
(tests/programs/mpi_attach.c), attached for a few seconds, records its MPI calls as regions
with the arguments `run` gives them (bytes, peer, tag, communicator); -o's %rank% and %size%
and the metadata name the rank's job; after the detach the job goes on and ends with its
own correct answer. A process without MPI is told so and sampled all the same."""
import glob
import json
import os
import re
import signal
import subprocess
import tempfile
import time

import harness
from harness import check, check_eq, fixture
from test_attach import Attach, Target, check_session, expect_line
from test_mpi import MPIRUN, need_mpi
from rocpd_checks import rows


class Job:
    """mpirun -np 2 mpi_attach STOP_FILE: its rank 0's pid, and a stop file to end it."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="syscope-attach-mpi-")
        os.chmod(self.dir, 0o755)
        harness._workdirs.append(self.dir)
        self.stop_file = os.path.join(self.dir, "stop")
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        self.proc = subprocess.Popen(
            [MPIRUN, "--oversubscribe", "-np", "2", fixture("mpi_attach"), self.stop_file],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.lines = []
        self.pid = int(self.expect(r"^pid=(\d+)$").group(1))
        self.expect(r"^round=1$")  # past MPI_Init: the attach finds the world made

    def expect(self, pattern):
        return expect_line(self.proc, self.lines, pattern, "the job")

    def finish(self):
        open(self.stop_file, "w").close()
        out, err = self.proc.communicate(timeout=300)
        self.lines += out.splitlines()
        self.err = err
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def mpi_regions(folder, pid):
    """{name: [args]} of the MPI regions of the attached rank's database."""
    db = glob.glob(os.path.join(folder, f"rocpd-{pid}.db"))
    check_eq(len(db), 1, f"the rank's database in {folder}: {os.listdir(folder)}")
    import sqlite3
    con = sqlite3.connect(db[0])
    calls = {}
    for rid, name in rows(con, "SELECT id, name FROM regions WHERE category = 'MPI_API'"):
        args = dict(rows(con, "SELECT name, value FROM region_args WHERE id = ?", rid))
        calls.setdefault(name, []).append(args)
    return calls


def check_all(calls, name, want):
    got = {tuple(sorted((k, a.get(k)) for k in want)) for a in calls[name]}
    check_eq(got, {tuple(sorted(want.items()))}, f"{name}'s arguments")


def test_rank_attached_records_its_mpi_calls_and_the_job_goes_on():
    need_mpi("mpi_attach")
    job = Job()
    try:
        a = Attach(job.pid, "--parallel=mpi", "--no-time-output", "-o", "att-%rank%-of-%size%",
                   "-d", "3")
        a.wait_attached()
        check_eq(a.finish(), 0, a.describe())
        check_session(a, job.pid, "duration")
        check_eq(os.path.basename(a.session), "att-0-of-2", "-o's %rank% and %size%: the job's")
        check(re.search(r"attach: --parallel=mpi: rank 0; \d+ MPI functions wrapped", a.err),
              a.err)
        calls = mpi_regions(a.session, job.pid)
        for name in ("MPI_Send", "MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Allreduce"):
            check(len(calls.get(name, [])) > 0, f"{name} recorded: {sorted(calls)}")
        # Rank 0 sends 1000 ints (tag 5) and 10 doubles (tag 6) to rank 1 each round.
        check_all(calls, "MPI_Send", {"bytes_sent": "4000", "peer": "1", "tag": "5", "comm": "1"})
        check_all(calls, "MPI_Isend", {"bytes_sent": "80", "peer": "1", "tag": "6", "comm": "1"})
        check_all(calls, "MPI_Irecv", {"peer": "1", "tag": "6"})
        check_all(calls, "MPI_Waitall", {"bytes_sent": "80", "bytes_received": "80"})
        check_all(calls, "MPI_Allreduce", {"bytes_sent": "4", "comm_size": "2"})
        rounds = len(calls["MPI_Allreduce"])
        check(abs(len(calls["MPI_Send"]) - rounds) <= 1, f"one send a round: {calls.keys()}")
        check_eq(a.metadata(job.pid)["mpi"]["rank"], 0, "the metadata's rank")
        check_eq(a.metadata(job.pid)["mpi"]["size"], 2, "the metadata's size")

        # Detached: the job goes on (more rounds than were recorded) and ends with its answer.
        time.sleep(1)
        check_eq(job.finish(), 0, f"the job's status\n{job.lines}\n{job.err}")
        done = [re.match(r"done rounds=(\d+) errors=(\d+)$", s) for s in job.lines]
        done = [m for m in done if m]
        check_eq(len(done), 1, f"the job's answer: {job.lines}")
        check_eq(done[0].group(2), "0", "errors the ranks found in their messages")
        check(int(done[0].group(1)) > rounds, f"rounds after the detach: {done[0].group(0)}")
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
