"""GPU records in the event model (agents, streams, kernels, copies, allocations, and the
correlation of each with its host call), from a synthetic session, through every sink."""
import json
import os
import sqlite3

import harness
from harness import check, check_eq, gen_session, syscope

import pftrace
from rocpd_checks import check_conventions, rows

KERNEL = "vectorAdd(float const*, float const*, float*, int)"


def convert(session, *formats):
    r = syscope("convert", "--output-format", " ".join(formats), session)
    check_eq(r.rc, 0, r.describe())
    return r


def test_rocpd_gpu_rows():
    s = gen_session("--pid", 5001, "--kernels", 3, "--copies", 2, "--allocs", 1)
    r = convert(s, "rocpd")
    check("GPU: 3 kernels, 2 copies, 0 sets, 1 allocations, 1 frees" in r.err, r.err)
    db = sqlite3.connect(os.path.join(s, "rocpd-5001.db"))
    check_conventions(db)
    kernels = rows(db, "SELECT name, grid_x, grid_y, workgroup_x, duration, stream, "
                       "agent_type, agent_abs_index, tid FROM kernels ORDER BY start")
    check_eq(kernels, [(KERNEL, 256 * 128, 1, 128, 50000, "Stream 7", "GPU", 1, 5001)] * 3,
             "kernels: grid in work-items as rocpd has it, on stream 7 of GPU 0")
    check_eq(rows(db, "SELECT kernel_name, display_name FROM rocpd_info_kernel_symbol"),
             [("_Z9vectorAddPKfS0_Pfi", KERNEL)], "one symbol, mangled and demangled")
    check_eq(rows(db, "SELECT json_extract(extdata, '$.grid') FROM rocpd_kernel_dispatch "
                      "LIMIT 1"), [("[256,1,1]",)], "CUDA grid in blocks kept in extdata")
    copies = rows(db, "SELECT name, size, src_agent_type, dst_agent_type, duration "
                      "FROM memory_copies")
    check_eq(copies, [("MEMORY_COPY_HOST_TO_DEVICE", 1 << 20, "CPU", "GPU", 30000)] * 2,
             "copies")
    check_eq(rows(db, "SELECT type, size, agent_type FROM memory_allocations ORDER BY start"),
             [("ALLOC", 4 << 20, "GPU"), ("FREE", 4 << 20, "GPU")], "allocations")
    # Every device row links to the host call that caused it through stack_id.
    links = rows(db, "SELECT R.name, COUNT(*) FROM regions R JOIN ("
                     "SELECT stack_id FROM kernels UNION ALL SELECT stack_id FROM memory_copies "
                     "UNION ALL SELECT stack_id FROM memory_allocations) D "
                     "ON D.stack_id = R.stack_id WHERE R.category = 'CUDA_RUNTIME_API' "
                     "GROUP BY R.name ORDER BY R.name")
    check_eq(links, [("cudaFree", 1), ("cudaLaunchKernel", 3), ("cudaMalloc", 1),
                     ("cudaMemcpy", 2)], "host call -> device work")
    check_eq(rows(db, "SELECT total_calls FROM top_kernels"), [(3,)], "top_kernels")
    busy = rows(db, "SELECT type, GpuTime FROM busy WHERE type = 'GPU'")
    check_eq(busy, [("GPU", 3 * 50000 + 2 * 30000)], "busy view: kernels and copies")


