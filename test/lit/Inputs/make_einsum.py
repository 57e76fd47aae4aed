#!/usr/bin/python3
"""Einsum in the forms exporters emit: a = x W ("bij,jk->bik"); b = a v
with an ellipsis ("...k,k->...k"); c = "bik,jk->bij" (b, q); d = "B I J, B K J
-> B I K" (c, c, a batched product of a tensor with itself, in capitals and
spaces as torchvision's MaxViT exports it); y = "bik,bij,k
->bj" (d, c, u: three operands); g = "bii->bi" (c's diagonal); h =
"bj,bj->bj" (y, g); z, the implicit output of "Bj,jk" (h, r), is "Bk"
(numpy's character order).
Its data, and the parameters after SGD from float64 central finite
differences of numpy's einsum. Also writes BAD.onnx, whose equation has a
digit, which otc refuses.

usage: make_einsum.py OUT.onnx BAD.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, bad_path, data = sys.argv[1], sys.argv[2], Path(sys.argv[3])
steps, lr, expected = int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
rng = np.random.default_rng(18)
params = {"W": rng.normal(0, 0.3, (4, 5)), "v": rng.normal(1, 0.3, (5,)),
          "q": rng.normal(0, 0.3, (3, 5)), "u": rng.normal(0, 0.5, (3,)), "r": rng.normal(0, 0.5, (3, 2))}
params = {k: v.astype(np.float32) for k, v in params.items()}
equations = [("bij,jk->bik", ["x", "W"], "a"), ("...k,k->...k", ["a", "v"], "b"),
             ("bik,jk->bij", ["b", "q"], "c"), ("B I J, B K J -> B I K", ["c", "c"], "d"),
             ("bik,bij,k->bj", ["d", "c", "u"], "y"), ("bii->bi", ["c"], "g"),
             ("bj,bj->bj", ["y", "g"], "h"), ("Bj,jk", ["h", "r"], "z")]
n = helper.make_node
nodes = [n("Einsum", ins, [o], equation=eq) for eq, ins, o in equations]
graph = helper.make_graph(
    nodes, "einsum",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
    [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 2])],
    [numpy_helper.from_array(v, k) for k, v in params.items()])
save_model(graph, out, opset=12)
bad = helper.make_graph(
    [n("Einsum", ["x"], ["y"], equation="b1i->bi")], "capital",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
save_model(bad, bad_path, opset=12, check=False)

x = rng.normal(0, 1, (8, 3, 4)).astype(np.float32)
t = rng.normal(0, 1, (8, 2)).astype(np.float32)
save_data(data, x=x, targets=t)


def forward(p, xb):
    vals = {"x": xb, **p}
    for eq, ins, o in equations:
        vals[o] = np.einsum(eq, *[vals[i] for i in ins])
    return vals["z"]


def step_loss(p, s):
    return ((forward(p, batch(x, s).astype(np.float64)) - batch(t, s)) ** 2).mean()


np.savez(expected, **sgd(params, step_loss, steps, lr))
