"""Test harness for syscope's integration tests: run the real syscope on fixture programs and
read what it wrote. Standard library only.

Each test module defines test_* functions and ends with `harness.main(globals())`; a test
passes by returning, fails by raising, and skips with `raise Skip("reason")`.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("SYSCOPE_TEST_SOURCE", os.path.abspath(os.path.join(HERE, "..", "..")))
BUILD = os.environ.get("SYSCOPE_TEST_BUILD", os.path.join(SOURCE, "build"))
SYSCOPE = os.path.join(BUILD, "bin", "syscope")
FIXTURES = os.path.join(BUILD, "fixtures")
sys.path.insert(0, os.path.join(SOURCE, "tests", "tools"))


# Sessions keep raw/ after their conversion (syscope removes it by default): tests read raw
# records and convert sessions again, also those that start syscope themselves.
# syscope(..., keep_raw=False) tests the default.
os.environ["SYSCOPE_KEEP_RAW"] = "true"


class Skip(Exception):
    pass


def descendant(pid, name):
    """The pid of a process running `name` among `pid`'s descendants, or None."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(k) for k in f.read().split()]
    except OSError:
        return None
    for k in kids:
        try:
            with open(f"/proc/{k}/comm") as f:
                if f.read().strip() == name:
                    return k
        except OSError:
            pass
        found = descendant(k, name)
        if found:
            return found
    return None


def fixture(name):
    return os.path.join(FIXTURES, name)


def need_gpu(name=None):
    """Skip, saying why, without an NVIDIA GPU and driver, without syscope's CUDA tracing
    (built only with CUPTI), or, given a fixture's name, without that fixture (no nvcc)."""
    if name is not None and not os.path.exists(fixture(name)):
        raise Skip(f"{name} not built: no CUDA compiler (nvcc) or CUPTI at build time")
    if not os.path.exists(os.path.join(BUILD, "lib", "syscope", "libsyscope-cuda.so")):
        raise Skip("syscope was built without CUDA tracing (no CUPTI)")
    smi = shutil.which("nvidia-smi")
    if not smi or subprocess.run([smi, "-L"], capture_output=True).returncode != 0:
        raise Skip("no NVIDIA GPU or driver on this machine")


def source_line(fixture_source, marker):
    """Line number of the line holding `marker` in tests/programs/<fixture_source>."""
    path = os.path.join(SOURCE, "tests", "programs", fixture_source)
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if marker in line:
                return n
    raise AssertionError(f"{marker} not in {path}")


def check(cond, msg="check failed"):
    if not cond:
        raise AssertionError(msg)


def check_eq(a, b, what=""):
    if a != b:
        raise AssertionError(f"{what}: {a!r} != {b!r}")


class Profile:
    """One <metric>-<pid>.json."""

    def __init__(self, path):
        with open(path) as f:
            self.doc = json.load(f)
        self.path = path
        self.metric = self.doc["syscope"]["metric"]
        self.meta = self.doc["syscope"]
        self.timemory = self.doc["timemory"][self.metric]

    @property
    def total(self):
        return self.meta["samples"]

    def function(self, name):
        for f in self.meta["functions"]:
            if f["name"] == name:
                return f
        return None

    def self_samples(self, name):
        f = self.function(name)
        return f["self_samples"] if f else 0

    def samples(self, name):
        f = self.function(name)
        return f["samples"] if f else 0

    def function_names(self):
        return [f["name"] for f in self.meta["functions"]]

    def threads(self):
        return self.meta["threads"]

    def roots(self):
        """The dummy root of each thread's tree: under "graph", or under "mpi" at the
        process's rank (docs/output-formats.md, hatchet)."""
        ranks = self.timemory.get("graph") or self.timemory["mpi"]
        return [root for rank in ranks for root in rank]

    def thread_trees(self):
        """{thread index: dummy root node} of the hierarchical graph."""
        return {root["node"]["tid"]: root for root in self.roots()}

    def max_depth(self):
        def depth(node, d):
            return max([d] + [depth(c, d + 1) for c in node["children"]])
        return max(depth(r, 0) for r in self.roots())


def children(node):
    """A call-tree node's children (wall_clock or sampling profile JSON), by name."""
    return {c["node"]["name"]: c for c in node["children"]}


