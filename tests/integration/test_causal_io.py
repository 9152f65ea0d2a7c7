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
import json
import os

import harness
from harness import check, check_eq, fixture, syscope

MIN_SAMPLES = 200  # in each unit: fewer, or fewer than MIN_RUNS experiments at a speedup,
MIN_RUNS = 4  # and a loaded machine starved the run
MAX_BASELINE_CI = 0.15  # the profile's 95% interval of the baseline: wider is too noisy


def causal_run(kind, seconds):
    r = syscope("causal", "--no-summary", "-F", "^(serve|local)$", "--selection", "fixed",
                "-S", "0,50", "--", fixture("causal_pipe"), str(seconds), kind)
    check_eq(r.rc, 0, r.describe())
    check(os.path.exists(r.path("causal.json")), f"no causal.json in {r.files()}\n{r.err}")
    with open(r.path("causal.json")) as f:
        return r, json.load(f)


def starved(doc):
    """Why the run cannot be judged (too few samples or experiments, a noisy baseline), or
    None."""
    found = {u["name"]: u for u in doc["units"]}
    if set(found) != {"serve", "local"}:
        return f"units {sorted(found)}"
    few = {n: u["samples"] for n, u in found.items() if u["samples"] < MIN_SAMPLES}
    runs = {(n, e["speedup"]): e["experiments"] for n, u in found.items()
            for e in u["speedups"] if e["speedup"] and e["experiments"] < MIN_RUNS}
    if few or runs:
        return f"too few samples {few} or experiments {runs}"
    ci = found["serve"]["speedups"][0]["ci95"]  # the baseline's, at 0%
    return f"a baseline too noisy to judge: +-{ci:.2f}" if ci and ci > MAX_BASELINE_CI else None


def causal(kind):
    """The run, made once more (twice as long) only when it was starved."""
    r, doc = causal_run(kind, 16)
    why = starved(doc)
    if why:
        print(f"  {why}: once more, twice as long")
        r, doc = causal_run(kind, 32)
        why = starved(doc)
        check(not why or "noisy" in why, f"twice: {why}")  # noisy: judged all the same
    return r, doc


def unit(doc, name):
    found = [u for u in doc["units"] if u["name"] == name]
    check_eq(len(found), 1, f"unit {name} in {[u['name'] for u in doc['units']]}")
    return found[0]


def check_credited(kind):
    r, doc = causal(kind)
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
