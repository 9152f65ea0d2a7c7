"""The cost of `syscope instrument` around the program (issue 20 goal 1): the analysis of a
module is cached by its build id, size and modification time ($XDG_CACHE_HOME/syscope), a hit
and a miss are told at --verbose, a stale or damaged entry is never used, and what a run
patches and records is the same with and without the cache; throttled functions keep exact
counts (a throttled run's calls per function are those of a run that records every call)."""
import json
import os
import re
import shutil
import subprocess
import tempfile

import harness
from harness import Skip, calls_of, check, check_eq, fixture, syscope

N = 200000  # calls of throttle_skip's tiny: throttled after --throttle-calls


def cache_home():
    d = tempfile.mkdtemp(prefix="syscope-cache-")
    harness._workdirs.append(d)
    return d


def instrument(cache, program, *args, extra=()):
    r = syscope("instrument", "-v", "-I", "^(tiny|slow)$", "--output-format", "json", *extra,
                "--", program, *args, env={"XDG_CACHE_HOME": cache})
    check_eq(r.rc, 0, r.describe())
    return r


def cache_lines(r, program):
    """The analysis cache's messages about `program` (its real path)."""
    real = os.path.realpath(program)
    return [line for line in r.err.splitlines()
            if f"instrument: {real}: analysis" in line and "cache" in line]


def entries(cache):
    d = os.path.join(cache, "syscope", "analysis")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def analysis(r):
    """instrumentation.json of a run: every function, its state, reason and patch window."""
    with open(r.path("instrumentation.json")) as f:
        return json.load(f)["modules"]


def same_analysis(a, b, what):
    """Two runs' instrumentation.json agree on every function (the analysis time aside)."""
    def strip(mods):
        return [{k: v for k, v in m.items() if k != "analysis_ms"} for m in mods]
    check_eq(strip(a), strip(b), what)


def plan(r):
    with open(r.path("raw/instrument-plan.bin"), "rb") as f:
        return f.read()


def copy_of(name, tmp):
    path = os.path.join(tmp, name)
    shutil.copy2(fixture(name), path)
    return path


def test_cache_miss_then_hit_gives_the_same_run():
    cache, tmp = cache_home(), cache_home()
    program = copy_of("throttle_skip", tmp)
    first = instrument(cache, program, N)
    lines = cache_lines(first, program)
    check(any("analysis cache miss (none yet)" in x for x in lines), f"a miss: {first.err}")
    check(any("analysis saved to the cache" in x for x in lines), f"saved: {first.err}")
    check_eq(len(entries(cache)), 1, "one entry, named by the build id")
    check(re.fullmatch(r"[0-9a-f]{40}", entries(cache)[0]), f"build id: {entries(cache)}")
    second = instrument(cache, program, N)
    lines = cache_lines(second, program)
    check_eq(len(lines), 1, f"one message: {lines}")
    check("analysis from the cache" in lines[0], f"a hit: {second.err}")
    check(re.search(r"functions instrumented.*\(analysis from the cache, [\d.]+ ms\)",
                    second.err), f"the summary line says so: {second.err}")
    same_analysis(analysis(first), analysis(second), "the same functions, states, windows")
    check_eq(plan(first), plan(second), "the same patch plan, byte for byte")
    for r in (first, second):
        fl = calls_of(r.profile("wall_clock"))
        check_eq((fl.get("tiny"), fl.get("slow")), (N, 50), f"exact counts: {fl}")


def test_no_analysis_cache_writes_and_reads_nothing():
    cache, tmp = cache_home(), cache_home()
    program = copy_of("throttle_skip", tmp)
    r = instrument(cache, program, N, extra=("--no-analysis-cache",))
    check_eq(cache_lines(r, program), [], f"no cache messages: {r.err}")
    check_eq(entries(cache), [], "nothing written to the cache")
    r = instrument(cache, program, N)
    check(any("miss (none yet)" in x for x in cache_lines(r, program)), r.err)
    env_off = syscope("instrument", "-v", "-I", "^(tiny|slow)$", "--", program, N,
                      env={"XDG_CACHE_HOME": cache, "SYSCOPE_ANALYSIS_CACHE": "false"})
    check_eq(env_off.rc, 0, env_off.describe())
    check_eq(cache_lines(env_off, program), [], f"SYSCOPE_ANALYSIS_CACHE=false: {env_off.err}")


