#!/usr/bin/env python3
"""A decoder and validator of Perfetto traces, for syscope's tests. Written from the
field numbers of the Perfetto protos (docs/output-formats.md, Perfetto), independent of the C
writer. It checks what trace_processor would reject or drop:

  - the first packet is a ClockSnapshot; every timestamp is non-negative
  - every TrackEvent has a sequence id, a timestamp and a track_uuid that is defined
  - thread tracks carry pid and tid, process tracks a pid
  - interned ids (names, categories, annotation names, callstacks, frames, function names,
    mappings) resolve on their sequence, and only after SEQ_INCREMENTAL_STATE_CLEARED
  - slices nest properly per track (after sorting by timestamp, file order breaking ties)
  - counter events go to counter tracks only
  - every parent track is defined
  - flows: no id 0, a terminating flow id was started earlier (flow_end_without_start)

and, where Perfetto's trace processor is present (trace_processor.py), that it reads the trace
with no error or data-loss stat and shows as many slices, samples, counter values and flows
as were decoded here (`checked_by_trace_processor` says whether it ran, else why not).

Usage: pftrace.py FILE.pftrace  (prints a summary; exit status 1 when invalid)
"""
import struct
import sys


def varint(buf, pos):
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def fields(buf):
    """Yield (field number, wire type, value) of one message. Length-delimited values are
    bytes, varints ints, fixed64 ints."""
    pos = 0
    while pos < len(buf):
        tag, pos = varint(buf, pos)
        num, wt = tag >> 3, tag & 7
        if wt == 0:
            v, pos = varint(buf, pos)
        elif wt == 1:
            v = struct.unpack_from("<Q", buf, pos)[0]
            pos += 8
        elif wt == 2:
            n, pos = varint(buf, pos)
            v = bytes(buf[pos:pos + n])
            if len(v) != n:
                raise ValueError("length-delimited field runs past its message")
            pos += n
        elif wt == 5:
            v = struct.unpack_from("<I", buf, pos)[0]
            pos += 4
        else:
            raise ValueError(f"wire type {wt} at field {num}")
        yield num, wt, v


def message(buf):
    """A dict: field number -> list of values."""
    d = {}
    for num, _wt, v in fields(buf):
        d.setdefault(num, []).append(v)
    return d


def one(d, num, default=None):
    v = d.get(num)
    return v[0] if v else default


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