def test_pftrace_gpu_tracks_and_flows():
    s = gen_session("--pid", 5002, "--kernels", 4, "--copies", 1, "--allocs", 2)
    convert(s, "pftrace")
    t = pftrace.Trace(open(os.path.join(s, "perfetto-trace-5002.pftrace"), "rb").read())
    check_eq(t.errors, [], "valid trace")
    gpu = [u for u, i in t.tracks.items() if i["name"] == "GPU 0: NVIDIA H200"]
    check_eq(len(gpu), 1, "one GPU track")
    check_eq(t.tracks[t.tracks[gpu[0]]["parent"]]["kind"], "process", "GPU track in the process")
    streams = [u for u, i in t.tracks.items() if i["parent"] == gpu[0] and i["kind"] == "custom"]
    check_eq([t.tracks[u]["name"] for u in streams], ["Stream 7"], "stream track under the GPU")
    kernels = [sl for sl in t.slices if sl[2] == "KERNEL_DISPATCH"]
    check_eq(len(kernels), 4, "kernel slices")
    check(all(sl[0] == streams[0] and sl[1] == KERNEL for sl in kernels), "on stream 7")
    check_eq(kernels[0][5]["grid"], "256 x 1 x 1", "grid annotation")
    check_eq(kernels[0][5]["block"], "128 x 1 x 1", "block annotation")
    check_eq(kernels[0][4] - kernels[0][3], 50000, "kernel duration")
    copy = [sl for sl in t.slices if sl[2] == "MEMORY_COPY"]
    check_eq([(c[1], c[5]["bytes"], c[5]["direction"]) for c in copy],
             [("MEMORY_COPY_HOST_TO_DEVICE", 1 << 20, "HtoD")], "copy slice")
    allocs = [i for i in t.instants if i[2] == "MEMORY_ALLOCATION"]
    check_eq(len(allocs), 4, "allocation and free instants")
    mem = [u for u, i in t.tracks.items() if i["name"] == "GPU 0 memory allocated"]
    check_eq([v for u, _, v in t.counters if u == mem[0]], [4 << 20, 0, 4 << 20, 0],
             "allocated bytes")
    flows = sorted((src, dst) for _, src, dst in t.flows)
    check_eq(flows, sorted([("cudaLaunchKernel", KERNEL)] * 4 +
                           [("cudaMemcpy", "MEMORY_COPY_HOST_TO_DEVICE"),
                            ("cudaMalloc", "MEMORY_ALLOCATION_ALLOCATE"),
                            ("cudaMalloc", "MEMORY_ALLOCATION_ALLOCATE"),
                            ("cudaFree", "MEMORY_ALLOCATION_FREE"),
                            ("cudaFree", "MEMORY_ALLOCATION_FREE")]), "host -> device flows")


def test_one_call_several_ops_flows():
    # A graph launch causes two kernels with its correlation id: one flow from the call to
    # each kernel, both valid (no flow ends twice or without a start).
    # With --api-spans the call comes after its kernels in the file, as CUPTI may deliver it.
    for spans in ([], ["--api-spans"]):
        s = gen_session("--pid", 5005, "--graphs", 3, "--kernels", 1, *spans)
        convert(s, "pftrace")
        t = pftrace.Trace(open(os.path.join(s, "perfetto-trace-5005.pftrace"), "rb").read())
        check_eq(t.errors, [], f"valid trace {spans}")
        flows = sorted((src, dst) for _, src, dst in t.flows)
        check_eq(flows, sorted([("cudaGraphLaunch", KERNEL)] * 6 +
                               [("cudaLaunchKernel", KERNEL)]), f"one flow per kernel {spans}")
        check_eq(len({f for f, _, _ in t.flows}), 7, "distinct flow ids")


def test_whole_graph_launches():
    # --cuda-domains graph: each launch is one operation "CUDA graph N" on its stream, a row of
    # kernels (so busy and top_kernels count it), a GRAPH_LAUNCH slice with its flow, counted
    # apart in the summary and the metadata.
    for spans in ([], ["--api-spans"]):
        s = gen_session("--pid", 5011, "--graph-ops", 4, "--kernels", 1, *spans)
        r = convert(s, "rocpd pftrace csv")
        db = sqlite3.connect(os.path.join(s, "rocpd-5011.db"))
        check_conventions(db)
        check_eq(rows(db, "SELECT R.name, K.name, COUNT(*) FROM kernels K JOIN regions R "
                          "ON R.stack_id = K.stack_id GROUP BY 1, 2 ORDER BY 1"),
                 [("cudaGraphLaunch", "CUDA graph 3", 4), ("cudaLaunchKernel", KERNEL, 1)],
                 f"graph launches as kernel rows, each linked to its call {spans}")
        check_eq(rows(db, "SELECT COUNT(*) FROM top_kernels"), [(2,)], "top_kernels")
        t = pftrace.Trace(open(os.path.join(s, "perfetto-trace-5011.pftrace"), "rb").read())
        check_eq(t.errors, [], f"valid trace {spans}")
        graphs = [sl for sl in t.slices if sl[2] == "GRAPH_LAUNCH"]
        check_eq(len(graphs), 4, "GRAPH_LAUNCH slices on the GPU track")
        check_eq(sum(1 for _, src, dst in t.flows if src == "cudaGraphLaunch"), 4, "flows")
        check("4 graph launches" in r.err, r.err)
        meta = json.load(open(os.path.join(s, "metadata-5011.json")))
        gpu = meta["gpu"]
        check_eq((gpu["kernels"], gpu["graph_launches"]), (1, 4), "metadata counts")


