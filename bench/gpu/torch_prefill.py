# PyTorch SDPA prefill on the same GPU (causal, GQA, fp16), for bench/gpu/attention.mjs's prefill rows:
# B = 1 with 2048 and 8192 tokens. Prints "prefill backend S ms TFLOP/s" (4 * D FLOPs per visible
# (query, key) pair per head).
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
from torch_timing import bench
torch.manual_seed(0)
Hq, Hkv, D = 32, 8, 128
for S in (2048, 8192):
    q = torch.randn(1, Hq, S, D, device='cuda', dtype=torch.float16)
    k = torch.randn(1, Hkv, S, D, device='cuda', dtype=torch.float16)
    v = torch.randn(1, Hkv, S, D, device='cuda', dtype=torch.float16)
    flops = 4 * D * Hq * S * (S + 1) / 2
    for name, be in [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]:
        try:
            with sdpa_kernel(be):
                ms = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True))
            print(f"prefill {name} {S} {ms:.4f} {flops / ms / 1e9:.1f}")
        except Exception as ex:
            print(f"prefill {name} {S} unavailable: {str(ex)[:80]}")
