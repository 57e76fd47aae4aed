#!/usr/bin/env python3
"""Fused attention's forward plus backward on the GPU: otc's attention on
cuDNN (runtime/CudnnAttention.cpp) and on its own kernels
(kernels/attention.h, OTC_ATTENTION=kernel) against PyTorch's
scaled_dot_product_attention (cuDNN where PyTorch has it, else its default
backend), side by side, on the GPU machine (run by test/gpu/run_bundle.sh).

GPT-2 124M's attention: batch 8, 12 heads, T = S = 1024, head dim 64,
causal, bf16. The `otc kernel` executable (built by test/gpu/bundle.sh with
check_attention.py --build-only) runs otc.attention and otc.attention_grad
once per run. TFLOP/s count the causal half of the products: forward
2 x 2 B H T S D / 2, backward 2.5 times that (FlashAttention's convention).

usage: attention_gpu.py BUNDLE_DIR
"""
import os
import sys
from pathlib import Path

import numpy as np
import torch

from gpu_kernels import otc_ms

B, H, T, D = 8, 12, 1024, 64
FLOPS = 3.5 * 2 * 2 * B * H * T * T * D / 2


def torch_ms(reps=20):
    q, k, v = (torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    g = torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16)
    backend = "default"
    ctx = None
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        ctx, backend = sdpa_kernel(SDPBackend.CUDNN_ATTENTION), "cuDNN"
    except ImportError:
        pass

    def step():
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.backward(g)

    def timed():
        step()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            step()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / reps

    if ctx is not None:
        try:
            with ctx:
                return timed(), backend
        except RuntimeError:
            pass
    return timed(), "default"


def main():
    bundle = Path(sys.argv[1])
    rng = np.random.default_rng(0)
    q, k, v, g = (rng.standard_normal((B, H, T, D), dtype=np.float32) for _ in range(4))
    exe = bundle / "bench_attention" / "attention"
    ms = otc_ms(exe, [q, k, v, g])
    kms = otc_ms(exe, [q, k, v, g], env=dict(os.environ, OTC_ATTENTION="kernel"))
    tms, backend = torch_ms()
    print(f"device: {torch.cuda.get_device_name()}; attention B {B} H {H} T {T} D {D}, causal, bf16, "
          "forward + backward")
    print(f"otc (cuDNN where built with it): {ms:.3f} ms, {FLOPS / ms / 1e9:.1f} TFLOP/s")
    print(f"otc's own kernels: {kms:.3f} ms, {FLOPS / kms / 1e9:.1f} TFLOP/s")
    print(f"PyTorch SDPA ({backend}): {tms:.3f} ms, {FLOPS / tms / 1e9:.1f} TFLOP/s")
    print(f"otc / PyTorch time: {ms / tms:.2f} (own kernels {kms / tms:.2f})")


if __name__ == "__main__":
    main()
