"""A GPU idle because the program synchronizes after every step: torch.cuda.synchronize()
drains the queue, so the host's work before the next launch (here 1 ms of Python, the
logging and bookkeeping of a real loop) is no longer hidden behind queued GPU work. The top
cause of idle time must be the synchronization (test_why_idle_gpu.py).

Usage: idle_sync.py [STEPS]"""
import sys
import time

import torch

from idle_common import IdleMeter

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 100


def bookkeeping(seconds=0.001):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


meter = IdleMeter()
for _ in range(STEPS):
    meter.step()
    torch.cuda.synchronize()
    bookkeeping()
meter.report()
