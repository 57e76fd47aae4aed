#!/usr/bin/python3
"""DFT at opset 20 (axis an input) against numpy's FFT.

x [N, 6, 3, 1] real and z [N, 5, 2] complex (interleaved parts):
  full = DFT(x, axis 1); half = DFT(x, axis 2, onesided);
  padded = DFT(x, dft_length 8, axis -3) (zero-padded); cut = DFT(x,
  dft_length 4, axis 1); back = inverse DFT(z) over its default axis -2.

usage: make_dft.py OUT.onnx DATA_DIR
       make_dft.py --check DATA_DIR OUT_DIR   compares the outputs with numpy
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import save_data, save_model

rng = np.random.default_rng(0)
X = rng.standard_normal((2, 6, 3, 1)).astype(np.float32)
Z = rng.standard_normal((2, 5, 2)).astype(np.float32)


def expected():
    x, z = X[..., 0].astype(np.float64), Z[..., 0] + 1j * Z[..., 1].astype(np.float64)
    parts = lambda c: np.stack([c.real, c.imag], -1)
    return {"full": parts(np.fft.fft(x, axis=1)),
            "half": parts(np.fft.rfft(x, axis=2)),
            "padded": parts(np.fft.fft(x, n=8, axis=1)),
            "cut": parts(np.fft.fft(x, n=4, axis=1)),
            "back": parts(np.fft.ifft(z, axis=1))}


def write(path, data):
    n = helper.make_node
    i64 = lambda name, v: n("Constant", [], [name], value=numpy_helper.from_array(np.array(v, np.int64)))
    nodes = [i64("one", 1), i64("two", 2), i64("minus3", -3), i64("eight", 8), i64("four", 4),
             n("DFT", ["x", "", "one"], ["full"]),
             n("DFT", ["x", "", "two"], ["half"], onesided=1),
             n("DFT", ["x", "eight", "minus3"], ["padded"]),
             n("DFT", ["x", "four", "one"], ["cut"]),
             n("DFT", ["z"], ["back"], inverse=1)]
    vi = helper.make_tensor_value_info
    shapes = {"full": ["N", 6, 3, 2], "half": ["N", 6, 2, 2], "padded": ["N", 8, 3, 2],
              "cut": ["N", 4, 3, 2], "back": ["N", 5, 2]}
    g = helper.make_graph(nodes, "dft", [vi("x", TensorProto.FLOAT, ["N", 6, 3, 1]),
                                         vi("z", TensorProto.FLOAT, ["N", 5, 2])],
                          [vi(k, TensorProto.FLOAT, s) for k, s in shapes.items()])
    # libonnx 1.12 knows DFT-17 only: otc checks DFT-20 as that.
    save_model(g, path, opset=20, check=False)
    save_data(data, x=X, z=Z)


def check(out):
    ok = True
    for k, want in expected().items():
        got = np.load(Path(out) / f"{k}.npy").astype(np.float64)
        # float32 products of O(1) values summed over <= 8 terms
        err = np.abs(got - want).max() if got.shape == want.shape else np.inf
        print(f"{k}: {'ok' if err < 1e-5 else 'WRONG'} (shape {got.shape}, max |diff| {err:.2g})")
        ok &= err < 1e-5
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    check(sys.argv[3]) if sys.argv[1] == "--check" else write(sys.argv[1], sys.argv[2])
