"""For test_attach_more.py: a PyTorch loop of tiny element-wise ops started without syscope,
attached to while it runs. Prints "pid=N", then repeats x = x * 1.0001 + 0.0001 on the GPU
(two kernels a step, about a thousand steps a second) for argv[1] seconds (default 20) or until "quit" on stdin; "burst N"
makes N more steps of y += 1 (answered "burst N done"). At the end it checks x against the
same steps done on the CPU and y against the bursts: "attach_torch ok steps=S bursts=B".
With --torch-profiler the loop runs under torch.profiler (another CUPTI client in the
process, which an attach must notice and leave alone)."""
import contextlib
import sys
import threading
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1][0].isdigit() else 20
profiler = contextlib.nullcontext()
if "--torch-profiler" in sys.argv:
    from torch.profiler import ProfilerActivity, profile
    profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
asked = []
quit_asked = threading.Event()


def commands():
    for line in sys.stdin:
        if line.startswith("burst "):
            asked.append(int(line.split()[1]))
        elif line.startswith("quit"):
            break
    quit_asked.set()


x = torch.ones(256, device="cuda")
y = torch.zeros(256, device="cuda")
cpu = torch.ones(1)
torch.cuda.synchronize()
threading.Thread(target=commands, daemon=True).start()
steps = bursts = 0
end = time.monotonic() + seconds
with profiler:
    print(f"pid={__import__('os').getpid()}", flush=True)  # the profiler runs (if asked)
    while not quit_asked.is_set() and time.monotonic() < end:
        while asked:
            n = asked.pop(0)
            for _ in range(n):
                y += 1
            torch.cuda.synchronize()
            bursts += n
            print(f"burst {n} done", flush=True)
        x = x * 1.0001 + 0.0001
        cpu = cpu * 1.0001 + 0.0001
        steps += 1
        time.sleep(0.001)  # about a thousand steps a second: a session of modest size
torch.cuda.synchronize()
good = torch.allclose(x.cpu(), cpu.expand(256), rtol=1e-4) and bool((y.cpu() == bursts).all())
print(f"attach_torch {'ok' if good else 'wrong'} steps={steps} bursts={bursts}", flush=True)
sys.exit(0 if good else 1)