class Trace:
    def __init__(self, data):
        self.packets = [message(v) for num, _wt, v in fields(data) if num == 1]
        self.errors = []
        self.tracks = {}        # uuid -> descriptor info
        self.slices = []        # (track, name, category, start, end, args)
        self.instants = []      # (track, name, category, ts, args)
        self.counters = []      # (track, ts, value)
        self.samples = []       # (pid, tid, ts, [frames outermost first as (func, file, line, mapping)])
        self.flows = []         # (flow id, source slice name, destination slice name)
        self.decode()
        if not self.errors:
            import trace_processor
            found, why = trace_processor.check_bytes(data, self)
            self.errors += found
            self.checked_by_trace_processor = why or True

    def error(self, msg):
        self.errors.append(msg)

    def decode(self):
        if not self.packets or 6 not in self.packets[0]:
            self.error("the first packet is not a ClockSnapshot")
        # Descriptors are read first, wherever they are (trace_processor does the same).
        for p in self.packets:
            if 60 in p:
                d = message(one(p, 60))
                uuid = one(d, 1)
                if not uuid:
                    self.error("track descriptor without uuid")
                    continue
                info = {"name": one(d, 2, b"").decode(), "parent": one(d, 5)}
                if 3 in d:
                    pd = message(one(d, 3))
                    if 1 not in pd:
                        self.error(f"process track {uuid:#x} without pid")
                    info.update(kind="process", pid=one(pd, 1),
                                name=one(pd, 6, b"").decode(),
                                cmdline=[c.decode() for c in pd.get(2, [])])
                elif 4 in d:
                    td = message(one(d, 4))
                    if 1 not in td or 2 not in td:
                        self.error(f"thread track {uuid:#x} without pid and tid")
                    info.update(kind="thread", pid=one(td, 1), tid=one(td, 2),
                                name=one(td, 5, b"").decode())
                elif 8 in d:
                    cd = message(one(d, 8))
                    info.update(kind="counter", unit=one(cd, 6, b"").decode())
                else:
                    info.update(kind="custom")
                if uuid in self.tracks:
                    self.error(f"track {uuid:#x} described twice")
                self.tracks[uuid] = info
        for uuid, info in self.tracks.items():
            if info["parent"] and info["parent"] not in self.tracks:
                self.error(f"track {uuid:#x} has an undefined parent {info['parent']:#x}")
        state = {}  # sequence -> interning tables, or None before CLEARED
        open_events = []
        for index, p in enumerate(self.packets):
            if 6 in p:
                continue
            seq = one(p, 10)
            flags = one(p, 13, 0)
            ts = one(p, 8)
            if ts is not None and signed(ts) < 0:
                self.error(f"packet {index}: negative timestamp")
            if flags & 1:
                state[seq] = {k: {} for k in (1, 2, 3, 5, 6, 7, 17, 18, 19)}
            if 12 in p:
                if state.get(seq) is None:
                    self.error(f"packet {index}: interned data before the state was cleared")
                else:
                    interned = message(one(p, 12))
                    for field, entries in interned.items():
                        if field not in state[seq]:
                            continue
                        for e in entries:
                            m = message(e)
                            state[seq][field][one(m, 1)] = m
            if 11 in p:
                self.track_event(index, p, seq, state, ts, open_events)
            if 66 in p:
                self.perf_sample(index, p, seq, state, ts)
        self.close_slices(open_events)

    def resolve(self, state, seq, field, iid, what):
        tables = state.get(seq)
        if tables is None:
            self.error(f"{what}: sequence {seq} has no incremental state")
            return None
        entry = tables[field].get(iid)
        if entry is None:
            self.error(f"{what}: interned id {iid} (field {field}) undefined")
        return entry

    def track_event(self, index, p, seq, state, ts, open_events):
        ev = message(one(p, 11))
        if seq is None:
            self.error(f"packet {index}: track event without sequence id")
        if ts is None:
            self.error(f"packet {index}: track event without timestamp")
            return
        track = one(ev, 11)
        if track not in self.tracks:
            self.error(f"packet {index}: track {track} has no descriptor")
            return
        etype = one(ev, 9)
        name = cat = None
        if 10 in ev:
            e = self.resolve(state, seq, 2, one(ev, 10), f"packet {index} name")
            name = one(e, 2, b"").decode() if e else None
        if 3 in ev:
            e = self.resolve(state, seq, 1, one(ev, 3), f"packet {index} category")
            cat = one(e, 2, b"").decode() if e else None
        args = {}
        for a in ev.get(4, []):
            am = message(a)
            e = self.resolve(state, seq, 3, one(am, 1), f"packet {index} annotation")
            aname = one(e, 2, b"").decode() if e else "?"
            if 4 in am:
                args[aname] = signed(one(am, 4))
            elif 3 in am:
                args[aname] = one(am, 3)
            elif 5 in am:
                args[aname] = struct.unpack("<d", struct.pack("<Q", one(am, 5)))[0]
            elif 6 in am:
                args[aname] = one(am, 6).decode()
            elif 7 in am:
                args[aname] = one(am, 7)
        kind = self.tracks[track]["kind"]
        if etype == 4:
            if kind != "counter":
                self.error(f"packet {index}: counter value on a {kind} track")
            value = one(ev, 44)
            value = struct.unpack("<d", struct.pack("<Q", value))[0] if value is not None \
                else signed(one(ev, 30, 0))
            self.counters.append((track, ts, value))
            return
        if kind == "counter":
            self.error(f"packet {index}: slice or instant on a counter track")
        flows = (ev.get(47, []), ev.get(48, []))
        open_events.append((ts, index, etype, track, name, cat, args, flows))

    def close_slices(self, events):
        # trace_processor sorts by timestamp; ties keep file order.
        events.sort(key=lambda e: (e[0], e[1]))
        stacks = {}
        active = {}  # flow id -> name of the slice that has it now
        for ts, index, etype, track, name, cat, args, (starts, ends) in events:
            for f in starts:
                if f == 0:
                    self.error(f"packet {index}: flow id 0")
                active[f] = name
            for f in ends:
                if f not in active:
                    self.error(f"packet {index}: flow {f:#x} ends without a start")
                else:
                    self.flows.append((f, active.pop(f), name))
            st = stacks.setdefault(track, [])
            if etype == 1:
                st.append([track, name, cat, ts, None, args])
            elif etype == 2:
                if not st:
                    self.error(f"packet {index}: slice end with no open slice on its track")
                    continue
                s = st.pop()
                if ts < s[3]:
                    self.error(f"packet {index}: slice {s[1]} ends before it begins")
                s[4] = ts
                self.slices.append(tuple(s))
            elif etype == 3:
                self.instants.append((track, name, cat, ts, args))
        for track, st in stacks.items():
            for s in st:
                self.error(f"slice {s[1]} on track {track:#x} never ends")

    def perf_sample(self, index, p, seq, state, ts):
        s = message(one(p, 66))
        frames = []
        cs = self.resolve(state, seq, 7, one(s, 4), f"packet {index} callstack")
        if cs is not None:
            for fid in cs.get(2, []):
                f = self.resolve(state, seq, 6, fid, f"packet {index} frame")
                if f is None:
                    continue
                fn = self.resolve(state, seq, 5, one(f, 2), f"packet {index} function")
                mp = self.resolve(state, seq, 19, one(f, 3), f"packet {index} mapping")
                if mp is not None:
                    for path in mp.get(7, []):
                        self.resolve(state, seq, 17, path, f"packet {index} mapping path")
                src = one(f, 5)
                srcpath = self.resolve(state, seq, 18, src, f"packet {index} source") if src \
                    else None
                frames.append((one(fn, 2, b"").decode() if fn else "?",
                               one(srcpath, 2, b"").decode() if srcpath else "",
                               one(f, 6, 0)))
            if not frames:
                self.error(f"packet {index}: empty callstack")
        self.samples.append((one(s, 2), one(s, 3), ts, frames))

    def thread_of(self, track):
        t = self.tracks.get(track, {})
        return t.get("tid")


