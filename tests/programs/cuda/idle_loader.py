"""A GPU starved by its data loader: every batch comes from a Dataset whose __getitem__
sleeps (num_workers=0, so on the launching thread), longer than a step's GPU work. The top
cause of idle time must be the data loader (test_why_idle_gpu.py).

Usage: idle_loader.py [STEPS]"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

from idle_common import IdleMeter

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
LOAD_S = 0.008  # per batch; a step's GPU work is about 2 ms


class SlowDataset(Dataset):
    def __len__(self):
        return STEPS

    def __getitem__(self, i):
        time.sleep(LOAD_S)  # reading and decoding a sample, say
        return torch.tensor([1.0001])


# The first batch before any GPU work, so that syscope's span (from the first op) and the
# program's (from the first step) start together.
batches = iter(DataLoader(SlowDataset(), batch_size=1, num_workers=0))
batch = next(batches)
meter = IdleMeter()
for i in range(STEPS):
    meter.step(float(batch[0, 0]))
    if i + 1 < STEPS:
        batch = next(batches)
meter.report()
