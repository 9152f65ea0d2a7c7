"""The record types of the raw format as named constants (records.OWNER, records.SAMPLE...),
with their names and pinned sizes, read from src/store/records.def: the one table the C
writer, the C reader and these Python decoders share."""
import os
import re

DEF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "store",
                   "records.def")
ROW = re.compile(r'^SC_RECORD\((\w+), (\d+), "([^"]+)", (\w+), (\d+), "([^"]*)"\)', re.M)

NAMES = {}   # id -> NAME
TEXTS = {}   # id -> name in dumps ("region-begin")
SIZES = {}   # id -> size of the fixed part, header included
STRUCTS = {}  # id -> C struct

with open(DEF) as f:
    for name, num, text, ctype, size, _what in ROW.findall(f.read()):
        num = int(num)
        globals()[name] = num
        NAMES[num], TEXTS[num], SIZES[num], STRUCTS[num] = name, text, int(size), ctype

if not NAMES:
    raise ImportError(f"no SC_RECORD rows in {DEF}")


# ---- decoders of the Python parts (src/store/format.h, docs/record-format.md) ----
import struct  # noqa: E402

SAMPLE_PYTHON = 0x4          # SAMPLE hdr.flags: a struct sc_py_stack follows the frames
PY_GIL_NONE, PY_GIL_HELD, PY_GIL_RELEASED = 0, 1, 2
PY_STACK_TRUNCATED, PY_STACK_BAD_CODE = 0x1, 0x2
PY_FRAME_GROUP_END = 0x80000000
PY_STATES = {1: "frames", 2: "unsupported", 3: "free-threaded", 4: "invalid", 5: "off"}
PY_TRACING = 0x1


def decode_sample(flags, payload):
    """A SAMPLE record's payload (after the header) as a dict: ts, cpu_ns, kind, frames
    (native PCs, innermost first) and python: None, or a dict with gil, flags and frames, a
    list of (code_id, index, group_end) innermost first, index -1 for "not started"."""
    ts, cpu, kind, n = struct.unpack_from("<QQHH", payload, 0)
    frames = list(struct.unpack_from(f"<{n}Q", payload, 24))
    s = {"ts": ts, "cpu_ns": cpu, "kind": kind, "frames": frames, "python": None}
    if flags & SAMPLE_PYTHON:
        off = 24 + 8 * n
        npy, gil, pflags = struct.unpack_from("<HBB", payload, off)
        py = []
        for i in range(npy):
            code_id, instr = struct.unpack_from("<II", payload, off + 8 + 8 * i)
            py.append((code_id, (instr & 0x7fffffff) - 1, bool(instr & PY_FRAME_GROUP_END)))
        s["python"] = {"gil": gil, "flags": pflags, "frames": py}
    return s


def decode_py_callsite(payload):
    """A PY_CALLSITE record's payload: ts, corr_id and python (as decode_sample's)."""
    ts, corr, npy, gil, pflags = struct.unpack_from("<QQHBB", payload, 0)
    py = []
    for i in range(npy):
        code_id, instr = struct.unpack_from("<II", payload, 24 + 8 * i)
        py.append((code_id, (instr & 0x7fffffff) - 1, bool(instr & PY_FRAME_GROUP_END)))
    return {"ts": ts, "corr_id": corr, "python": {"gil": gil, "flags": pflags, "frames": py}}


def decode_py_runtime(payload):
    ts, runtime, version, state, flags = struct.unpack_from("<QQIHH", payload, 0)
    return {"ts": ts, "runtime": runtime, "version": version, "state": state,
            "state_name": PY_STATES.get(state, str(state)), "flags": flags}


def decode_py_code(payload):
    """A PY_CODE record: id, first_line, address, fingerprint, version (0x030b), flags,
    filename, qualname (str) and linetable (bytes)."""
    (code_id, first, addr, fp, lt_len, fn_len, qn_len, version,
     flags, _r) = struct.unpack_from("<IiQQIHHHHI", payload, 0)
    off = 40
    filename = payload[off:off + fn_len].decode("utf-8")
    qualname = payload[off + fn_len:off + fn_len + qn_len].decode("utf-8")
    lt = bytes(payload[off + fn_len + qn_len:off + fn_len + qn_len + lt_len])
    return {"id": code_id, "first_line": first, "address": addr, "fingerprint": fp,
            "version": version, "flags": flags, "filename": filename, "qualname": qualname,
            "linetable": lt}


FUNC_LOOP, FUNC_PYTHON, FUNC_OPEN = 0x1, 0x2, 0x4  # FUNC_* hdr.flags


def decode_func_call(flags, payload):
    """A FUNC_CALL record: start, end (ns), id (FUNC_ID's, or a Python code id), context
    (flags bits 8-15), loop, python, open (the call had not returned at its end)."""
    start, dur, fid = struct.unpack_from("<QII", payload, 0)
    return {"start": start, "end": start + dur, "dur": dur, "id": fid,
            "context": (flags >> 8) & 0xff, "loop": bool(flags & FUNC_LOOP),
            "python": bool(flags & FUNC_PYTHON), "open": bool(flags & FUNC_OPEN)}


def decode_func_id(flags, payload):
    """A FUNC_ID record: id, addr, loop."""
    addr, fid = struct.unpack_from("<QI", payload, 0)
    return {"id": fid, "addr": addr, "loop": bool(flags & FUNC_LOOP)}


