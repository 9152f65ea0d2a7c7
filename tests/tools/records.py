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
