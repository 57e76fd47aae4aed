#!/usr/bin/python3
"""Bitwise ops (opset 18) against numpy, at run time and folded.

a int32 [N, 4] (negative values too), b int64 [4] (broadcast), u and v
uint8 [N, 4]: and_ab, or_ab, xor_ab = a & b, a | b, a ^ b; xor_uv = u ^ v;
c = ~[5, -6] (int32, folded), added to int64 zeros read at run time so
that it leaves as an output; d = ~(3 & 6 | 8) folded; e = ~uint8([5, 200])
folded in uint8's width (250, 55); OUT.bad.onnx: BitwiseNot
of a run-time value.

usage: make_bitwise.py OUT.onnx DATA_DIR
       make_bitwise.py --check OUT_DIR
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import save_data, save_model

A = np.array([[5, -6, 255, -1], [0, 12, -2147483648, 2147483647]], np.int32)
B = np.array([3, -4, 256 + 15, 1 << 40], np.int64)
U = np.array([[0, 200, 15, 255], [16, 31, 128, 7]], np.uint8)
V = np.array([[255, 55, 15, 0], [1, 31, 129, 8]], np.uint8)


def expected():
    a = A.astype(np.int64)
    return {"and_ab": a & B, "or_ab": a | B, "xor_ab": a ^ B,
            "xor_uv": (U ^ V).astype(np.int64),
            "c": np.broadcast_to(~np.array([5, -6], np.int32), (2, 2)).astype(np.int64),
            "d": np.broadcast_to(np.int64(~(3 & 6 | 8)), (2, 2)).astype(np.int64),
            "e": np.broadcast_to(~np.array([5, 200], np.uint8), (2, 2)).astype(np.int64)}


def write(path, data):
    n = helper.make_node
    const = lambda name, v: n("Constant", [], [name], value=numpy_helper.from_array(v))
    nodes = [const("b", B), const("c_in", np.array([5, -6], np.int32)),
             const("three", np.array(3, np.int64)), const("six", np.array(6, np.int64)),
             const("eight", np.array(8, np.int64)),
             n("Cast", ["a"], ["a64"], to=TensorProto.INT64),
             n("BitwiseAnd", ["a64", "b"], ["and_ab"]),
             n("BitwiseOr", ["a64", "b"], ["or_ab"]),
             n("BitwiseXor", ["a64", "b"], ["xor_ab"]),
             n("BitwiseXor", ["u", "v"], ["xor_u8"]),
             n("Cast", ["xor_u8"], ["xor_uv"], to=TensorProto.INT64),
             n("BitwiseNot", ["c_in"], ["c_not"]),
             n("Cast", ["c_not"], ["c64"], to=TensorProto.INT64),
             n("Add", ["zeros", "c64"], ["c"]),
             n("BitwiseAnd", ["three", "six"], ["d_and"]),
             n("BitwiseOr", ["d_and", "eight"], ["d_or"]),
             n("BitwiseNot", ["d_or"], ["d_not"]),
             n("Add", ["zeros", "d_not"], ["d"]),
             const("e_in", np.array([5, 200], np.int64)),
             n("Cast", ["e_in"], ["e_u8"], to=TensorProto.UINT8),
             n("BitwiseNot", ["e_u8"], ["e_not"]),
             n("Cast", ["e_not"], ["e64"], to=TensorProto.INT64),
             n("Add", ["zeros", "e64"], ["e"])]
    vi = helper.make_tensor_value_info
    g = helper.make_graph(
        nodes, "bitwise",
        [vi("a", TensorProto.INT32, ["N", 4]), vi("u", TensorProto.UINT8, ["N", 4]),
         vi("v", TensorProto.UINT8, ["N", 4]), vi("zeros", TensorProto.INT64, ["N", 2])],
        [vi(k, TensorProto.INT64, list(v.shape)) for k, v in expected().items()])
    # libonnx 1.12 predates the Bitwise ops (opset 18).
    save_model(g, path, opset=18, check=False)
    save_data(data, a=A, u=U, v=V, zeros=np.zeros((2, 2), np.int64))
    bad = helper.make_graph([n("BitwiseNot", ["a"], ["y"])], "bad",
                            [vi("a", TensorProto.INT32, ["N", 4])],
                            [vi("y", TensorProto.INT32, ["N", 4])])
    save_model(bad, str(Path(path).with_suffix(".bad.onnx")), opset=18, check=False)


def check(out):
    ok = True
    for k, want in expected().items():
        got = np.load(Path(out) / f"{k}.npy")
        same = got.shape == want.shape and np.array_equal(got, want)
        print(f"{k}: {'ok' if same else 'WRONG'} {got.ravel().tolist()}")
        ok &= same
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    check(sys.argv[2]) if sys.argv[1] == "--check" else write(sys.argv[1], sys.argv[2])
