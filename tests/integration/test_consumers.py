"""syscope's outputs as the tools people already use read them (issue 21): rocpd's categories
and views as upstream rocpd defines them, hatchet's JSON layout, Perfetto traces checked with
Perfetto's own trace processor where it is present, and the summaries' rankings."""
import csv
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile

import harness
from harness import check, check_eq, fixture, syscope

import pftrace
import trace_processor
from rocpd_checks import check_conventions, rows

# Upstream rocpd's views, column for column (rocprofiler-sdk's data_views.sql and
# summary_views.sql, schema version 3): what users of plain sqlite3 and pandas select by name.
UPSTREAM_COLUMNS = {
    "kernel_symbols": [
        "id", "guid", "nid", "pid", "code_object_id", "kernel_name", "display_name",
        "kernel_object", "kernarg_segment_size", "kernarg_segment_alignment",
        "group_segment_size", "private_segment_size", "sgpr_count", "arch_vgpr_count",
        "accum_vgpr_count", "kernel_symbol_size", "kernel_id", "kernel_code_entry_byte_offset",
        "formatted_kernel_name", "demangled_kernel_name", "truncated_kernel_name",
        "kernel_address"],
    "pmc_info": [
        "id", "guid", "nid", "pid", "agent_abs_index", "is_constant", "is_derived", "name",
        "description", "block", "expression"],
    "pmc_events": [
        "id", "guid", "pmc_id", "event_id", "category", "name", "nid", "pid", "dispatch_id",
        "start", "end", "duration", "counter_name", "counter_value"],
    "events_args": [
        "event_id", "category", "stack_id", "parent_stack_id", "correlation_id",
        "arg_position", "arg_type", "arg_name", "arg_value", "call_stack", "line_info",
        "extdata"],
    "stream_args": [
        "argument_id", "event_id", "arg_position", "arg_type", "arg_value", "stream_id", "nid",
        "pid", "stream_name", "extdata"],
    "scratch_memory": [
        "id", "guid", "nid", "pid", "operation", "agent_name", "agent_abs_index",
        "agent_log_index", "agent_type_index", "agent_type", "queue_id", "tid", "alloc_flags",
        "start", "end", "duration", "size", "address", "correlation_id", "stack_id",
        "parent_stack_id", "corr_id", "category", "event_extdata"],
    "counters_collection": [
        "id", "guid", "dispatch_id", "kernel_id", "event_id", "correlation_id", "stack_id",
        "parent_stack_id", "pid", "tid", "agent_id", "agent_abs_index", "agent_log_index",
        "agent_type_index", "agent_type", "queue_id", "grid_size_x", "grid_size_y",
        "grid_size_z", "grid_size", "kernel_name", "kernel_region", "workgroup_size_x",
        "workgroup_size_y", "workgroup_size_z", "workgroup_size", "lds_block_size",
        "scratch_size", "vgpr_count", "accum_vgpr_count", "sgpr_count", "counter_name",
        "counter_symbol", "component", "description", "block", "expression", "value_type",
        "counter_id", "value", "start", "end", "is_constant", "is_derived", "duration",
        "category", "nid", "extdata", "code_object_id"],
    "busy": ["agent_id", "type", "GpuTime", "WallTime", "Busy"],
    "top": ["name", "total_calls", "total_duration", "average", "percentage"],
    "top_kernels": ["name", "total_calls", "total_duration", "average", "percentage"],
}


def columns(db, view):
    return [row[1] for row in db.execute(f"PRAGMA table_xinfo('{view}')")]


def summary_groups(categories):
    """The region summaries `rocpd summary` makes (rocpd/summary.py, as of schema version 3):
    one per prefix before the first '_', holding the categories that start with PREFIX_;
    markers have a summary of their own."""
    groups = {}
    for prefix in {c.split("_")[0] for c in categories}:
        if "MARKER" in prefix.upper():
            continue
        kept = [c for c in categories if c.startswith(prefix + "_")]
        check(prefix.lower() not in groups, f"two groups named {prefix.lower()}: one is lost")
        if kept:
            groups[prefix.lower()] = kept
    return groups


