"""A GPU idle because its launching thread waits for the GIL: a second Python thread
('hog') computes in pure Python all the time, holding the GIL; the main thread launches a
step, waits for it in torch.cuda.synchronize() (which releases the GIL, so the hog takes
it), then must wait up to the switch interval (5 ms) to get it back before it can launch the
next step. The top cause of idle time must be the GIL wait (test_why_idle_gpu.py).

Usage: idle_gil.py [STEPS]"""
import sys
import threading

import torch

from idle_common import IdleMeter

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
done = False


def hog():
    n = 0
    while not done:
        n = (n * 31 + 7) % 1000003  # pure Python: holds the GIL until forced to drop it


meter = IdleMeter()
worker = threading.Thread(target=hog, name="hog")
worker.start()
for _ in range(STEPS):
    meter.step()
    torch.cuda.synchronize()
done = True
worker.join()
meter.report()
