"""PyTorch matrix products through cuBLAS (whose kernels are launched through the driver API,
not the runtime), for test_cuda_links.py: STEPS (default 20) steps of one float32 matmul
(512 x 512) and one elementwise op, then one sum. Prints "steps N" and "done".

Usage: torch_matmul.py [STEPS]"""
import sys

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
a = torch.randn(512, 512, device="cuda")
b = torch.randn(512, 512, device="cuda")
for _ in range(steps):
    c = a @ b
    a = torch.tanh(c)
s = a.sum().item()
torch.cuda.synchronize()
print("steps", steps)
print("done")
