"""syscope convert: rebuilding outputs, damaged sessions converted as far as they are valid,
and what metadata-<pid>.json records."""
import filecmp
import json
import os
import shutil
import struct

import harness
from harness import check, check_eq, fixture, syscope

import rawdump
import records


def test_convert_rebuilds_the_same_outputs():
    r = syscope("sample", "-f", "500", "--", fixture("two_threads"), "0.5")
    check_eq(r.rc, 0, r.describe())
    pid = r.main_pid()
    copy = os.path.join(r.workdir, "again")
    c = syscope("convert", "-o", copy, r.session)
    check_eq(c.rc, 0, c.describe())
    for ext in ("txt", "folded"):
        name = f"sampling_cpu_clock-{pid}.{ext}"
        check(filecmp.cmp(r.path(name), os.path.join(copy, name), shallow=False),
              f"{name} is the same when rebuilt")
    with open(r.path(f"sampling_cpu_clock-{pid}.json")) as a, \
            open(os.path.join(copy, f"sampling_cpu_clock-{pid}.json")) as b:
        check_eq(json.load(a), json.load(b), "JSON profile")
    check("work_alpha" in c.err, "summary printed by convert")


def test_damaged_session_is_converted_as_far_as_valid():
    # The wall-clock sampler fills chunks even when a loaded machine gives the program
    # little CPU time; the check is on the CPU-time samples.
    r = syscope("sample", "-f", "1000", "--sampling-cputime", "--sampling-realtime",
                "--buffer-chunk-kb", "16", "--", fixture("hot"), "1.0")
    check_eq(r.rc, 0, r.describe())
    raw = r.raw_files()
    check_eq(len(raw), 1, "one raw file")
    full = r.profile().total
    damaged = os.path.join(r.workdir, "damaged")
    shutil.copytree(r.session, damaged)
    path = os.path.join(damaged, "raw", os.path.basename(raw[0]))
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        chunk = struct.unpack_from("<I", data, 20)[0]
        nchunks = (len(data) - 4096) // chunk
        check(nchunks >= 4, f"{nchunks} chunks")
        cut = 4096 + (nchunks - 1) * chunk + chunk // 2
        # What must survive, by the independent decoder: all samples but those of chunks 2
        # and 3 and those past the cut.
        survive = 0
        for off, _tid, rtype, _flags, payload in rawdump.records(bytes(data), offsets=True):
            c = (off - 4096) // chunk
            kind = struct.unpack_from("<H", payload, 16)[0] if rtype == records.SAMPLE else 0
            if kind == 1 and c not in (2, 3) and off + 8 + len(payload) <= cut:
                survive += 1
        # Break chunk 2's header and a record inside chunk 3, then cut the file in the
        # middle of the last chunk.
        struct.pack_into("<I", data, 4096 + 2 * chunk, 0xdeadbeef)
        struct.pack_into("<I", data, 4096 + 3 * chunk + 64, 3)  # record size 3: invalid
        f.seek(0)
        f.write(data[:cut])
        f.truncate(cut)
    for name in os.listdir(damaged):
        if name.startswith("sampling_") or name.startswith("metadata"):
            os.unlink(os.path.join(damaged, name))
    c = syscope("convert", damaged)
    check_eq(c.rc, 0, c.describe())
    name = os.path.basename(path)
    check(f"{name}: chunk 2 at offset {4096 + 2 * chunk}: bad chunk header" in c.err, c.err)
    check(f"{name}: offset {4096 + 3 * chunk + 64}: damaged record" in c.err, c.err)
    check(f"inside the chunk; reading what is there" in c.err, c.err)
    p = harness.Profile(os.path.join(damaged, f"sampling_cpu_clock-{r.main_pid()}.json"))
    check_eq(p.total, survive, f"samples that survive (of {full})")
    check(p.self_samples("hot_loop") > 0.8 * p.total, "and they still make sense")


def test_unreadable_raw_file_is_named_and_skipped():
    r = syscope("sample", "-f", "500", "--", fixture("fork_exec"), fixture("exec_child"), "0.4")
    check_eq(r.rc, 0, r.describe())
    raw = r.raw_files()
    check(len(raw) >= 2, raw)
    with open(raw[0], "r+b") as f:
        f.write(b"GARBAGE!")
    c = syscope("convert", "-o", os.path.join(r.workdir, "out"), r.session)
    check_eq(c.rc, 0, c.describe())
    check(f"{raw[0]}: not a syscope raw file" in c.err, c.err)
    check("wrote" in c.err, "the other processes were converted")


def test_metadata_records_settings_command_environment_and_files():
    r = syscope("sample", "-f", "700", "--", fixture("hot"), "0.3", env={
        "SYSCOPE_SAMPLING_MAX_DEPTH": "99", "FIXTURE_VAR": "meta"})
    check_eq(r.rc, 0, r.describe())
    md = r.metadata()
    settings = {s["name"]: s for s in md["settings"]}
    check_eq((settings["SAMPLING_FREQ"]["value"], settings["SAMPLING_FREQ"]["source"]),
             ("700", "command line"), "CLI setting")
    check_eq((settings["SAMPLING_MAX_DEPTH"]["value"], settings["SAMPLING_MAX_DEPTH"]["source"]),
             ("99", "environment"), "environment setting")
    check_eq((settings["BUFFER_CHUNK_KB"]["value"], settings["BUFFER_CHUNK_KB"]["source"]),
             ("64", "default"), "default")
    check_eq(settings["SAMPLING_FREQ"]["env"], "SYSCOPE_SAMPLING_FREQ", "env name")
    check(settings["SAMPLING_FREQ"]["description"], "described")
    check_eq(md["command"], [fixture("hot"), "0.3"], "command")
    check_eq(md["environment"].get("FIXTURE_VAR"), "meta", "environment")
    check_eq(md["exit"], {"reason": "exit", "status": 0}, "exit")
    check(md["launcher"]["host"]["cpus"] >= 1, md["launcher"]["host"])
    check(md["launcher"]["syscope_command"][1:3] == ["sample", "-f"], md["launcher"])
    check(md["start_time"].endswith("Z") and md["duration_s"] > 0.25, md["start_time"])
    pid = r.main_pid()
    check_eq(sorted(md["files"]), sorted([f"rocpd-{pid}.db", f"sampling_cpu_clock-{pid}.txt",
                                          f"sampling_cpu_clock-{pid}.json",
                                          f"sampling_cpu_clock-{pid}.folded",
                                          f"metadata-{pid}.json"]), "files")
    sampler = md["threads"][0]["samplers"][0]
    check_eq(sampler["requested_hz"], 700.0, "requested rate")
    check(sampler["delivered_hz"] > 0, sampler)


def test_output_format_selection():
    r = syscope("sample", "--output-format", "folded", "--", fixture("hot"), "0.3")
    check_eq(r.rc, 0, r.describe())
    pid = r.main_pid()
    check_eq([f for f in r.files() if f.startswith("sampling")],
             [f"sampling_cpu_clock-{pid}.folded"], "only the folded profile")
    check(f"metadata-{pid}.json" in r.files(), "metadata always")


harness.main(globals())
