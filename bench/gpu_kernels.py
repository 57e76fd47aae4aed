#!/usr/bin/env python3
"""Achieved bandwidth of otc's CUDA kernels against the device's copy
bandwidth, on the GPU machine (run by test/gpu/run_bundle.sh).

Two `otc kernel` executables built by test/gpu/bundle.sh from
bench/kernels/*.mlir:
  bench_ce     softmax cross-entropy over 65536 x 1024 float32 logits:
               two RowReduce steps (a warp per row, then the mean);
  bench_chain  8 links of tanh(x) + x over 2^26 floats, one elementwise
               kernel.
Useful bytes are the tensors read and written once (the row kernel reads
each row twice; the second read mostly hits L2). The copy bandwidth is
PyTorch's device-to-device copy of 256 MiB, read plus write. Target: 70%.

usage: gpu_kernels.py BUNDLE_DIR
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch


def copy_gbs(nbytes=256 << 20, reps=20):
    x = torch.empty(nbytes // 4, device="cuda")
    y = torch.empty_like(x)
    y.copy_(x)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        y.copy_(x)
    end.record()
    torch.cuda.synchronize()
    return 2 * nbytes * reps / (start.elapsed_time(end) / 1e3) / 1e9


def otc_ms(exe, args, reps=20, env=None):
    with tempfile.TemporaryDirectory() as tmp:
        for i, a in enumerate(args):
            np.save(Path(tmp) / f"arg{i}.npy", a)
        out = subprocess.run([str(exe), tmp, "--repeat", str(reps)], check=True,
                             capture_output=True, text=True, env=env).stdout
    return json.loads(out.splitlines()[-1])["ms_per_run"]


def main():
    bundle = Path(sys.argv[1])
    rng = np.random.default_rng(0)
    copy = copy_gbs()
    rows = []
    logits = rng.standard_normal((65536, 1024), dtype=np.float32)
    labels = rng.integers(0, 1024, 65536).astype(np.int64)
    ms = otc_ms(bundle / "bench_ce", [logits, labels])
    rows.append(("softmax cross-entropy 65536x1024 (RowReduce)", logits.nbytes + labels.nbytes, ms))
    x = rng.standard_normal(1 << 26, dtype=np.float32)
    ms = otc_ms(bundle / "bench_chain", [x])
    rows.append(("elementwise chain, 8 x (tanh(x) + x), 2^26", 2 * x.nbytes, ms))
    print(f"device: {torch.cuda.get_device_name()}, copy bandwidth {copy:.0f} GB/s")
    for name, nbytes, ms in rows:
        gbs = nbytes / (ms / 1e3) / 1e9
        print(f"{name}: {ms:.3f} ms, {gbs:.0f} GB/s, {100 * gbs / copy:.0f}% of copy")


if __name__ == "__main__":
    main()