def decode_func_count(flags, payload):
    """A FUNC_COUNT record: id, python, untimed (some calls not timed), calls (after
    throttling), total_ns."""
    fid, _r, calls, total = struct.unpack_from("<IIQQ", payload, 0)
    return {"id": fid, "python": bool(flags & FUNC_PYTHON), "untimed": bool(flags & 0x8),
            "calls": calls, "total_ns": total}


def decode_func_stats(flags, payload):
    """A FUNC_STATS record: a Python function's calls aggregated in the process."""
    names = ("id", "throttled", "calls", "total_ns", "self_ns", "outer_calls", "outer_ns",
             "min_ns", "max_ns", "outer_sumsq", "hidden_ns")
    d = dict(zip(names, struct.unpack_from("<IIQQQQQQQdQ", payload, 0)))
    d["python"] = bool(flags & FUNC_PYTHON)
    return d


def _varint(b, i):
    r, s = b[i] & 63, 6
    while b[i] & 64:
        i += 1
        r |= (b[i] & 63) << s
        s += 6
    return r, i + 1


def _svarint(b, i):
    u, i = _varint(b, i)
    return (-(u >> 1) if u & 1 else u >> 1), i


def py_line(code, index):
    """The line of code-unit `index` of a decoded PY_CODE record (its first line for -1,
    None where the table gives no line), from the line table in its version's format."""
    table, line = code["linetable"], code["first_line"]
    if index < 0:
        return line
    if code["version"] < 0x030b:  # 3.10: PEP 626 (byte length, line delta) pairs
        addr, target = 0, 2 * index
        for k in range(0, len(table) - 1, 2):
            length, delta = table[k], table[k + 1]
            delta = delta - 256 if delta >= 128 else delta
            if delta != -128:
                line += delta
            if addr <= target < addr + length:
                return None if delta == -128 else line
            addr += length
        return None
    i = addr = 0
    while i < len(table):  # 3.11+: the location table
        h = table[i]
        code_kind, n, delta = (h >> 3) & 15, (h & 7) + 1, 0
        i += 1
        if code_kind in (13, 14):
            delta, i = _svarint(table, i)
            if code_kind == 14:
                for _ in range(3):
                    _, i = _varint(table, i)
        elif code_kind >= 10 and code_kind <= 12:
            delta, i = code_kind - 10, i + 2
        elif code_kind < 10:
            i += 1
        line += delta
        if addr <= index < addr + n:
            return None if code_kind == 15 else line
        addr += n
    return None


# ---- OMP_BEGIN, OMP_REGION (src/store/omp_events.def): OpenMP constructs with numeric arguments ----
_OMP_DEF = os.path.join(os.path.dirname(DEF), "omp_events.def")
with open(_OMP_DEF) as _f:
    _omp_text = _f.read()
OMP_KINDS = {int(i): n for i, n in re.findall(r'^SC_OMP_KIND\(\w+, (\d+), "([^"]+)"\)',
                                               _omp_text, re.M)}
OMP_ARGS = {int(i): (n, t) for n, i, t in re.findall(r"^SC_OMP_ARG\((\w+), (\d+), '(\w)'\)",
                                                      _omp_text, re.M)}


def decode_omp_begin(flags, payload):
    """(ts, name, {arg: value as the tracer renders it}) of an OMP_BEGIN record."""
    ts, = struct.unpack_from("<Q", payload, 0)
    nargs = (flags >> 6) & 3
    args = {}
    for i in range(nargs):
        name, kind = OMP_ARGS[(flags >> (8 + 4 * i)) & 0xf]
        value, = struct.unpack_from("<Q", payload, 8 + 8 * i)
        args[name] = f"0x{value:x}" if kind == "p" else str(value)
    return ts, OMP_KINDS[flags & 0x3f], args


def decode_omp_region(flags, payload):
    """(ts, end (0: none in the record), name, {arg: value}) of an OMP_REGION record: `ts`,
    `dur` (u32), `first` (u32: the first argument when the record has room for one u64
    argument fewer than there are; two of 16 bits, low half first, when it has room for
    none and there are two), then u64 arguments."""
    ts, dur, first = struct.unpack_from("<QII", payload, 0)
    nargs, wide = (flags >> 6) & 3, (len(payload) - 16) // 8
    if nargs == 2 and wide == 0:
        values = [first & 0xffff, first >> 16]
    else:
        values = ([first] if nargs and wide < nargs else []) + [
            struct.unpack_from("<Q", payload, 16 + 8 * i)[0] for i in range(wide)]
    if flags & 0x3f == OMP_PARALLEL_TEAM:
        values[0] &= 0xffff  # the team size of the task it holds above it
    args = {}
    for i in range(nargs):
        name, kind = OMP_ARGS[(flags >> (8 + 4 * i)) & 0xf]
        args[name] = f"0x{values[i]:x}" if kind == "p" else str(values[i])
    return ts, ts + dur if dur else 0, OMP_KINDS[flags & 0x3f], args


OMP_PARALLEL_TEAM = int(re.search(r"^SC_OMP_KIND\(PARALLEL_TEAM, (\d+),", _omp_text, re.M)[1])


def decode_omp_regions(flags, payload):
    """The regions of an OMP_REGION record, as decode_omp_region's: its own, then, for an
    "omp parallel" that holds its encountering thread's implicit task (format.h:
    SC_OMP_TEAM_OF), that task, with the same begin and end."""
    ts, end, name, args = decode_omp_region(flags, payload)
    team = struct.unpack_from("<I", payload, 12)[0] >> 16
    got = [(ts, end, name, args)]
    if flags & 0x3f == OMP_PARALLEL_TEAM and team:
        got.append((ts, end, "omp implicit task", {"thread": "0", "team": str(team)}))
    return got
