"""A small PyTorch training loop with one NVTX range per step ("train step"), for
test_cuda.py and the GPU benchmark. Prints "loop_s=X" (the loop's own time).

Usage: torch_loop.py STEPS [--tiny] [--torch-profiler [--with-stack]]
  --tiny            each step is two tiny element-wise ops (launch-bound), where a tracer's
                    per-launch cost shows most
  --torch-profiler  run the loop under torch.profiler (CPU and CUDA activities), the peer
                    that the benchmark compares syscope with
  --with-stack      ... recording the Python stack of each operator (with_stack=True), the
                    peer of syscope's Python frames"""
import contextlib
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 20
tiny = "--tiny" in sys.argv
torch.manual_seed(0)
profiler = contextlib.nullcontext()
if "--torch-profiler" in sys.argv:
    from torch.profiler import ProfilerActivity, profile
    profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       with_stack="--with-stack" in sys.argv)

if tiny:
    x = torch.ones(256, device="cuda")
    for _ in range(100):  # kernels loaded (lazily, at their first launch) before timing
        x = x * 1.0001 + 0.0001
else:
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.randn(64, 512, device="cuda")
    target = torch.randint(0, 10, (64,), device="cuda")
torch.cuda.synchronize()

with profiler as prof:
    t0 = time.monotonic()
    for _ in range(steps):
        torch.cuda.nvtx.range_push("train step")
        if tiny:
            x = x * 1.0001 + 0.0001
        else:
            loss = torch.nn.functional.cross_entropy(model(data), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    loop_s = time.monotonic() - t0
if prof is not None:
    events = len(prof.events())  # what a user of torch.profiler would look at
    print(f"torch_profiler_events={events}")
print(f"loop_s={loop_s:.4f}")
print("torch_loop ok")
