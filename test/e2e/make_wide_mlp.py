#!/usr/bin/python3
"""An MLP whose first weight holds 4 MiB (1024 x 1024 float32), for the
checks that an executable does not carry the weights it reads at start:

  x [N, 1024] -> Gemm(w1, b1) -> Relu -> Gemm(w2, b2) -> cross-entropy(y)

  make_wide_mlp.py OUT_DIR [HIDDEN]   writes OUT_DIR/model.onnx and OUT_DIR/data

HIDDEN (default 1024) sets w1's rows: 65536 makes it 256 MiB, mostly zeros
past its first rows (quick to write), for the compile's memory.
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lit" / "Inputs"))
from lit_inputs import save_data, save_model  # noqa: E402

D, C, N = 1024, 10, 8


def main():
    out = Path(sys.argv[1])
    hidden = int(sys.argv[2]) if len(sys.argv) > 2 else D
    rng = np.random.default_rng(0)
    w1 = np.zeros((hidden, D), np.float32)
    w1[:D] = rng.standard_normal((min(hidden, D), D)) / np.sqrt(D)
    w2 = (rng.standard_normal((C, hidden)) / np.sqrt(hidden)).astype(np.float32)
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")]
    inits += [numpy_helper.from_array(np.zeros(s, np.float32), n) for n, s in (("b1", (hidden,)), ("b2", (C,)))]
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["logits"], transB=1),
        helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "y"], ["loss"]),
    ]
    graph = helper.make_graph(
        nodes, "wide_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", D]),
         helper.make_tensor_value_info("y", TensorProto.INT64, ["N"])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    out.mkdir(parents=True, exist_ok=True)
    save_model(graph, out / "model.onnx")
    save_data(out / "data", x=rng.standard_normal((N, D)).astype(np.float32),
              y=rng.integers(0, C, N).astype(np.int64))


if __name__ == "__main__":
    main()
