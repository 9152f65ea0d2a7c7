"""The HTML report (issue 21): `--output-format html` and `syscope report SESSION|DB [-o FILE]`
write one self-contained report.html whose embedded data holds the run's top functions,
flame graph, threads over time, counters, GPU work and regions; headless Chromium loads it
without a script error and draws the expected flame graph (a screenshot is kept under
build/test-output/test_html_report/)."""
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile

import harness
from harness import Skip, check, check_eq, fixture, gen_session, syscope

ARTIFACTS = os.path.join(harness.BUILD, "test-output", "test_html_report")
DATA = re.compile(r'<script type="application/json" id="syscope-data">(.*?)</script>', re.S)


def page_data(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        html = f.read()
    check(html.startswith("<!DOCTYPE html>"), f"{path} is not an HTML page: {html[:80]!r}")
    check("http://" not in html.replace("http://www.w3.org/2000/svg", "") and
          "https://" not in html, "the page reaches for nothing on the network")
    m = DATA.search(html)
    check(m, "the page embeds its data")
    check("<" not in m.group(1) and "&" not in m.group(1),
          "no markup character inside the data element")
    return html, json.loads(m.group(1))


def top_by(doc, key):
    return max(doc["profile"]["functions"], key=lambda f: f[key])


def flame_children(doc, parent):
    names, nodes = doc["profile"]["flame"]["names"], doc["profile"]["flame"]["nodes"]
    kids = [(n[3], names[n[0]]) for i, n in enumerate(nodes) if i and n[1] == parent]
    return [name for _, name in sorted(kids, reverse=True)]


def widest_path(doc):
    """Names from the root's widest child down, always to the widest child."""
    names, nodes = doc["profile"]["flame"]["names"], doc["profile"]["flame"]["nodes"]
    path, at = [], 0
    while True:
        kids = [i for i, n in enumerate(nodes) if i and n[1] == at]
        if not kids:
            return path
        at = max(kids, key=lambda i: nodes[i][3])
        path.append(names[nodes[at][0]])


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI") == "true":
        raise AssertionError("chromium is not installed (Makefile TEST_PACKAGES lists it)")
    raise Skip("chromium is not installed (apt-get install chromium)")


def browser(page, *args, fragment=""):
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--enable-logging=stderr", "--v=0",
           "--user-data-dir=" + os.path.join(os.path.dirname(page), "chromium-profile"),
           *args, "file://" + os.path.abspath(page) + fragment]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240)


def load_in_browser(page, shot_name, fragment=""):
    """The page's self-check from the DOM Chromium built, and a screenshot kept."""
    r = browser(page, "--dump-dom", "--window-size=1280,2400", fragment=fragment)
    check_eq(r.returncode, 0, f"chromium --dump-dom: {r.stderr[-2000:]}")
    m = re.search(r'<pre id="selfcheck">(.*?)</pre>', r.stdout, re.S)
    check(m, f"the page's script ran to its end: {r.stdout[-1500:]}\n{r.stderr[-1500:]}")
    drawn = json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<")
                       .replace("&gt;", ">").replace("&amp;", "&"))
    check_eq((drawn["status"], drawn["errors"]), ("ok", []), "script errors in the page")
    check(not re.search(r"Uncaught|SyntaxError", r.stderr), f"console errors: {r.stderr[-2000:]}")
    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, shot_name)
    s = browser(page, "--screenshot=" + shot, "--window-size=1280,2400",
                "--hide-scrollbars", fragment=fragment)
    check_eq(s.returncode, 0, f"chromium --screenshot: {s.stderr[-2000:]}")
    with open(shot, "rb") as f:
        head = f.read(24)
    check_eq(head[:8], b"\x89PNG\r\n\x1a\n", "the screenshot is a PNG")
    check_eq(struct.unpack(">II", head[16:24]), (1280, 2400), "the screenshot's size")
    return drawn


def hot_run():
    r = syscope("sample", "-f", "1000", "--host", "--output-format", "html,json", "--",
                fixture("hot"), "0.6")
    check_eq(r.rc, 0, r.describe())
    check("report.html" in r.files(), f"report.html written: {r.files()}")
    return r