def test_rocpd_views_are_upstreams():
    r = syscope("sample", "-f", "500", "--output-format", "rocpd", "--", fixture("regions"))
    check_eq(r.rc, 0, r.describe())
    db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
    check_conventions(db)
    for view, expected in UPSTREAM_COLUMNS.items():
        check_eq(columns(db, view), expected, f"view {view}")


def test_rocpd_summary_keeps_every_category():
    r = syscope("sample", "-f", "500", "--output-format", "rocpd", "--", fixture("regions"))
    check_eq(r.rc, 0, r.describe())
    db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
    categories = [c for (c,) in rows(db, "SELECT DISTINCT category FROM regions_and_samples")]
    check_eq(sorted(categories), ["COUNTER_USER", "USER_REGION", "USER_compute", "timer_sampling"],
             "categories named as rocprofiler names them")
    groups = summary_groups(categories)
    check_eq(sorted(groups), ["counter", "timer", "user"], "the summaries rocpd summary makes")
    check_eq(sorted(groups["user"]), ["USER_REGION", "USER_compute"], "user summary")
    # Every region reaches a summary: none is in a category the tool drops.
    kept = {c for cats in groups.values() for c in cats}
    lost = rows(db, "SELECT name, category FROM regions_and_samples")
    check_eq([x for x in lost if x[1] not in kept], [], "regions rocpd summary would drop")
    # syscope reads its own names back: the converted session has its categories again.
    out = os.path.join(r.workdir, "from-db")
    c = syscope("convert", "-f", "csv", "-o", out, r.path(f"rocpd-{r.main_pid()}.db"))
    check_eq(c.rc, 0, c.describe())
    with open(os.path.join(out, f"regions-{r.main_pid()}.csv"), newline="") as f:
        table = list(csv.DictReader(f))
    named = {(row["Category"], row["Name"]) for row in table}
    check({("compute", "worker"), ("user", "inner"), ("user", "checkpoint"),
           ("user", "phase A")} <= named, named)
    # An outer region keeps its own name and arguments to its end (inner ones came between).
    phase = [row for row in table if row["Name"] == "phase A"]
    check_eq([row["Args"] for row in phase], ["items=42;label=alpha"], "phase A's arguments")


def ranking(err, title):
    """The rows of one ranking of the end-of-run summary: name -> (share, self share)."""
    lines = err.splitlines()
    start = next(i for i, line in enumerate(lines) if title in line)
    out = {}
    for line in lines[start + 1:]:
        m = re.match(r"syscope:\s+([\d.]+)%(?: \(self\s+([\d.]+)%\))?\s+\d+\s+(\S+)", line)
        if not m:
            break
        out[m.group(3)] = (float(m.group(1)), float(m.group(2) or m.group(1)))
    return out