def test_stale_entry_is_not_used():
    cache, tmp = cache_home(), cache_home()
    program = copy_of("throttle_skip", tmp)
    instrument(cache, program, N)
    st = os.stat(program)
    os.utime(program, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # the file changed
    r = instrument(cache, program, N)
    lines = cache_lines(r, program)
    check(any("miss (stale: the file changed" in x for x in lines), f"stale: {r.err}")
    check(any("saved to the cache" in x for x in lines), f"replaced: {r.err}")
    check(any("from the cache" in x for x in cache_lines(instrument(cache, program, N),
                                                          program)), "then a hit again")
    # Another program at the same path: another build id, so another entry, never the old.
    shutil.copy2(fixture("patch_calls"), program)
    r = syscope("instrument", "-v", "--output-format", "json", "--", program,
                env={"XDG_CACHE_HOME": cache})
    check_eq(r.rc, 0, r.describe())
    check(any("miss (none yet)" in x for x in cache_lines(r, program)), r.err)
    fresh = syscope("instrument", "--no-analysis-cache", "--output-format", "json", "--",
                    program, env={"XDG_CACHE_HOME": cache})
    check_eq(fresh.rc, 0, fresh.describe())
    same_analysis(analysis(r), analysis(fresh), "the new program's own analysis")
    names = {f["name"] for m in analysis(r) for f in m["functions"]}
    check("slow" not in names and "call_through" in names, f"patch_calls': {sorted(names)}")


def test_damaged_entry_is_not_used():
    cache, tmp = cache_home(), cache_home()
    program = copy_of("throttle_skip", tmp)
    first = instrument(cache, program, N)
    (entry,) = entries(cache)
    path = os.path.join(cache, "syscope", "analysis", entry)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        whole = f.read()
    flipped = bytearray(whole)
    flipped[size // 2] ^= 0x10  # one bit inside a function's plan or names
    for what, damaged in (("cut short", whole[:-7]), ("one bit flipped", bytes(flipped))):
        with open(path, "wb") as f:
            f.write(damaged)
        r = instrument(cache, program, N)
        check(any("miss (damaged)" in x for x in cache_lines(r, program)),
              f"{what}: {r.err}")
        same_analysis(analysis(first), analysis(r), f"{what}: analyzed again, the same")
        check_eq(plan(first), plan(r), f"{what}: the same plan")
        with open(path, "rb") as f:
            check_eq(f.read(), whole, f"{what}: the entry written again whole")


def sqlite_calls(*flags, cache):
    if not shutil.which("sqlite3"):
        if os.environ.get("CI") == "true":
            raise AssertionError("sqlite3 is not installed (Makefile TEST_PACKAGES has it)")
        raise Skip("sqlite3 is not installed")
    query = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)"
             "\nSELECT sum(x * x % 7), count(*) FROM c;\n")
    r = syscope("instrument", "-v", "-MI", "libsqlite3", "--output-format", "json", *flags,
                "--", shutil.which("sqlite3"), ":memory:", input=query,
                env={"XDG_CACHE_HOME": cache})
    check_eq(r.rc, 0, r.describe())
    check_eq(r.out.strip(), "39999|20000", "the query's answer")
    return r, calls_of(r.profile("wall_clock"))


def test_sqlite_throttled_counts_are_exact():
    cache = cache_home()
    _, every = sqlite_calls("--no-throttle", "--no-analysis-cache", cache=cache)
    r, throttled = sqlite_calls(cache=cache)
    names = re.search(r"throttled: (\d+) functions, (\d+) calls counted", r.err)
    check(names and int(names.group(1)) >= 5, f"several functions throttled: {r.err}")
    check(every.get("sqlite3BtreeInsert", 0) >= 20000, f"the query's inserts: {every}")
    check_eq(throttled, every, "every function's calls, throttled or not")
    hit, cached = sqlite_calls(cache=cache)
    check(any("analysis from the cache" in x for x in hit.err.splitlines()
              if "libsqlite3" in x), f"libsqlite3 from the cache: {hit.err}")
    check_eq(cached, every, "the same counts with the cached analysis")


def stripped_with_debug_link(tmp, where):
    """A copy of the hot fixture stripped of its symbols and DWARF, its debug information in
    a separate file found through its debug link: beside it or in .debug/ (`where`)."""
    for tool in ("objcopy", "strip"):
        if not shutil.which(tool):
            if os.environ.get("CI") == "true":
                raise AssertionError(f"{tool} is not installed (binutils, TEST_PACKAGES)")
            raise Skip(f"{tool} is not installed")
    exe = os.path.join(tmp, "hot")
    os.makedirs(os.path.join(tmp, where), exist_ok=True)
    debug = os.path.join(tmp, where, "hot.debug")
    shutil.copy2(fixture("hot"), exe)
    for cmd in (["objcopy", "--only-keep-debug", exe, debug], ["strip", "--strip-all", exe],
                ["objcopy", f"--add-gnu-debuglink={debug}", exe]):
        subprocess.run(cmd, check=True, capture_output=True)
    return exe


def test_debug_link_found_without_a_debuginfod_server():
    line = harness.source_line("hot.c", "/* HOT_LINE */")
    for where in (".", ".debug"):
        tmp = cache_home()
        exe = stripped_with_debug_link(tmp, where)
        nm = subprocess.run(["nm", exe], capture_output=True, text=True)
        check("hot_loop" not in nm.stdout, f"{where}: the program itself has no symbols")
        r = syscope("sample", "-f", "1000", "--output-format", "json", "--", exe, "0.5",
                    env={"DEBUGINFOD_URLS": ""})
        check_eq(r.rc, 0, r.describe())
        p = r.profile()
        check(p.self_samples("hot_loop") >= 0.5 * p.total,
              f"{where}: hot_loop named from the debug file: {p.function_names()}")
        top = p.meta["lines"][0]
        check_eq((top["function"], top["line"]), ("hot_loop", line), f"{where}: its line")


if __name__ == "__main__":
    harness.main(globals())