def test_api_calls_as_spans():
    # The CUDA tracer writes API calls whole (REGION_SPAN, from CUPTI's thread) and kernels
    # without their thread: the calls land on their own thread, the kernels find it through
    # the correlation id, in rocpd and in Perfetto alike.
    s = gen_session("--pid", 5006, "--kernels", 3, "--api-spans")
    convert(s, "rocpd pftrace")
    db = sqlite3.connect(os.path.join(s, "rocpd-5006.db"))
    check_conventions(db)
    check_eq(rows(db, "SELECT name, category, tid, duration FROM regions ORDER BY start"),
             [("cudaLaunchKernel", "CUDA_RUNTIME_API", 5006, 5000)] * 3, "calls")
    check_eq(rows(db, "SELECT tid FROM kernels"), [(5006,)] * 3, "kernels on the caller")
    links = rows(db, "SELECT COUNT(*) FROM kernels K JOIN regions R ON R.stack_id = K.stack_id")
    check_eq(links, [(3,)], "linked")
    t = pftrace.Trace(open(os.path.join(s, "perfetto-trace-5006.pftrace"), "rb").read())
    check_eq(t.errors, [], "valid trace")
    calls = [sl for sl in t.slices if sl[1] == "cudaLaunchKernel"]
    check_eq(len(calls), 3, "call slices")
    check(all(t.thread_of(sl[0]) == 5006 for sl in calls), "on the calling thread's track")
    check_eq(sorted((a, b) for _, a, b in t.flows), [("cudaLaunchKernel", KERNEL)] * 3, "flows")


def test_gpu_time_launched_by_region():
    # Each op's device time goes to the call that launched it and to every region around
    # that call: a user region around 10 launches of 50 us kernels launched 0.5 ms, and
    # graph launches count their ops (two kernels each).
    for spans in ([], ["--api-spans"]):
        s = gen_session("--pid", 5012, "--kernels", 10, "--kernels-in-region", "--graphs", 2,
                        *spans)
        convert(s, "json text")
        with open(os.path.join(s, "wall_clock-5012.json")) as f:
            funcs = {fn["name"]: fn for fn in json.load(f)["syscope"]["functions"]}
        got = {n: round(fn.get("gpu_seconds_launched", 0) * 1e6) for n, fn in funcs.items()}
        check_eq(got, {"launch_all": 500, "cudaLaunchKernel": 500, "cudaGraphLaunch": 200},
                 f"GPU us launched per region {spans}")
        text = open(os.path.join(s, "wall_clock-5012.txt")).read()
        check("GPU SEC LAUNCHED" in text and "0.000500" in text, text[-1500:])


def test_overlapping_ops_get_lanes():
    # Kernels of 200 us launched every 65 us on one stream overlap (as they would with
    # concurrent kernels reported on one stream): slices on one track must nest, so the
    # overlapping ones go to more lanes of the stream, each kernel whole on one of them.
    s = gen_session("--pid", 5003, "--kernels", 6, "--kernel-ns", 200000)
    convert(s, "pftrace")
    t = pftrace.Trace(open(os.path.join(s, "perfetto-trace-5003.pftrace"), "rb").read())
    check_eq(t.errors, [], "valid trace")
    kernels = [sl for sl in t.slices if sl[2] == "KERNEL_DISPATCH"]
    check_eq(len(kernels), 6, "every kernel kept")
    check(all(sl[4] - sl[3] == 200000 for sl in kernels), "with its own duration")
    lanes = {sl[0] for sl in kernels}
    check_eq(sorted(t.tracks[u]["name"] for u in lanes),
             ["Stream 7", "Stream 7 (overlap 1)", "Stream 7 (overlap 2)",
              "Stream 7 (overlap 3)"], "lanes")
    for lane in lanes:
        spans = sorted((sl[3], sl[4]) for sl in kernels if sl[0] == lane)
        check(all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "no overlap within a lane")


def test_metadata_gpu_section():
    s = gen_session("--pid", 5004, "--kernels", 2, "--copies", 1)
    convert(s, "text")
    meta = json.load(open(os.path.join(s, "metadata-5004.json")))
    gpu = meta["gpu"]
    check_eq((gpu["kernels"], gpu["copies"], gpu["streams"]), (2, 1, 1), "counts")
    check_eq(gpu["agents"][0]["name"], "NVIDIA H200", "agent name")
    check_eq(gpu["agents"][0]["compute_capability"], "9.0", "compute capability")
    check_eq(gpu["agents"][0]["multiprocessors"], 132, "SMs")
    check(abs(gpu["busy_s"] - (2 * 50e-6 + 30e-6)) < 1e-12, "busy time")


if __name__ == "__main__":
    harness.main(globals())