def test_hot_report_holds_the_profile():
    r = hot_run()
    html, doc = page_data(r.path("report.html"))
    prof = r.profile()
    check_eq(top_by(doc, "self")["name"], "hot_loop", "top function by self time")
    check_eq(top_by(doc, "self")["file"].split("/")[-1], "hot.c", "its file")
    check_eq(top_by(doc, "self")["line"], harness.source_line("hot.c", "/* HOT_LINE */"), "its line")
    check("main" in [f["name"] for f in doc["profile"]["functions"]], "main by total time")
    check_eq(doc["profile"]["samples"], prof.meta["samples"], "samples as the JSON profile")
    check_eq(top_by(doc, "self")["self_samples"], prof.self_samples("hot_loop"),
             "hot_loop's self samples as the JSON profile")
    share = top_by(doc, "self")["self"] / doc["profile"]["seconds"]
    check(share > 0.5, f"hot_loop holds most of the time: {share:.2f}")
    nodes = doc["profile"]["flame"]["nodes"]
    check_eq(nodes[0][2], doc["profile"]["samples"], "the flame graph's root holds every sample")
    path = widest_path(doc)
    check("main" in path and path[-1] == "hot_loop", f"the widest flame path: {path}")
    summary = doc["summary"]
    check_eq(summary["processes"][0]["pid"], r.main_pid(), "the process")
    check(summary["processes"][0]["argv"][0].endswith("/hot"), f"the command: {summary}")
    check_eq(sum(sum(t["buckets"]) for t in doc["timeline"]["threads"]), summary["samples"],
             "every sample in a time bucket")
    check_eq(len(doc["timeline"]["threads"]), 1, "one thread")
    rss = [c for c in doc["timeline"]["counters"] if c["name"] == "RSS"]
    check_eq(len(rss), 1, f"the RSS track of --host: {[c['name'] for c in doc['timeline']['counters']]}")
    check(rss[0]["unit"] == "bytes" and 0 < rss[0]["min"] <= rss[0]["max"], f"RSS: {rss[0]}")
    check(rss[0]["points"][-1] is not None, "the last value carried to the end")
    check_eq(doc["perfetto"]["files"], [], "no trace made")
    check(doc["perfetto"]["command"].startswith("syscope convert -f pftrace "),
          f"how to make one: {doc['perfetto']}")


def test_names_are_escaped():
    r = syscope("sample", "-f", "1000", "--output-format", "html", "--", fixture("templates"),
                "0.5")
    check_eq(r.rc, 0, r.describe())
    html, doc = page_data(r.path("report.html"))
    names = [f["name"] for f in doc["profile"]["functions"]]
    templ = [n for n in names if "Accumulator<" in n]
    check(templ, f"a template's name, with <, in the data: {names[:20]}")
    check("Accumulator<" not in html, "written as \\u003c in the page")


def test_thread_name_cut_in_a_character():
    """The kernel cuts a thread's name at 15 bytes, here inside a two-byte character: that
    name is not UTF-8, and costs only its bad byte."""
    workdir = tempfile.mkdtemp(prefix="syscope-it-")  # removed by the harness, as its own
    program = os.path.join(workdir, "hot_aaaaaaaaaa\u00e9")
    shutil.copy(fixture("hot"), program)
    r = syscope("sample", "-f", "1000", "--output-format", "html", "--", program, "0.3",
                cwd=workdir)
    check_eq(r.rc, 0, r.describe())
    html, doc = page_data(r.path("report.html"))
    check_eq([t["name"] for t in doc["timeline"]["threads"]], ["hot_aaaaaaaaaa?"],
             "the thread's name, its cut byte as ?")
    check_eq(doc["summary"]["processes"][0]["argv"][0], program, "the command, whole")
    check_eq(top_by(doc, "self")["name"], "hot_loop", "the profile is there")


def test_processes_each_under_their_own_frame():
    r = syscope("sample", "-f", "500", "--output-format", "html,json", "--",
                fixture("fork_exec"), fixture("exec_child"), "0.4")
    check_eq(r.rc, 0, r.describe())
    html, doc = page_data(r.path("report.html"))
    check_eq(sorted(p["pid"] for p in doc["summary"]["processes"]), r.pids(), "both processes")
    names, nodes = doc["profile"]["flame"]["names"], doc["profile"]["flame"]["nodes"]
    levels = {names[n[0]]: n for i, n in enumerate(nodes) if i and n[1] == 0}
    for pid in r.pids():
        label = [k for k in levels if k.startswith(f"pid {pid} ")]
        check_eq(len(label), 1, f"a frame for pid {pid}: {list(levels)}")
        check_eq(levels[label[0]][2], r.profile(pid=pid).meta["samples"],
                 f"pid {pid}'s samples under its frame")
    check_eq(doc["profile"]["samples"], sum(n[2] for n in levels.values()), "all samples")


