"""What the GPU-idle fixtures (idle_loader.py, idle_gil.py, idle_sync.py; test_why_idle_gpu.py)
share: a step of GPU work long enough to time (element-wise kernels on a 256 MiB tensor,
launched back to back, so the GPU never waits inside a step), and the program's own
measurement of how idle the GPU was: CUDA events around each step's work; busy is the sum of
the steps' times, the span from the first step's start to the last one's end. It prints
"idle_fraction=F steps=N"."""
import torch

ELEMENTS = 1 << 26
# Two kernels per op (mul_, add_), each reading and writing 256 MiB: about 0.13 ms on an H200,
# so a step keeps the GPU busy about 2 ms.
OPS_PER_STEP = 8


class IdleMeter:
    def __init__(self):
        self.x = torch.empty(ELEMENTS, device="cuda")  # an allocation: no GPU work yet
        # The first GPU work, right before the steps: both kernels loaded (lazily, at their
        # first launch), so that no step waits for a module load between its events.
        self.x.zero_().mul_(1.0).add_(0.0)
        torch.cuda.synchronize()
        self.events = []

    def step(self, factor=1.0001):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(OPS_PER_STEP):
            self.x.mul_(factor).add_(0.0001)
        end.record()
        self.events.append((start, end))

    def report(self):
        torch.cuda.synchronize()
        busy = sum(s.elapsed_time(e) for s, e in self.events)
        span = self.events[0][0].elapsed_time(self.events[-1][1])
        print(f"idle_fraction={1 - busy / span:.4f} steps={len(self.events)}", flush=True)
