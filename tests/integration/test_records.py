"""The record types have one owner, src/store/records.def: the documentation's table, the
Python decoders' constants and a real session agree with it."""
import os
import re

import harness
from harness import check, check_eq, fixture, syscope

import rawdump
import records


def test_documented_table_matches_the_definitions():
    doc = open(os.path.join(harness.SOURCE, "docs", "record-format.md")).read()
    rows = re.findall(r"^\| ([0-9, ]+) \| ([A-Z_, ]+) \| ([0-9, ]+) \|", doc, re.M)
    documented = {}
    for ids, names, sizes in rows:
        ids = [int(i) for i in ids.split(",")]
        names = [n.strip() for n in names.split(",")]
        check_eq(len(ids), len(names), f"row {ids}")
        for i, n in zip(ids, names):
            documented[i] = (n, int(sizes.split(",")[0]) if "," not in sizes else None)
    check_eq(sorted(documented), sorted(records.NAMES), "every type documented, no other")
    for i, (name, size) in documented.items():
        check_eq(name, records.NAMES[i], f"type {i}'s name")
        if size is not None:
            check_eq(size, records.SIZES[i], f"{name}'s size")


def test_a_session_holds_only_defined_types_at_their_sizes():
    r = syscope("sample", "-f", "500", "--", fixture("hot"), "0.3")
    check_eq(r.rc, 0, r.describe())
    seen = set()
    for raw in r.raw_files():
        for _tid, rtype, _flags, payload in rawdump.records(open(raw, "rb").read()):
            check(rtype in records.NAMES, f"type {rtype} is defined")
            check(8 + len(payload) >= records.SIZES[rtype],
                  f"{records.NAMES[rtype]}: {8 + len(payload)} bytes >= its fixed part")
            seen.add(records.NAMES[rtype])
    check({"PROCESS", "THREAD_BEGIN", "MODULE_LOAD", "SAMPLER", "SAMPLE"} <= seen, sorted(seen))


if __name__ == "__main__":
    harness.main(globals())
