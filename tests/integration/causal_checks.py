"""What the causal tests share: a `syscope causal` run that is made once more, twice as long,
only when a loaded machine starved it (too few samples or experiments in the units judged, or
a baseline too noisy), and the profile's unit of a name."""
import json
import os

from harness import check, check_eq, syscope


def causal_once(args, seconds):
    r = syscope("causal", "--no-summary", *args, "--", *seconds)
    check_eq(r.rc, 0, r.describe())
    check(os.path.exists(r.path("causal.json")), f"no causal.json in {r.files()}\n{r.err}")
    with open(r.path("causal.json")) as f:
        return r, json.load(f)


def starved(doc, units, min_samples, min_runs):
    """Why the run cannot be judged, or None: a unit of `units` with fewer samples in scope
    than min_samples, or fewer than min_runs experiments at a speedup tried (a loaded
    machine kept the program off the CPUs: its iterations got slow, so the experiments got
    long and few), or a baseline too noisy."""
    found = {u["name"]: u for u in doc["units"]}
    few = {n: found[n]["samples"] if n in found else 0 for n in units
           if n not in found or found[n]["samples"] < min_samples}
    if few:
        return f"too few samples in scope: {few} (fewer than {min_samples})"
    runs = {(n, e["speedup"]): e["experiments"] for n in units for e in found[n]["speedups"]
            if e["speedup"] and e["experiments"] < min_runs}
    if runs:
        return f"too few experiments: {runs} (fewer than {min_runs})"
    return noisy_baseline(doc)


def noisy_baseline(doc, widest=0.15):
    """Why the run cannot be judged: the profile's own 95% interval of the baseline (the
    progress rate at 0%) wider than +-widest, which a machine whose load comes and goes
    gives; or None."""
    ci = [e["ci95"] for u in doc["units"] for e in u["speedups"]
          if not e["speedup"] and e["ci95"] is not None]
    if ci and ci[0] > widest:
        return f"a baseline too noisy to judge: +-{ci[0]:.2f} (over +-{widest})"
    return None


def causal(*args, seconds, units=(), min_samples=200, min_runs=4):
    """The causal run; made once more, twice as long, only when one of `units` got too few
    samples or experiments, or the baseline was too noisy (the reason is printed). The
    longer run is judged when each speedup of each unit has at least two experiments (a
    starved machine makes experiments long and few); only when it has fewer is it made a
    third time, twice as long again, and a third run still that starved fails."""
    r, doc = causal_once(args, seconds)
    why = starved(doc, units, min_samples, min_runs)
    for attempt in (2, 3):
        if not why or (attempt == 3 and "noisy" in why):
            break
        print(f"  {why}: once more, twice as long")
        seconds = [seconds[0], str(2 * float(seconds[1]))] + list(seconds[2:])
        r, doc = causal_once(args, seconds)
        why = starved(doc, units, min_samples, min(min_runs, 2))
    check(not why or "noisy" in why, f"three runs: {why}")  # noisy: judged all the same
    return r, doc


def unit(doc, name):
    found = [u for u in doc["units"] if u["name"] == name]
    check_eq(len(found), 1, f"unit {name} in {[u['name'] for u in doc['units']]}")
    return found[0]