def test_gpu_telemetry_tracks():
    """GPU utilization and power from NVML (the stand-in driver of tests/programs/fake_nvml.c,
    whose GPU g reads utilization 40 + g) are counter tracks of the report."""
    env = {"LD_LIBRARY_PATH": fixture("fake-nvml"), "FAKE_NVML_GPUS": "2"}
    r = syscope("sample", "--gpu=all", "--no-cuda", "--process-freq", "100",
                "--output-format", "html", "--", fixture("hot"), "0.3", env=env)
    check_eq(r.rc, 0, r.describe())
    html, doc = page_data(r.path("report.html"))
    tracks = {c["name"]: c for c in doc["timeline"]["counters"]}
    for gpu in (0, 1):
        util = tracks.get(f"GPU {gpu} utilization")
        check(util, f"GPU {gpu}'s utilization track: {sorted(tracks)}")
        check_eq((util["min"], util["max"]), (40.0 + gpu, 40.0 + gpu), "its value")
        check(any(n.startswith(f"GPU {gpu} ") and "power" in n for n in tracks),
              f"GPU {gpu}'s power track: {sorted(tracks)}")


def gpu_session():
    return gen_session("--pid", 7301, "--threads", 2, "--samples", 40, "--regions", 3,
                       "--counters", 12, "--kernels", 20, "--copies", 4, "--kernel-ns", 80000)


def test_report_verb_on_gpu_session():
    s = gpu_session()
    r = syscope("report", s)
    check_eq(r.rc, 0, r.describe())
    page = os.path.join(s, "report.html")
    check_eq(r.out.strip(), page, "prints where the report is")
    html, doc = page_data(page)
    ops = {o["name"]: o for o in doc["timeline"]["gpu_ops"]}
    kernel = [o for n, o in ops.items() if "vectorAdd" in n]
    check_eq(len(kernel), 1, f"one kernel name: {list(ops)}")
    check_eq((kernel[0]["count"], kernel[0]["kind"]), (20, "KERNEL_DISPATCH"), "kernels")
    check(abs(kernel[0]["mean"] - 80e-6) < 1e-9, f"kernel mean: {kernel[0]}")
    copies = [o for o in ops.values() if o["kind"] == "MEMORY_COPY"]
    check_eq((sum(c["count"] for c in copies), sum(c["bytes"] for c in copies)),
             (4, 4 << 20), "copies and bytes")
    (agent,) = doc["timeline"]["gpu_agents"]
    check_eq(agent["ops"], 24, "ops on GPU 0")
    check(0 < agent["busy_percent"] <= 100, f"busy share: {agent}")
    regions = {(g["category"], g["name"]): g for g in doc["timeline"]["regions"]}
    outer = [g for (c, n), g in regions.items() if n == "outer"]
    check_eq([g["count"] for g in outer], [2 * 3], f"outer regions over 2 threads: {regions}")
    check(outer[0]["min"] <= outer[0]["mean"] <= outer[0]["max"], f"outer stats {outer}")
    depth = [c for c in doc["timeline"]["counters"] if c["name"] == "queue depth"]
    check(depth and sum(c["values"] for c in depth) == 2 * 12, f"counter values: {depth}")
    check(sum(1 for v in depth[0]["points"] if v is not None) > 1, "a line to draw")
    check_eq(doc["profile"]["samples"], 2 * 40, "samples of both threads")
    check_eq(flame_children(doc, 0)[:1], [widest_path(doc)[0]], "the root's widest child")
    check("gen_root" in widest_path(doc), f"the widest path: {widest_path(doc)}")
    check_eq(len(doc["timeline"]["threads"]), 2, "two threads over time")


def test_report_of_a_database_to_a_file():
    s = gpu_session()
    c = syscope("convert", "-f", "rocpd", s)
    check_eq(c.rc, 0, c.describe())
    dbs = [f for f in os.listdir(s) if f.endswith(".db")]
    check_eq(len(dbs), 1, f"one database: {os.listdir(s)}")
    out = os.path.join(s, "from-db.html")
    r = syscope("report", "-o", out, os.path.join(s, dbs[0]))
    check_eq(r.rc, 0, r.describe())
    html, doc = page_data(out)
    kernels = sum(o["count"] for o in doc["timeline"]["gpu_ops"] if o["kind"] == "KERNEL_DISPATCH")
    check_eq(kernels, 20, "kernels from the database")
    check_eq(doc["profile"]["samples"], 2 * 40, "samples from the database")


