"""Calls libsyscope.so's Python call-site entry (what the CUDA tracer calls at each launch)
from known Python lines, through ctypes, for test_python_callsites.py: 5 calls from
launch() under step() in the main thread (correlation ids 1-5), 3 from launch() under
worker() in a thread (ids 101-103). Prints "on=N" (does syscope read Python stacks here)."""
import ctypes
import threading

ABI = 2
CALLSITES_ON, CALLSITE = 64, 72  # offsets of the entries in struct sc_plugin_api

get = ctypes.CDLL(None).syscope_plugin_api
get.restype, get.argtypes = ctypes.c_void_p, [ctypes.c_uint32]
api = get(ABI)
slot = ctypes.cast(api, ctypes.POINTER(ctypes.c_void_p * 10)).contents
callsites_on = ctypes.CFUNCTYPE(ctypes.c_bool)(slot[CALLSITES_ON // 8])
callsite = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64)(slot[CALLSITE // 8])


def launch(corr):
    callsite(corr)  # LAUNCH LINE


def step(first):
    for corr in range(first, first + 5):
        launch(corr)  # STEP LINE


def worker():
    for corr in range(101, 104):
        launch(corr)  # WORKER LINE


print(f"on={int(callsites_on())}")
step(1)  # MODULE LINE
t = threading.Thread(target=worker)
t.start()
t.join()
print("py_callsite ok")