def content(trace):
    """What a trace shows, independent of ids and file order: tracks, slices, instants,
    counter values, samples and flows, each sorted; tracks named by (kind, tid, name)."""
    def track(u):
        i = trace.tracks[u]
        return (i["kind"], i.get("tid"), i["name"])
    return {
        "tracks": sorted((i["kind"], i.get("pid") or 0, i.get("tid") or 0, i["name"],
                          i.get("unit") or "") for i in trace.tracks.values()),
        "slices": sorted((track(s[0]), s[1], s[2], s[3], s[4], sorted(s[5].items()))
                         for s in trace.slices),
        "instants": sorted((track(i[0]),) + tuple(i[1:4]) for i in trace.instants),
        "counters": sorted((track(c[0]), c[1], c[2]) for c in trace.counters),
        "samples": sorted((s[0], s[1], s[2], tuple(s[3])) for s in trace.samples),
        "flows": sorted((f[1], f[2]) for f in trace.flows),
    }


def main():
    t = Trace(open(sys.argv[1], "rb").read())
    print(f"{len(t.packets)} packets, {len(t.tracks)} tracks, {len(t.slices)} slices, "
          f"{len(t.instants)} instants, {len(t.counters)} counter values, "
          f"{len(t.samples)} samples, {len(t.flows)} flows")
    for e in t.errors[:50]:
        print("ERROR:", e)
    sys.exit(1 if t.errors else 0)


if __name__ == "__main__":
    main()
