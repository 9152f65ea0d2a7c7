"""Perfetto's own trace processor on syscope's traces, where it is present: the engine behind
ui.perfetto.dev reads the file and answers SQL. The shell lives outside the repository
(../shared/tools/trace_processor_shell, see its README there, or $SYSCOPE_TRACE_PROCESSOR);
where it is absent or does not start, `available()` says why and the checks are left out."""
import csv
import io
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "tools",
                                        "trace_processor_shell"))
_state = {}


def shell():
    return os.environ.get("SYSCOPE_TRACE_PROCESSOR") or DEFAULT


def available():
    """None when the trace processor runs here, else why not."""
    if "why" not in _state:
        path = shell()
        if not os.access(path, os.X_OK):
            _state["why"] = f"no Perfetto trace processor at {path}"
        else:
            try:
                p = subprocess.run([path, "--version"], capture_output=True, text=True,
                                   timeout=60)
                _state["why"] = None if p.returncode == 0 else \
                    f"{path} does not start: {(p.stderr or p.stdout)[-300:]}"
            except (OSError, subprocess.TimeoutExpired) as e:
                _state["why"] = f"{path} does not start: {e}"
    return _state["why"]


def query(trace_path, sql):
    """Rows (lists of strings, as the shell prints them) of one SELECT on a trace."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(sql)
        qpath = f.name
    try:
        p = subprocess.run([shell(), "-q", qpath, trace_path], capture_output=True, text=True,
                           timeout=300)
    finally:
        os.unlink(qpath)
    if p.returncode != 0:
        raise AssertionError(f"trace processor failed on {sql!r}: {p.stderr[-2000:]}")
    out = p.stdout
    rows = list(csv.reader(io.StringIO(out[out.find('"'):] if '"' in out else "")))
    return rows[1:]  # the first row names the columns


def problems(trace_path):
    """The stats the UI would show as errors or data losses: [(name, index, value)]."""
    return [tuple(r) for r in query(
        trace_path, "SELECT name, idx, value FROM stats WHERE value > 0 AND severity IN "
        "('error', 'data_loss') ORDER BY name")]


def counts(trace_path):
    """What the trace processor made of a trace: slices (instants included), CPU samples,
    counter values (but those it makes itself of each PerfSample's timebase) and flows."""
    (row,) = query(trace_path,
                   "SELECT (SELECT COUNT(*) FROM slice), (SELECT COUNT(*) FROM perf_sample), "
                   "(SELECT COUNT(*) FROM counter C JOIN track T ON T.id = C.track_id WHERE "
                   "T.type != 'perf_counter_track'), (SELECT COUNT(*) FROM flow)")
    return dict(zip(("slices", "samples", "counters", "flows"), (int(v) for v in row)))


def check_trace(trace_path, trace):
    """What is wrong with `trace_path` as the trace processor reads it: a stat with an error
    or a loss, or other counts than syscope wrote into it (`trace`, decoded by
    tests/tools/pftrace.py). Returns (problems, None) when it checked, else ([], why not)."""
    why = available()
    if why:
        return [], why
    found = [f"trace processor stat {name}[{idx}] = {value}"
             for name, idx, value in problems(trace_path)]
    got = counts(trace_path)
    wrote = {"slices": len(trace.slices) + len(trace.instants), "samples": len(trace.samples),
             "counters": len(trace.counters), "flows": len(trace.flows)}
    if got != wrote:
        found.append(f"the trace processor shows {got}, syscope wrote {wrote}")
    return found, None


def check_bytes(data, trace):
    """check_trace of a trace given as bytes."""
    if available():
        return [], available()
    with tempfile.NamedTemporaryFile(suffix=".pftrace", delete=False) as f:
        f.write(data)
        path = f.name
    try:
        return check_trace(path, trace)
    finally:
        os.unlink(path)
