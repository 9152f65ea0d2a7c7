"""Profiles of single-process fixtures: the hot function and line, the output formats and
their agreement with the raw data, symbolization (stripped, C++, inlines), depth limits."""
import os
import re
import sqlite3
import struct
import subprocess

import harness
from harness import check, check_eq, fixture, source_line, syscope

import rawdump
import records


def raw_sample_count(result, kind=1):
    n = 0
    for path in result.raw_files():
        with open(path, "rb") as f:
            data = f.read()
        for _tid, rtype, _flags, payload in rawdump.records(data):
            if rtype == records.SAMPLE and struct.unpack_from("<H", payload, 16)[0] == kind:
                n += 1
    return n


def test_hot_function_and_line():
    r = syscope("sample", "-f", "1000", "--", fixture("hot"), "1.0", "7")
    check_eq(r.rc, 7, "exit status passes through\n" + r.describe())
    check("hot: done" in r.out, "program stdout untouched")
    p = r.profile()
    hot = p.function("hot_loop")
    check(hot is not None, f"hot_loop in {p.function_names()}")
    check(hot["self_samples"] >= 0.9 * p.total,
          f"hot_loop has {hot['self_samples']} of {p.total} samples")
    line = source_line("hot.c", "/* HOT_LINE */")
    top = p.meta["lines"][0]
    check_eq((top["function"], top["line"]), ("hot_loop", line), "top of the line profile")
    check(top["file"].endswith("tests/programs/hot.c"), top["file"])
    # The summary names the hot function with its file:line.
    check(re.search(rf"hot_loop\s+hot\.c:{line}", r.err), r.err)
    check("nothing lost" in r.err, r.err)


def test_outputs_agree_with_raw_data():
    r = syscope("sample", "-f", "500", "--", fixture("hot"), "0.6")
    check_eq(r.rc, 0, r.describe())
    pid = r.main_pid()
    expected = {f"sampling_cpu_clock-{pid}.{ext}" for ext in ("txt", "json", "folded")}
    expected |= {f"metadata-{pid}.json", f"rocpd-{pid}.db", "session.json", "raw"}
    check_eq(set(r.files()), expected, "files written")
    raw = raw_sample_count(r)
    p = r.profile()
    check(raw > 50, f"{raw} samples in the raw files")
    check_eq(p.total, raw, "JSON total vs independent raw decoder")
    # Folded: every line 'a;b;c N', counts add up to the samples.
    with open(r.path(f"sampling_cpu_clock-{pid}.folded")) as f:
        lines = f.read().splitlines()
    total = 0
    for line in lines:
        m = re.fullmatch(r"(\S.*) (\d+)", line)
        check(m, f"folded line {line!r}")
        total += int(m.group(2))
        check(";" in m.group(1) or m.group(1), line)
    check_eq(total, raw, "folded counts")
    check(any(l.split(" ")[0].endswith(";main;hot_loop") for l in lines), "\n".join(lines))
    # Text: the table header of rocprof-sys's wall_clock.txt and a row for hot_loop whose
    # COUNT matches the JSON.
    with open(r.path(f"sampling_cpu_clock-{pid}.txt")) as f:
        text = f.read()
    for col in ("LABEL", "COUNT", "DEPTH", "METRIC", "UNITS", "SUM", "MEAN", "MIN", "MAX",
                "VAR", "STDDEV", "% SELF"):
        check(f" {col} " in text, f"column {col}")
    row = re.search(r"\|00>>> +\|_hot_loop +\| +(\d+) \|", text)
    check(row, "tree row for hot_loop")
    check_eq(int(row.group(1)), p.samples("hot_loop"), "text COUNT vs JSON")
    # JSON: the timemory/hatchet layout.
    tm = p.timemory
    for key in ("properties", "type", "description", "unit_value", "unit_repr", "thread_count",
                "ranks"):
        check(key in tm, f"timemory.{p.metric}.{key}")
    check_eq(tm["unit_repr"], "sec", "unit")
    flat = tm["ranks"][0]["graph"]
    check(any(e["prefix"].endswith("|_hot_loop") for e in flat), "flat prefix")
    root = p.roots()[0]
    check_eq(root["node"]["hash"], 0, "dummy root")
    check(root["node"]["is_dummy"], "dummy root flag")
    # Inclusive samples of the root equal the total; exclusive sums add up to it.
    check_eq(root["node"]["inclusive"]["entry"]["laps"], p.total, "root laps")

    def excl(node):
        return node["node"]["exclusive"]["stats"]["count"] + sum(excl(c) for c in node["children"])
    check_eq(excl(root), p.total, "exclusive counts add up")