def test_summaries_rank_by_total_beside_self():
    # alpha calls burn, which does 3/4 of the work; beta does the rest itself.
    r = syscope("sample", "-f", "1000", "--output-format", "rocpd", "--",
                fixture("inclusive"), "0.6")
    check_eq(r.rc, 0, r.describe())
    self_rank = ranking(r.err, "top functions by CPU time (self):")
    total_rank = ranking(r.err, "top functions by CPU time (total, with self):")
    check_eq(list(self_rank)[:2], ["burn", "beta"], "by self time")
    check("alpha" not in list(self_rank)[:2], self_rank)
    alpha_total, alpha_self = total_rank["alpha"]
    check(55 < alpha_total < 95 and alpha_self < 5, f"alpha: {total_rank['alpha']}")
    # A sample can land before main or after it returns (the loader, exit handlers), so
    # main holds nearly every sample; a function counted twice on a deep stack would go
    # past 100.
    check(99.0 <= total_rank["main"][0] <= 100.0, f"main holds every sample: {total_rank}")
    check(abs(total_rank["burn"][0] - alpha_total) < 2, "burn's time is alpha's")

    s = syscope("summary", "--format", "json", "-n", "1000", r.session)
    check_eq(s.rc, 0, s.describe())
    doc = json.loads(s.out)
    by_self = doc["functions"]
    check_eq([row["function"] for row in by_self[:2]], ["burn", "beta"], "summary by self")
    check(50 < by_self[0]["self_percent"] < 95, by_self[0])
    by_total = {row["function"]: row for row in doc["functions_total"]}
    check(55 < by_total["alpha"]["total_percent"] < 95 and
          by_total["alpha"]["self_percent"] < 5, by_total["alpha"])
    check(99.0 <= by_total["main"]["total_percent"] <= 100.0, by_total["main"])
    outside_main = sum(row["samples"] for row in by_self) - by_total["main"]["samples"]
    check(0 <= outside_main <= 0.01 * by_total["main"]["samples"],
          f"a function counts each sample once, however deep: {outside_main} outside main")
    check(by_total["alpha"]["samples"] >= by_total["burn"]["samples"], by_total)
    # Both summaries agree on alpha's share, since both weigh samples by CPU time.
    check(abs(by_total["alpha"]["total_percent"] - alpha_total) < 1,
          f"{by_total['alpha']} vs {alpha_total}")

    db = sqlite3.connect(r.path(f"rocpd-{r.main_pid()}.db"))
    top = rows(db, "SELECT name, total_calls, percentage FROM top")
    check_eq([name for name, _, _ in top[:2]], ["burn", "beta"], "the top view")
    check(50 < top[0][2] < 95, top[:3])
    check(not {"main", "_start", "samples [syscope]"} & {n for n, _, _ in top}, top)
    check_eq(sum(calls for _, calls, _ in top),
             rows(db, "SELECT COUNT(*) FROM samples WHERE category = 'timer_sampling'")[0][0],
             "every CPU sample once")


# hatchet's timemory reader (hatchet/readers/timemory_reader.py, GraphFrame.from_timemory)
# takes a frame's name, file and line from its prefix with this pattern, the first of its
# patterns that a "label  [func/file:line]" prefix matches.
HATCHET_LABEL = re.compile(r"(?P<head>.+)([ \t]+)\[(?P<func>\S+)([/])(?P<file>\S+):"
                           r"(?P<line>[0-9]+)\]$")


def hatchet_frames(path):
    """The frames hatchet's reader would make of a JSON profile, checking on the way what
    the reader needs: {(rank, thread, callpath): (file, line, laps)}."""
    with open(path) as f:
        doc = json.load(f)
    (metric, data), = doc["timemory"].items()
    check(isinstance(data.get("type"), str), "a string type names the metric columns")
    # "graph" has no ranks; the reader then drops a 'rank' column that does not exist as
    # soon as one thread is not 0 (KeyError ['rank'] not found in axis): several threads
    # need "mpi", a list of ranks.
    check(("graph" in data) != ("mpi" in data), f"graph or mpi: {list(data)}")
    ranks = data.get("graph") or data["mpi"]
    frames = {}

    def walk(node, rank, path):
        n = node["node"]
        if n["hash"] == 0:  # a dummy root: its children are the roots
            check(path == (), "dummy nodes only at the top")
            for c in node.get("children", []):
                walk(c, rank, path)
            return
        m = HATCHET_LABEL.search(n["prefix"])
        check(m, f"hatchet cannot read file and line from {n['prefix']!r}")
        check_eq(m.group("head").rstrip(), n["name"], "hatchet's name is the function's")
        check(isinstance(n["tid"], int) and isinstance(n["pid"], int), n)
        check(isinstance(n["inclusive"]["entry"]["laps"], int), n["inclusive"])
        for kind in ("inclusive", "exclusive"):
            stats = n[kind]["stats"]
            check(all(isinstance(v, (int, float)) for v in stats.values()), stats)
        path = path + (n["name"],)
        key = (rank, n["tid"], path)
        check(key not in frames, f"two nodes for {key}")
        frames[key] = (m.group("file"), int(m.group("line")), n["inclusive"]["entry"]["laps"])
        for c in node["children"]:
            walk(c, rank, path)

    for i, rank_data in enumerate(ranks):
        for root in rank_data:
            check(root["children"], "the reader skips a thread without children")
            walk(root, None if "graph" in data else i, ())
    if "graph" in data:
        check({t for (_, t, _) in frames} == {0}, "graph holds one thread")
    return frames


