#!/usr/bin/env python3
"""Fail when a C source differs from what clang-format makes of it (the checked-in style)."""
import pathlib
import subprocess
import sys

clang_format, root = sys.argv[1], pathlib.Path(sys.argv[2])
files = [p for d in ("src", "tests", "demo", "bench") for p in (root / d).rglob("*")
         if p.suffix in (".c", ".h", ".cpp")]
bad = []
for f in files:
    out = subprocess.run([clang_format, "--style=file", str(f)], capture_output=True,
                         cwd=root, check=True).stdout
    if out != f.read_bytes():
        bad.append(str(f.relative_to(root)))
for b in bad:
    print(f"not formatted: {b} (run: clang-format -i {b})")
print(f"{len(files) - len(bad)} of {len(files)} files formatted")
sys.exit(1 if bad else 0)
