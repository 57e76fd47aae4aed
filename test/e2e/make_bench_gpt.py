"""A small GPT-2 as bench/gpu_train exports it (tanh GELU, which becomes
a GEMM epilogue; the residual stream in float32 with the add hosted in
each LayerNorm; a tied head over a vocabulary of 101, whose logits are
padded), and random token data: the recompute neutrality check of
recompute_gpt2.test.

usage: make_bench_gpt.py OUT.onnx DATA_DIR [T]

T (default 16) is the sequence length: each layer's causal mask buffer is
a [1, 1, T, T] bool initializer (T 256: 64 KiB, a constant the executable
leaves out; external_constants.test).
"""
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "gpu_train"))
import models  # noqa: E402

out, data = sys.argv[1], Path(sys.argv[2])
t = int(sys.argv[3]) if len(sys.argv) > 3 else 16
torch.manual_seed(0)
m = models.GPT2(vocab=101, t=t, d=32, heads=2, layers=2, sdpa=False, checkpoint=False)
tokens = torch.randint(0, 101, (2, t))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    torch.onnx.export(m, (tokens, tokens), out, opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["tokens", "targets"], output_names=["loss"],
                      dynamic_axes={"tokens": {0: "batch"}, "targets": {0: "batch"}})
rng = np.random.default_rng(1)
data.mkdir(parents=True, exist_ok=True)
np.save(data / "tokens.npy", rng.integers(0, 101, (8, t)).astype(np.int64))
np.save(data / "targets.npy", rng.integers(0, 101, (8, t)).astype(np.int64))