def test_json_profile_as_hatchet_reads_it():
    r = syscope("sample", "-f", "1000", "--output-format", "json", "--", fixture("hot"), "0.3")
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    frames = hatchet_frames(p.path)
    hot = [(k, v) for k, v in frames.items() if k[2][-1] == "hot_loop"]
    check_eq(len(hot), 1, f"one hot_loop frame: {hot}")
    (rank, thread, path), (file, line, laps) = hot[0]
    check_eq((rank, thread), (None, 0), "one thread, no rank: the graph layout")
    check_eq(path[-2:], ("main", "hot_loop"), "call path")
    check_eq((file, line), ("hot.c", harness.source_line("hot.c", "/* HOT_LINE */")), "file:line")
    check_eq(laps, p.samples("hot_loop"), "laps are its samples")


def test_json_profile_of_threads_and_ranks_as_hatchet_reads_it():
    r = syscope("sample", "-f", "1000", "--output-format", "json", "--",
                fixture("two_threads"), "0.3")
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    frames = hatchet_frames(p.path)
    check("mpi" in p.timemory, "several threads: the layout with ranks")
    by_leaf = {k[2][-1]: k for k in frames}
    check_eq((by_leaf["work_alpha"][0], by_leaf["work_beta"][0]), (0, 0), "rank 0")
    threads = {by_leaf["work_alpha"][1], by_leaf["work_beta"][1]}
    check_eq(len(threads), 2, "each worker on its own thread")
    check(0 not in threads, "workers are not the main thread")
    check_eq(frames[by_leaf["work_alpha"]][0], "two_threads.c", "file of work_alpha")
    check(frames[by_leaf["work_alpha"]][1] > 0, "line of work_alpha")
    # An MPI rank (here from the launcher's variable) puts the trees at that rank.
    r = syscope("sample", "-f", "1000", "--output-format", "json", "--", fixture("hot"), "0.2",
                env={"OMPI_COMM_WORLD_RANK": "2"})
    check_eq(r.rc, 0, r.describe())
    p = r.profile()
    check_eq([len(rank) for rank in p.timemory["mpi"]], [0, 0, 1], "ranks 0 and 1 empty")
    frames = hatchet_frames(p.path)
    check_eq({k[0] for k in frames}, {2}, "every frame on rank 2")


def test_csv_columns_named_for_what_they_hold():
    # regions: main thread "phase A" holding three "inner", worker thread one "worker".
    r = syscope("sample", "-f", "1000", "--output-format", "csv json", "--", fixture("regions"))
    check_eq(r.rc, 0, r.describe())
    pid = r.main_pid()
    with open(r.path(f"wall_clock-{pid}.csv"), newline="") as f:
        rows_ = list(csv.DictReader(f))
    check_eq(list(rows_[0]), ["Function", "Module", "File", "Line", "Calls", "Self_Seconds",
                              "Self_Percent", "Outermost_Calls", "Inclusive_Seconds",
                              "Inclusive_Percent"], "wall_clock columns")
    calls = {row["Function"]: int(row["Calls"]) for row in rows_}
    check_eq((calls["phase A"], calls["inner"], calls["worker"]), (1, 3, 1), "calls")
    with open(r.path(f"sampling_cpu_clock-{pid}.csv"), newline="") as f:
        header = next(csv.reader(f))
    check_eq(header[4:7], ["Self_Samples", "Self_Seconds", "Self_Percent"], "sampling columns")


