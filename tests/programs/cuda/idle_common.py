"""What the GPU-idle fixtures (idle_loader.py, idle_gil.py, idle_sync.py; test_why_idle_gpu.py)
share: a step of GPU work long enough to time (one kernel that spins for a fixed number of GPU
cycles, torch.cuda._sleep, about 2 ms), and the program's own measurement of how idle the GPU
was: busy is the steps' count times one step's kernel time (measured with CUDA events before
the steps begin, while nothing else runs), the span from the first step's start event to the
last one's end event. One kernel per step, and its time measured apart, because events around
several launches count as busy any wait of the launching thread between them (a launch that
waits for the GIL leaves the GPU idle inside the events). It prints "idle_fraction=F steps=N"."""
import torch

CYCLES = 4_000_000  # about 2 ms at the H200's 1.98 GHz


class IdleMeter:
    def __init__(self):
        torch.cuda._sleep(CYCLES)  # loads the kernel before anything is timed
        torch.cuda.synchronize()
        times = []
        for _ in range(5):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(CYCLES)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        self.kernel_ms = sorted(times)[2]
        self.events = []

    def step(self, factor=1.0):
        del factor  # the data loader's batch: the step depends on it, as real work would
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(CYCLES)
        end.record()
        self.events.append((start, end))

    def report(self):
        torch.cuda.synchronize()
        busy = self.kernel_ms * len(self.events)
        span = self.events[0][0].elapsed_time(self.events[-1][1])
        print(f"idle_fraction={max(0.0, 1 - busy / span):.4f} steps={len(self.events)}",
              flush=True)
