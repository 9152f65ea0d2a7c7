"""NCCL through torch.distributed on one GPU (world size 1, backend nccl), for
test_nccl_gpu.py: known collectives of known sizes, each printed as "call KIND COUNT BYTES".

  3 x all_reduce          1 Mi float32   (4 MiB)
  2 x broadcast           64 Ki float64  (512 KiB), from rank 0
  1 x all_gather_into_tensor  256 Ki float16 per rank (512 KiB)

(reduce_scatter_tensor is left out: PyTorch 2.11 does it without NCCL on one rank.)

Usage: torch_nccl.py [PORT]"""
import os
import sys

import torch
import torch.distributed as dist

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", sys.argv[1] if len(sys.argv) > 1 else "29533")
torch.cuda.set_device(0)
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))

x = torch.ones(1 << 20, dtype=torch.float32, device="cuda")
for _ in range(3):
    dist.all_reduce(x)
    print("call AllReduce", x.numel(), x.numel() * 4)
b = torch.ones(1 << 16, dtype=torch.float64, device="cuda")
for _ in range(2):
    dist.broadcast(b, src=0)
    print("call Broadcast", b.numel(), b.numel() * 8)
part = torch.ones(1 << 18, dtype=torch.float16, device="cuda")
whole = torch.empty(1 << 18, dtype=torch.float16, device="cuda")
dist.all_gather_into_tensor(whole, part)
print("call AllGather", part.numel(), part.numel() * 2)
torch.cuda.synchronize()
print("nccl version", ".".join(map(str, torch.cuda.nccl.version())))
dist.destroy_process_group()
print("done")