def test_texts_say_what_happened():
    # A misspelled SYSCOPE_ variable is named, with the setting it was likely meant to be.
    r = syscope("sample", "--", fixture("hot"), "0.1", env={"SYSCOPE_SAMPLNG_FREQ": "100"})
    check_eq(r.rc, 0, r.describe())
    check("SYSCOPE_SAMPLNG_FREQ is not a setting and is ignored; did you mean "
          "SYSCOPE_SAMPLING_FREQ?" in r.err, r.err)
    # CPUs beyond the machine's get no track, and the run says so.
    n = os.cpu_count()
    r = syscope("sample", "--host", "--cpus", f"0-{n + 1}", "--", fixture("hot"), "0.1")
    check_eq(r.rc, 0, r.describe())
    check(f"this machine has {n} CPU" in r.err and f"CPUs {n}-{n + 1} get no track" in r.err,
          r.err)
    # A preset without sampling is not told that its samples are missing.
    r = syscope("run", "--preset=trace-gpu", "--", fixture("hot"), "0.1")
    check_eq(r.rc, 0, r.describe())
    check("call-stack sampling was off" in r.err and "no samples were recorded" not in r.err,
          r.err)


def test_instrumented_library_under_its_soname():
    # libversioned_lib.so.1 -> .so.1.2.3; the loader looks for its SONAME, libversioned_lib.so.1
    with open(os.path.join(harness.BUILD, "CMakeCache.txt")) as f:
        if "SYSCOPE_PATCHING:BOOL=OFF" in f.read():
            raise harness.Skip("this build has no binary patching (-DSYSCOPE_PATCHING=OFF)")
    work = tempfile.mkdtemp(prefix="syscope-soname-")
    harness._workdirs.append(work)
    libs = os.path.join(work, "libs") + "/"
    r = syscope("instrument", "--min-instructions", "0", "-o", libs, "--",
                fixture("libversioned_lib.so.1"))
    check_eq(r.rc, 0, r.describe())
    check_eq(os.listdir(libs), ["libversioned_lib.so.1"], "the copy under its SONAME")
    check(f"LD_LIBRARY_PATH={libs.rstrip('/')} syscope run -- PROGRAM" in r.err, r.err)
    r = syscope("run", "--output-format", "json", "--", fixture("versioned_lib_main"),
                env={"LD_LIBRARY_PATH": libs})
    check_eq(r.rc, 0, r.describe())
    calls = harness.calls_of(r.profile("wall_clock"))
    check_eq((calls.get("lib_outer"), calls.get("lib_inner")), (2, 8),
             f"the program loads the instrumented copy: {calls}")
    # A file name of the user's own that is not the SONAME: said, since nothing would load it.
    other = os.path.join(work, "libversioned_lib.so.1.2.3")
    r = syscope("instrument", "-o", other, "--", fixture("libversioned_lib.so.1"))
    check_eq(r.rc, 0, r.describe())
    check("the loader looks for this library as libversioned_lib.so.1" in r.err, r.err)


def test_file_list_by_kind_when_many():
    prog = fixture("hot")
    r = syscope("sample", "--", "sh", "-c", f"for i in 1 2 3 4 5 6; do {prog} 0.05; done")
    check_eq(r.rc, 0, r.describe())
    nproc = len(r.pids())
    lines = r.err.splitlines()
    head = next(i for i, line in enumerate(lines) if " files to " in line)
    m = re.match(r"syscope: wrote (\d+) files to (\S+)/ for (\d+) processes, by kind:$",
                 lines[head])
    check(m, lines[head])
    check_eq(int(m.group(3)), nproc, "processes")
    kinds = {}
    for line in lines[head + 1:]:
        k = re.match(r"syscope:   (\S+)\s+(\d+) files \(such as (\S+)\)$", line)
        check(k, f"a kind per line: {line!r}")
        kinds[k.group(1)] = int(k.group(2))
    check_eq(sum(kinds.values()), int(m.group(1)), "every file counted once")
    check_eq(kinds["metadata-<pid>.json"], nproc, "a metadata file per process")
    on_disk = [f for f in os.listdir(m.group(2)) if re.search(r"-\d+\.", f)]
    for kind, n in kinds.items():
        pattern = re.escape(kind).replace(re.escape("<pid>"), r"\d+")
        check_eq(sum(1 for f in on_disk if re.fullmatch(pattern, f)), n, kind)


