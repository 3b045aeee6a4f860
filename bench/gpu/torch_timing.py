# How the PyTorch scripts of bench/gpu time a call, the way ../shared/tools/torch_decode_anchor.py
# times SDPA: `warmup` untimed calls, then a CUDA event pair around each call, synchronized; the
# median in milliseconds.
import torch
def bench(fn, iters=30, warmup=5):
    for _ in range(warmup): fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(iters):
        s.record(); fn(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts)//2]