def count(node):
    """How many times a call-tree node's call was made."""
    return node["node"]["inclusive"]["stats"]["count"]


def calls_of(profile):
    """{function: calls} from a profile's flat table of functions."""
    return {f["name"]: f["calls"] for f in profile.meta["functions"]}


class Result:
    def __init__(self, proc, workdir, session, elapsed):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.workdir = workdir
        self.session = session
        self.elapsed = elapsed

    def files(self):
        return sorted(os.listdir(self.session)) if self.session else []

    def path(self, name):
        return os.path.join(self.session, name)

    def pids(self):
        return sorted(int(m.group(1)) for f in self.files()
                      for m in [re.match(r"metadata-(\d+)\.json$", f)] if m)

    def metadata(self, pid=None):
        pid = pid if pid is not None else self.pids()[0]
        with open(self.path(f"metadata-{pid}.json")) as f:
            return json.load(f)

    def profile(self, metric="sampling_cpu_clock", pid=None):
        if pid is None:
            pid = self.main_pid()
        path = self.path(f"{metric}-{pid}.json")
        check(os.path.exists(path), f"no {os.path.basename(path)} in {self.files()}\n{self.err}")
        return Profile(path)

    def main_pid(self):
        with open(self.path("session.json")) as f:
            return json.load(f)["pid"]

    def raw_files(self):
        return sorted(glob.glob(os.path.join(self.session, "raw", "*.sraw")))

    def describe(self):
        return f"rc={self.rc}\nstdout:\n{self.out}\nstderr:\n{self.err}\nsession: {self.session}"


_workdirs = []
GEN_SESSION = os.path.join(BUILD, "bin", "gen_session")


def gen_session(*args, workdir=None):
    """Write a synthetic session with tests/tools/gen_session (see its usage) into a fresh
    folder, or into `workdir`; returns the session folder."""
    workdir = workdir or tempfile.mkdtemp(prefix="syscope-gen-")
    if workdir not in _workdirs:
        _workdirs.append(workdir)
    session = os.path.join(workdir, "session-%d" % len(os.listdir(workdir)))
    subprocess.run([GEN_SESSION, session] + [str(a) for a in args], check=True)
    return session


def syscope(*args, input=None, env=None, timeout=300, cwd=None, keep_raw=True):
    """Run syscope with `args` in a fresh folder; returns a Result with its session folder.
    Sessions keep their raw/ folder (tests read raw records and convert again) unless
    `keep_raw` is False, which leaves syscope's own default."""
    workdir = cwd or tempfile.mkdtemp(prefix="syscope-it-")
    os.chmod(workdir, 0o755)  # programs that drop root must still reach their session
    _workdirs.append(workdir)
    full_env = dict(os.environ)
    if not keep_raw:
        full_env.pop("SYSCOPE_KEEP_RAW", None)
    full_env.update(env or {})
    t0 = time.monotonic()
    proc = subprocess.run([SYSCOPE] + [str(a) for a in args], input=input, env=full_env,
                          cwd=workdir, capture_output=True, text=True, timeout=timeout)
    elapsed = time.monotonic() - t0
    m = re.findall(r"wrote \d+ files? to (.*)/\n", proc.stderr)
    session = m[-1] if m else None
    if not session:
        found = sorted(glob.glob(os.path.join(workdir, "syscope-*-output", "*")))
        session = found[-1] if found else None
    return Result(proc, workdir, session, elapsed)


def main(namespace):
    tests = [(n, f) for n, f in sorted(namespace.items())
             if n.startswith("test_") and callable(f)]
    only = sys.argv[1:]
    failed = ran = 0
    for name, fn in tests:
        if only and name not in only:
            continue
        t0 = time.monotonic()
        try:
            fn()
            ran += 1
            print(f"OK    {name} ({time.monotonic() - t0:.1f}s)", flush=True)
        except Skip as s:
            print(f"SKIP  {name}: {s}", flush=True)
        except Exception:
            failed += 1
            print(f"FAIL  {name}", flush=True)
            traceback.print_exc()
    if not failed:
        for d in _workdirs:
            shutil.rmtree(d, ignore_errors=True)
    else:
        print("kept for inspection:", " ".join(_workdirs))
    # 77: every test skipped, which CTest reports as a skip (SKIP_RETURN_CODE).
    sys.exit(1 if failed else 0 if ran else 77)
