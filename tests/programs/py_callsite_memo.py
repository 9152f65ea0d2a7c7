"""Call sites from frames that a call site saw before, for test_python_callsites.py: the
thread's memo of its last call site's frames must not keep what changed. launch() is called
from two lines of one frame in turn (correlation ids 201-206)."""
import ctypes

ABI = 2
CALLSITE = 72  # offset of the entry in struct sc_plugin_api

get = ctypes.CDLL(None).syscope_plugin_api
get.restype, get.argtypes = ctypes.c_void_p, [ctypes.c_uint32]
slot = ctypes.cast(get(ABI), ctypes.POINTER(ctypes.c_void_p * 10)).contents
callsite = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_uint64)(slot[CALLSITE // 8])


def launch(corr):
    callsite(corr)  # LAUNCH LINE


def alternate():
    for corr in range(201, 207, 2):
        launch(corr)  # FIRST LINE
        launch(corr + 1)  # SECOND LINE


alternate()
print("py_callsite_memo ok")
