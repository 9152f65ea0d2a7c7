"""syscope causal: a thread blocked in read() on a pipe or socket, woken by the thread that
was delayed meanwhile, is credited with those delays (Coz's rule), as lock and semaphore
waiters are.

causal_pipe: the main thread sends a request over a pipe (or a socket pair) and blocks in
read() for the reply; the server thread, blocked in read() for the request, serves it (2 units
of work) and replies; then the main thread does its own work (local, 1 unit). A serial loop
over two threads: speeding serve by s speeds the program by 2s/3 (33% at 50%), local by s/3
(17%). Without the credit each woken thread pays the delays again and both
predictions fall to about 0, so the bounds below separate the two cases widely; loaded
machines make the estimates noisy, so they are loose and compare the two lines."""
import harness
from harness import check, check_eq, fixture

import causal_checks
from causal_checks import unit


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


harness.main(globals())
