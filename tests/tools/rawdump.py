#!/usr/bin/env python3
"""Independent decoder of syscope raw files (src/store/format.h), for tests and debugging.

Written from the format description, not from the C reader, so that tests can check the
writer and the reader against each other.  Usage: rawdump.py FILE.sraw [--samples]
"""
import struct
import sys

import records as record_types

REC_NAMES = record_types.NAMES  # the one table's numbering (src/store/records.def)
HDR = struct.Struct("<8sIIIIIIiiII QQ 64s Q QQQQQIiQ")


def parse_header(data):
    f = HDR.unpack_from(data, 0)
    keys = ["magic", "version", "header_size", "byte_order", "chunk_size", "clock_id",
            "features", "pid", "ppid", "image_seq", "reserved0", "start_ns",
            "start_realtime_ns", "hostname", "identity_end", "chunks_claimed",
            "lost_records", "lost_bytes", "lost_samples", "end_ns", "end_reason",
            "end_status", "threads_seen"]
    h = dict(zip(keys, f))
    h["hostname"] = h["hostname"].split(b"\0")[0].decode(errors="replace")
    return h


def records(data, offsets=False):
    """Yield (tid, type, flags, payload) for every complete record, in file order; with
    offsets=True, (offset, tid, type, flags, payload)."""
    h = parse_header(data)
    if h["magic"] != b"SCRAWv1\0":
        raise ValueError("not a syscope raw file")
    cs, off = h["chunk_size"], h["header_size"]
    while off + 64 <= len(data):
        magic, index, tid, state, used = struct.unpack_from("<IIiII", data, off)
        if magic == 0x4B434353:
            pos = off + 64
            end = off + cs
            while pos + 8 <= min(end, len(data)):
                size, rtype, flags = struct.unpack_from("<IHH", data, pos)
                if size == 0 or rtype == 0:
                    break
                if size < 8 or size % 8 or pos + size > end:
                    raise ValueError(f"bad record at offset {pos}")
                payload = data[pos + 8:pos + size]
                if rtype == record_types.OWNER:
                    tid = struct.unpack_from("<i", payload, 0)[0]
                if offsets:
                    yield pos, tid, rtype, flags, payload
                else:
                    yield tid, rtype, flags, payload
                pos += size
        off += cs


def main():
    data = open(sys.argv[1], "rb").read()
    h = parse_header(data)
    print({k: v for k, v in h.items() if k != "magic"})
    counts = {}
    for tid, rtype, flags, payload in records(data):
        name = REC_NAMES.get(rtype, str(rtype))
        counts[name] = counts.get(name, 0) + 1
        if name == "SAMPLE" and "--samples" not in sys.argv:
            continue
        if name == "SAMPLE":
            ts, cpu, kind, n = struct.unpack_from("<QQHH", payload, 0)
            frames = struct.unpack_from(f"<{n}Q", payload, 24)
            print(tid, name, kind, [hex(f) for f in frames])
        elif name in ("MODULE_LOAD", "MODULE_UNLOAD"):
            ts, base, nseg, blen = struct.unpack_from("<QQII", payload, 0)
            path = payload[24 + 32 + 8 * 32 + 8:].split(b"\0")[0].decode()
            print(tid, name, hex(base), nseg, path, "flags", flags)
        elif name == "FUNC_CALL":
            print(tid, name, record_types.decode_func_call(flags, payload))
        elif name == "FUNC_ID":
            print(tid, name, record_types.decode_func_id(flags, payload))
        elif name == "FUNC_COUNT":
            print(tid, name, record_types.decode_func_count(flags, payload))
        elif name == "FUNC_STATS":
            print(tid, name, record_types.decode_func_stats(flags, payload))
        else:
            print(tid, name, flags, payload[:80])
    print(counts)


if __name__ == "__main__":
    main()