def test_region_profile_is_the_nesting_of_regions():
    # regions: main thread "phase A" holding three "inner", worker thread one "worker".
    r = syscope("sample", "--output-format", "text json folded", "--", fixture("regions"))
    check_eq(r.rc, 0, r.describe())
    p = r.profile("wall_clock")
    trees = p.thread_trees()
    check_eq(len(trees), 2, "a tree per thread with regions")

    def children(node):
        return {c["node"]["name"]: c for c in node["children"]}
    main = children(trees[0])
    check_eq(list(main), ["phase A"], "the main thread's outermost region")
    phase = main["phase A"]
    inner = children(phase)["inner"]
    check_eq(inner["node"]["inclusive"]["stats"]["count"], 3, "three inner calls")
    check_eq(children(trees[1])["worker"]["node"]["inclusive"]["stats"]["count"], 1, "worker")
    incl = phase["node"]["inclusive"]["stats"]["sum"]
    self_ = phase["node"]["exclusive"]["stats"]["sum"]
    check(abs(incl - self_ - inner["node"]["inclusive"]["stats"]["sum"]) < 1e-6,
          "self time is the time not in the regions inside")
    flat = {f["name"]: f for f in p.meta["functions"]}
    check_eq(flat["inner"]["module"], "user", "the category of user regions given none")
    check_eq(flat["inner"]["calls"], 3, "calls in the flat profile")
    text = open(r.path(f"wall_clock-{r.main_pid()}.txt")).read()
    row = re.search(r"\| inner +\| user +\| +3 \|", text)
    check(row, "REGIONS table: inner, 3 calls\n" + text[-1500:])
    folded = open(r.path(f"wall_clock-{r.main_pid()}.folded")).read().split("\n")
    check(any(l.startswith("phase A;inner ") for l in folded), folded)


