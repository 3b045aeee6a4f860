# The CUDA timing floor on the same GPU, timed the way ../shared/tools/torch_decode_anchor.py times
# SDPA (a CUDA event pair around each call, synchronized, median): a one-element add (one tiny
# kernel) and two of them back to back, and a 128 MiB device copy (64 MiB read + 64 MiB written,
# the small decode shapes' K and V bytes), for bench/gpu/attention.mjs's WebGPU timing floor.
# Prints "floor cuda CASE us".
import torch
from torch_timing import bench as timed
def bench(fn):
    return timed(fn, iters=200, warmup=20)
x = torch.zeros(1, device='cuda')
def two():
    x.add_(1); x.add_(1)
src = torch.empty(64 << 20, dtype=torch.uint8, device='cuda')
dst = torch.empty_like(src)
print(f"floor cuda one-tiny-kernel {1e3 * bench(lambda: x.add_(1)):.2f}")
print(f"floor cuda two-tiny-kernels {1e3 * bench(two):.2f}")
print(f"floor cuda copy-128MiB-moved {1e3 * bench(lambda: dst.copy_(src)):.2f}")
