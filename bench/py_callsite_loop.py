"""The workload of bench/python-bench's callsite case: libsyscope.so's Python call-site entry
(what the CUDA tracer calls at each launch) called N times in a row by SPIN (a C loop,
bench/py_callsite_spin.c, built by python-bench), itself called from Python code at the
bottom of a stack 2 and DEPTH frames deep; and a C function of the same signature (libc's
labs) called the same way. The difference is what reading the Python stack costs a call.
The quickest of ROUNDS rounds of each (thread CPU time) is printed as "NAME=NS" (ns a call).

Usage: py_callsite_loop.py SPIN N DEPTH ROUNDS"""
import ctypes
import sys

ABI, CALLSITE = 2, 72  # struct sc_plugin_api: its ABI, the py_callsite entry's offset

get = ctypes.CDLL(None).syscope_plugin_api
get.restype, get.argtypes = ctypes.c_void_p, [ctypes.c_uint32]
entries = ctypes.cast(get(ABI), ctypes.POINTER(ctypes.c_void_p * 10)).contents
callsite = entries[CALLSITE // 8]
plain = ctypes.cast(ctypes.CDLL(None).labs, ctypes.c_void_p).value
spin = ctypes.PyDLL(sys.argv[1]).spin  # the GIL held, as in PyTorch's launches
spin.restype, spin.argtypes = ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int64]


def loop(fn, n):
    return spin(fn, n)


def nested(depth, fn, n):
    """`depth` frames with loop()'s and the module's: this one depth - 2 times."""
    return loop(fn, n) if depth <= 3 else nested(depth - 1, fn, n)


n, depth, rounds = (int(a) for a in sys.argv[2:5])
best = {}
for _ in range(rounds):
    for d in (2, depth):
        for name, fn in (("callsite", callsite), ("plain", plain)):
            t = (loop(fn, n) if d == 2 else nested(d, fn, n)) / n
            key = f"{name}{d}"
            best[key] = min(best.get(key, t), t)
print(" ".join(f"{k}={v:.1f}" for k, v in sorted(best.items())))