VERBS = ["sample", "run", "instrument", "python", "attach", "causal", "avail", "convert", "summary",
         "merge", "report"]


def test_installed_tree_and_its_verb_commands():
    prefix = tempfile.mkdtemp(prefix="syscope-install-")
    harness._workdirs.append(prefix)
    p = subprocess.run(["cmake", "--install", harness.BUILD, "--prefix", prefix],
                       capture_output=True, text=True)
    check_eq(p.returncode, 0, p.stderr[-2000:])
    for verb in VERBS:
        link = os.path.join(prefix, "bin", f"syscope-{verb}")
        check(os.path.islink(link) and os.readlink(link) == "syscope", f"{link}")
    for f in ("share/man/man1/syscope.1", "share/bash-completion/completions/syscope",
              "lib/syscope/libsyscope.so", "share/syscope/presets/balanced.json"):
        check(os.path.isfile(os.path.join(prefix, f)), f"installed {f}")
    # syscope-sample is `syscope sample`, from the installed tree alone.
    work = tempfile.mkdtemp(prefix="syscope-it-")
    harness._workdirs.append(work)
    p = subprocess.run([os.path.join(prefix, "bin", "syscope-sample"), "-f", "500", "-o",
                        os.path.join(work, "out"), "--", fixture("hot"), "0.2"],
                       capture_output=True, text=True, cwd=work)
    check_eq(p.returncode, 0, p.stderr[-2000:])
    check("top functions by CPU time (self):" in p.stderr and "hot_loop" in p.stderr,
          p.stderr[-2000:])
    session = os.path.join(work, "out", os.listdir(os.path.join(work, "out"))[0])
    check(any(f.startswith("sampling_cpu_clock-") and f.endswith(".json")
              for f in os.listdir(session)), os.listdir(session))


def test_debian_package():
    for tool in ("cpack", "dpkg-deb"):
        if not shutil.which(tool):
            if os.environ.get("CI") == "true":
                raise AssertionError(f"{tool} is missing")
            raise harness.Skip(f"{tool} is not installed")
    out = tempfile.mkdtemp(prefix="syscope-deb-")
    harness._workdirs.append(out)
    p = subprocess.run(["cpack", "-G", "DEB", "--config",
                        os.path.join(harness.BUILD, "CPackConfig.cmake"), "-B", out],
                       capture_output=True, text=True, cwd=out)
    check_eq(p.returncode, 0, (p.stdout + p.stderr)[-2000:])
    debs = [f for f in os.listdir(out) if f.endswith(".deb")]
    check_eq(len(debs), 1, os.listdir(out))
    deb = os.path.join(out, debs[0])
    listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True).stdout
    for f in (["./usr/bin/syscope", "./usr/share/man/man1/syscope.1",
               "./usr/share/bash-completion/completions/syscope",
               "./usr/lib/syscope/libsyscope.so"] +
              [f"./usr/bin/syscope-{v} -> syscope" for v in VERBS]):
        check(f in listing, f"{f} in the package:\n{listing}")
    info = subprocess.run(["dpkg-deb", "-f", deb, "Package", "Depends"], capture_output=True,
                          text=True).stdout
    check("Package: syscope" in info and "libdw1" in info and "libsqlite3-0" in info, info)


def need_trace_processor():
    why = trace_processor.available()
    if why:
        raise harness.Skip(why + " (see ../shared/tools/README.md)")


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    check(m, f"no build id in {path}: {out[-300:]}")
    return m.group(1)