def test_pause_resume_and_progress_points():
    r = syscope("sample", "--output-format", "json rocpd", "--", fixture("pause_resume"))
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    check_eq(p.samples("while_paused"), 0, "nothing sampled while paused")
    check(p.samples("before_pause") >= 20 and p.samples("after_resume") >= 20,
          f"sampled before and after: {p.samples('before_pause')} {p.samples('after_resume')}")
    db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
    marks = db.execute("SELECT category, json_extract(extdata, '$.message'), COUNT(*) "
                       "FROM samples WHERE category IN ('SYSCOPE_CONTROL', 'PROGRESS_POINT') "
                       "GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
    check_eq(marks, [("PROGRESS_POINT", "item", 3), ("SYSCOPE_CONTROL", "recording paused", 1),
                     ("SYSCOPE_CONTROL", "recording resumed", 1)],
             "the edges and progress points")
    check_eq(db.execute("SELECT COUNT(*) FROM regions WHERE name = 'hidden'").fetchone(), (0,),
             "a region opened while paused is not recorded")


def test_frame_pointer_unwinder():
    r = syscope("sample", "--sampling-unwinder", "fp", "-f", "500", "--", fixture("hot_fp"), "0.6")
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    check(p.self_samples("hot_loop") >= 0.9 * p.total, p.function_names())
    # The walk follows the frame-pointer chain out of the program into libc (through
    # syscope's own hook on main, built with frame pointers for this). A leaf function
    # without a frame of its own hides its caller from any frame-pointer unwinder, so
    # main itself is not required here.
    outer = p.samples("__libc_start_call_main")
    check(outer >= 0.9 * p.total, f"__libc_start_call_main has {outer} of {p.total}")


def test_stripped_binary():
    r = syscope("sample", "-f", "500", "--", fixture("hot_stripped"), "0.6")
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    # No symbols: the hot frame is module+offset, and the offset lies inside hot_loop.
    nm = subprocess.run(["nm", fixture("hot")], capture_output=True, text=True).stdout
    syms = sorted((int(a, 16), n) for a, t, n in (l.split() for l in nm.splitlines()
                                                  if len(l.split()) == 3) if t in "tT")
    start = dict((n, a) for a, n in syms)["hot_loop"]
    end = min(a for a, n in syms if a > start)
    top = p.meta["functions"][0]
    m = re.fullmatch(r"hot_stripped\+0x([0-9a-f]+)", top["name"])
    check(m, f"top function {top['name']}")
    check(start <= int(m.group(1), 16) < end, f"{top['name']} inside hot_loop [{start:#x},{end:#x})")
    check(top["self_samples"] >= 0.5 * p.total, "the hot offset dominates")


def test_cxx_demangled_names():
    r = syscope("sample", "-f", "1000", "--", fixture("templates"), "1.0")
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    names = p.function_names()
    spin = [n for n in names if n.startswith("fixture::Accumulator<double>::spin(")]
    check(spin, f"demangled template method in {names[:20]}")
    check(p.self_samples(spin[0]) > 0.3 * p.total, "spin is hot")
    check(any(n.startswith("fixture::catch_many(") for n in names), names[:20])
    check(not any(n.startswith("_Z") for n in names), "no mangled names left")


def test_depth_limit():
    r = syscope("sample", "-f", "500", "--sampling-max-depth", "64", "--",
                fixture("recurse"), "1.0", "10000")
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    check(p.total > 50, "samples")
    check(p.meta["truncated_samples"] >= 0.9 * p.total, "deep stacks marked truncated")
    check(p.max_depth() <= 65, f"tree depth {p.max_depth()} within the limit plus [truncated]")
    check(p.function("[truncated]") is not None, "truncated root")
    check(p.self_samples("leaf_work") >= 0.8 * p.total, "leaf work still attributed")
    check("deeper than --sampling-max-depth" in r.err, r.err)


def test_inline_frames():
    r = syscope("sample", "-f", "500", "--", fixture("hot"), "0.6")
    p = r.profile()
    # fixture_now() is inlined into main: it appears as its own frame under main unless
    # inlines are off.
    check(any(f["name"] == "fixture_now" for f in p.meta["functions"]) or
          p.samples("fixture_now") == 0, "inline frame naming")
    r2 = syscope("convert", "--no-inlines", "--no-summary", "-o", r.workdir + "/noinl",
                 r.session)
    check_eq(r2.rc, 0, r2.describe())
    pid = r.main_pid()
    p2 = harness.Profile(os.path.join(r.workdir, "noinl", f"sampling_cpu_clock-{pid}.json"))
    check_eq(p2.samples("fixture_now"), 0, "no inline frames with --no-inlines")
    check_eq(p2.total, p.total, "same samples")


def test_no_sample_lands_inside_syscope():
    # At 10 kHz a sample is due again while the handler still runs: it must wait for the
    # handler to return, not interrupt it (libunwind restores the signal mask inside it).
    r = syscope("sample", "-f", "10000", "--", fixture("hot"), "0.8")
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    check(p.total > 500, f"{p.total} samples: enough for the check below to mean something")
    ours = [f["name"] for f in p.meta["functions"] if f["module"] == "libsyscope.so"]
    check_eq(ours, [], "frames of syscope's own code")
    check(p.self_samples("hot_loop") > 0.95 * p.total, p.function_names()[:5])


def test_lost_records_are_counted_and_reported():
    # A disk "full" from the start: nothing can be recorded; the program runs normally and
    # the loss is reported, not hidden.
    r = syscope("sample", "--buffer-disk-reserve-mb", "1000000", "--", fixture("hot"), "0.3")
    check_eq(r.rc, 0, r.describe())
    check("hot: done" in r.out, r.out)
    m = re.search(r"LOST (\d+) records", r.err)
    check(m and int(m.group(1)) > 0, r.err)
    md = r.metadata()
    check(md["images"][0]["lost_records"] == int(m.group(1)), md["images"])


harness.main(globals())