def test_report_bad_input():
    r = syscope("report", "/nonexistent/session")
    check_eq(r.rc, 1, r.describe())
    check("/nonexistent/session" in r.err, f"names the input: {r.err}")
    r = syscope("report")
    check_eq(r.rc, 2, r.describe())
    check("give a session folder, a folder of sessions or of rocpd databases, or rocpd "
          "databases" in r.err, f"says what is valid: {r.err}")


FLAME_NODES = 10000  # SC_HTML_FLAME_NODES (src/sinks/html.h)


def test_flame_graph_is_bounded():
    """many_paths makes a call tree larger than the report keeps: the nodes with the most
    samples stay, every other child is summed into its parent's "[other]", nothing lost."""
    r = syscope("sample", "-f", "2000", "--output-format", "html,json", "--",
                fixture("many_paths"), "2.5")
    check_eq(r.rc, 0, r.describe())
    html, doc = page_data(r.path("report.html"))
    tree_size = r.profile().doc["timemory"]["sampling_cpu_clock"]["ranks"][0]["graph_size"]
    flame = doc["profile"]["flame"]
    nodes, names = flame["nodes"], flame["names"]
    others = [i for i, n in enumerate(nodes) if names[n[0]] == "[other]"]
    kept = len(nodes) - 1 - len(others)
    check_eq(kept, min(tree_size, FLAME_NODES), f"nodes kept of {tree_size}")
    check_eq(bool(others), tree_size > FLAME_NODES, "[other] only where nodes were dropped")
    check(names.count("[other]") <= 1, "one name for every [other]")
    check_eq(nodes[0][2], doc["profile"]["samples"], "the root holds every sample")
    kids_count, kids_secs = [0] * len(nodes), [0.0] * len(nodes)
    for i, n in enumerate(nodes[1:], 1):
        check(n[1] < i, "parents come before their children")
        kids_count[n[1]] += n[2]
        kids_secs[n[1]] += n[3]
    for i, n in enumerate(nodes):
        check(kids_count[i] <= n[2], f"node {i} holds its children's samples")
        check(abs(n[4] + kids_secs[i] - n[3]) <= 1e-6 * max(n[3], 1e-3),
              f"node {i}: self and children make its time: {n}, {kids_secs[i]}")
    drawn = load_in_browser(r.path("report.html"), "many-paths.png")
    check_eq(drawn["flame_top"], flame_children(doc, 0)[0], "the flame graph's root child")
    check("go_left" in drawn["flame_path"], f"the drawn widest path: {drawn['flame_path']}")


def test_chromium_loads_hot_report():
    chromium()
    r = hot_run()
    html, doc = page_data(r.path("report.html"))
    drawn = load_in_browser(r.path("report.html"), "hot.png")
    check_eq(drawn["flame_top"], flame_children(doc, 0)[0], "the flame graph's root child")
    check_eq(drawn["flame_path"][-1], "hot_loop", f"the drawn widest path: {drawn}")
    check_eq(drawn["threads"], 1, "one thread strip")
    check(drawn["flame_nodes"] >= len(widest_path(doc)), f"flame nodes drawn: {drawn}")
    # Searched and zoomed through the fragment, as a click and the search box do.
    names, nodes = doc["profile"]["flame"]["names"], doc["profile"]["flame"]["nodes"]
    hot = [i for i, n in enumerate(nodes) if names[n[0]] == "hot_loop"]
    zoomed = load_in_browser(r.path("report.html"), "hot-zoomed.png",
                             fragment="#search=HOT_L&zoom=main")
    check_eq(zoomed["flame_focus"], "main", "zoomed on main")
    check(1 <= zoomed["flame_matches"] <= len(hot), f"hot_loop highlighted: {zoomed}, {hot}")
    check(zoomed["flame_nodes"] <= drawn["flame_nodes"], f"fewer nodes when zoomed: {zoomed}")


def test_chromium_loads_gpu_report():
    chromium()
    s = gpu_session()
    r = syscope("report", s)
    check_eq(r.rc, 0, r.describe())
    page = os.path.join(s, "report.html")
    html, doc = page_data(page)
    drawn = load_in_browser(page, "gpu-session.png")
    check_eq(drawn["flame_top"], flame_children(doc, 0)[0], "the flame graph's root child")
    check_eq((drawn["gpu_ops"], drawn["threads"]),
             (len(doc["timeline"]["gpu_ops"]), 2), "GPU rows and thread strips drawn")
    check(drawn["counters"] >= 1 and drawn["regions"] >= 2, f"counters and regions: {drawn}")


if __name__ == "__main__":
    harness.main(globals())