def test_perfetto_frames_can_be_symbolized_again():
    need_trace_processor()
    exe = fixture("hot")
    r = syscope("sample", "-f", "1000", "--output-format", "pftrace", "--", exe, "0.3")
    check_eq(r.rc, 0, r.describe())
    path = r.path(f"perfetto-trace-{r.main_pid()}.pftrace")
    with open(path, "rb") as f:
        t = pftrace.Trace(f.read())
    check_eq(t.errors, [], "trace problems")
    mappings = {name: (bid, int(start), int(end)) for name, bid, start, end in
                trace_processor.query(path, "SELECT name, build_id, start, end FROM "
                                            "stack_profile_mapping")}
    check(exe in mappings, f"the program's mapping by its full path: {list(mappings)}")
    check_eq(mappings[exe][0], build_id(exe), "its build id")
    check(mappings[exe][1] < mappings[exe][2], mappings[exe])
    libc = [m for m in mappings if os.path.basename(m).startswith("libc.so")]
    check(libc and os.path.isabs(libc[0]), f"libc by its full path: {list(mappings)}")
    frames = trace_processor.query(
        path, "SELECT F.name, F.rel_pc FROM stack_profile_frame F JOIN stack_profile_mapping M "
              f"ON M.id = F.mapping WHERE M.name = '{exe}' AND F.name = 'hot_loop'")
    check(frames, "hot_loop frames")
    # Each frame's rel_pc (its address less the mapping's start) leads back to the function
    # with binutils, as a re-symbolizing tool would find it.
    pcs = sorted({int(pc) for _, pc in frames})
    check(all(pc > 0 for pc in pcs), pcs)
    a2l = subprocess.run(["addr2line", "-f", "-e", exe] + [hex(pc) for pc in pcs[:20]],
                         capture_output=True, text=True).stdout.split("\n")
    check_eq(set(a2l[0::2][:len(pcs[:20])]), {"hot_loop"}, "addr2line of each rel_pc")


def test_perfetto_traces_put_together_with_cat_stay_apart():
    need_trace_processor()
    r = syscope("sample", "-f", "500", "--output-format", "pftrace", "--", fixture("fork_exec"),
                fixture("exec_child"), "0.3")
    check_eq(r.rc, 0, r.describe())
    pids = sorted(r.pids())
    check_eq(len(pids), 2, "two processes")
    paths = [r.path(f"perfetto-trace-{pid}.pftrace") for pid in pids]
    wrote = {"slices": 0, "samples": 0, "counters": 0, "flows": 0}
    data = b""
    for p in paths:
        with open(p, "rb") as f:
            one = f.read()
        t = pftrace.Trace(one)
        check_eq(t.errors, [], f"{p}: trace problems")
        wrote["slices"] += len(t.slices) + len(t.instants)
        wrote["samples"] += len(t.samples)
        wrote["counters"] += len(t.counters)
        wrote["flows"] += len(t.flows)
        data += one
    both = os.path.join(r.workdir, "both.pftrace")
    with open(both, "wb") as f:
        f.write(data)
    check_eq(trace_processor.problems(both), [], "stats of the concatenated trace")
    check_eq(trace_processor.counts(both), wrote, "everything of both files")
    procs = sorted(int(pid) for (pid,) in trace_processor.query(
        both, "SELECT pid FROM process WHERE pid > 0"))
    check_eq(procs, pids, "a process each")
    # Every thread and every sample stays with its own process.
    per_proc = trace_processor.query(
        both, "SELECT P.pid, COUNT(DISTINCT T.tid), COUNT(S.id) FROM perf_sample S JOIN thread "
              "T USING (utid) JOIN process P USING (upid) GROUP BY P.pid ORDER BY P.pid")
    check_eq([int(pid) for pid, _, _ in per_proc], pids, "samples of both processes")
    for pid, threads, n in per_proc:
        check_eq(int(threads), 1, f"process {pid}: its one thread")
    tracks = trace_processor.query(
        both, "SELECT COUNT(*), COUNT(DISTINCT utid) FROM thread_track")
    check_eq(tracks[0][0], tracks[0][1], "one track per thread, none shared")


harness.main(globals())
