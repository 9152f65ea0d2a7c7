"""syscope causal: a thread blocked in read() on a pipe or socket, woken by the thread that
was delayed meanwhile, is credited with those delays (Coz's rule), as lock and semaphore
waiters are.

causal_pipe: the main thread sends a request over a pipe (or a socket pair) and blocks in
read() for the reply; the server thread, blocked in read() for the request, serves it (2 units
of work) and replies; then the main thread does its own work (local, 1 unit). A serial loop
over two threads: speeding serve by s speeds the program by 2s/3 (33% at 50%), local by s/3
(17%). Without the credit each woken thread pays the delays again and both
predictions fall to about 0, so the bounds below separate the two cases widely; loaded
machines make the estimates noisy, so they are loose and compare the two lines.

causal_fork: the work in fork children, each of which runs experiments of its own (here, not
in test_causal.py, so that each file stays well within its time limit on a loaded machine)."""
import harness
import rawdump
import records
from harness import check, check_eq, fixture, source_line

import causal_checks
from causal_checks import unit

FORK_HOT = source_line("causal_fork.c", "/* HOT */")
FORK_COLD = source_line("causal_fork.c", "/* COLD */")


def causal(kind):
    """The run, made once more (twice as long) only when serve or local was starved."""
    return causal_checks.causal("-F", "^(serve|local)$", "--selection", "fixed", "-S", "0,50",
                                seconds=[fixture("causal_pipe"), "16", kind],
                                units=("serve", "local"))


def check_credited(kind):
    r, doc = causal(kind)
    check_eq(sorted(u["name"] for u in doc["units"]), ["local", "serve"], "the units in scope")
    check_eq(doc["progress_point"], "iteration", "the main thread's progress point")
    check_eq(doc["units"][0]["name"], "serve", f"serve first: {doc['units']}")
    serve, local = unit(doc, "serve"), unit(doc, "local")
    # Truth at 50%: serve 33%, local 17%; without the credit both about 0.
    check(serve["mean"] > 0.10, f"serve helps (the reader was credited): {serve['mean']}")
    check(serve["mean"] > local["mean"], f"serve {serve['mean']} > local {local['mean']}")
    check(-0.1 < local["mean"] < serve["mean"], f"local in between: {local['mean']}")
    return doc


def test_pipe_reader_blocked_in_read_is_credited():
    check_credited("pipe")


def test_socket_reader_blocked_in_read_is_credited():
    check_credited("socket")


def test_fork_children_run_experiments_of_their_own():
    # causal_fork does its work in two children forked one after the other (the loop of
    # causal_serial: the hot line 2/3 of the time); the parent only waits. Each child runs
    # a controller of its own, its experiments and point names in its own raw file.
    hot, cold = f"causal_fork.c:{FORK_HOT}", f"causal_fork.c:{FORK_COLD}"
    r, doc = causal_checks.causal("-l", f"{hot},{cold}", "--selection", "fixed", "-S",
                                  "0,50", seconds=[fixture("causal_fork"), "20", "2"],
                                  units=(hot, cold))
    check(r.out.count("worker=") == 2, r.out)
    per_file = {}
    for path in r.raw_files():
        with open(path, "rb") as f:
            data = f.read()
        header = rawdump.parse_header(data)
        types = [rtype for _tid, rtype, _flags, _p in rawdump.records(data)]
        per_file[header["pid"]] = (header["ppid"], types.count(records.CAUSAL_EXPERIMENT),
                                   types.count(records.CAUSAL_POINT))
    parent = r.main_pid()
    kids = {pid: v for pid, v in per_file.items() if v[0] == parent}
    check_eq(len(kids), 2, f"two children's files: {per_file}")
    for pid, (_ppid, exps, points) in kids.items():
        check(exps >= 2, f"child {pid}: {exps} experiments (an experiment and its baseline)")
        check(points >= 1, f"child {pid} names its progress point ({points})")
    check_eq(doc["progress_point"], "iteration", "the children's point")
    check_eq([u["name"] for u in doc["units"]], [hot, cold], "the hot line first")
    h, c = unit(doc, hot), unit(doc, cold)
    # Truth at 50%: hot 33%, cold 17% (bounds loose: a loaded machine).
    check(0.05 < predicted(h, 0.5) < 0.60, f"hot at 50%: {predicted(h, 0.5)}")
    check(predicted(h, 0.5) > predicted(c, 0.5), "the hot line helps more than the cold one")


def predicted(u, speedup):
    return [s["predicted"] for s in u["speedups"] if abs(s["speedup"] - speedup) < 1e-9][0]


harness.main(globals())
