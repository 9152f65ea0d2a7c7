"""Which audit events make syscope look for multiprocessing.process (pyapi_names.c).

A stand-in multiprocessing.process goes into sys.modules; other events (sys._getframe,
open, exec) must leave its BaseProcess._bootstrap alone, an os.fork event wraps it."""
import sys
import time
import types
import _thread

end = time.monotonic() + 10
while isinstance(_thread.start_new_thread.__self__, types.ModuleType):
    if time.monotonic() > end:
        print("syscope's names were never installed")
        sys.exit(3)
    time.sleep(0.001)


class BaseProcess:
    def _bootstrap(self):
        pass


def wrapped():
    return not isinstance(BaseProcess.__dict__["_bootstrap"], types.FunctionType)


stand_in = types.ModuleType("multiprocessing.process")
stand_in.BaseProcess = BaseProcess
sys.modules["multiprocessing.process"] = stand_in
for _ in range(1000):
    sys._getframe()
with open(__file__):
    pass
exec("pass")
print("after other events:", wrapped())
sys.audit("os.fork")
print("after os.fork:", wrapped())
