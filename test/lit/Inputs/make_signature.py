#!/usr/bin/python3
"""A model with PyTorch 2's list of the module's tensors: the graph metadata
entry pkg.torch.export.ExportedProgram.graph_signature (GraphProto field
16, newer than libonnx 1.12, so written here as raw protobuf bytes).

y = ((x @ w) @ buf) @ wt * s + c + sum(big), where the list says
  w     PARAMETER           (trained)
  bias  PARAMETER, not in the graph (folded away: a warning, as s shows
        that the exporter's optimizer made values)
  buf   BUFFER, read by a MatMul (a buffer: not trained)
  c     CONSTANT_TENSOR     (not trained)
and leaves out
  wt    read by a MatMul (trained: a weight the exporter stored transposed)
  s     a scale the exporter made an initializer (not trained)
  big   only in MODE large: 2^24 + 1 values, more than otc folds on the
        host, so it stays a parameter as without a list (external data).
MODE empty lists only buf: a list without parameters is ignored, and every
float initializer read at run time trains, as without one. MODE tied lists
everything the graph holds, and a parameter emb it lacks (the tied copy of
another, as BART's shared embeddings beside lm_head): nothing was folded,
so nothing is warned; buf is read through an Identity, as torch.export
clones a buffer, by a MatMul: the clone stays the buffer (no parameter of
its own, where an unlisted MatMul operand would train), with no note; and
wt through an Identity named alias, as torch.export aliases a parameter
(a full slice of it): the alias is the parameter wt, which trains.

usage: make_signature.py signature|empty|large|tied OUT.onnx
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

mode, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(3)
t = lambda name, shape: numpy_helper.from_array(rng.normal(size=shape).astype(np.float32), name)
inits = [t("w", (4, 4)), t("buf", (4, 4)), t("wt", (4, 4)), t("s", ()), t("c", (4,))]
nodes = [helper.make_node("MatMul", ["x", "w"], ["h1"]),
         helper.make_node("MatMul", ["h1", "buf"], ["h2"]),
         helper.make_node("MatMul", ["h2", "wt"], ["h3"]),
         helper.make_node("Mul", ["h3", "s"], ["h4"]),
         helper.make_node("Add", ["h4", "c"], ["y" if mode != "large" else "h5"])]
lines = ["p_w: PARAMETER target='w'", "p_bias: PARAMETER target='bias'", "b_buf: BUFFER target='buf' persistent=True",
         "c_lifted_tensor_0: CONSTANT_TENSOR target='c'", "x: USER_INPUT", "y: USER_OUTPUT"]
if mode == "empty":
    lines = ["b_buf: BUFFER target='buf' persistent=True", "x: USER_INPUT", "y: USER_OUTPUT"]
if mode == "tied":
    nodes[1:3] = [helper.make_node("Identity", ["buf"], ["clone"]),
                  helper.make_node("MatMul", ["h1", "clone"], ["h2"]),
                  helper.make_node("Identity", ["wt"], ["alias"]),
                  helper.make_node("MatMul", ["h2", "alias"], ["h3"])]
    lines = ["p_w: PARAMETER target='w'", "p_wt: PARAMETER target='wt'", "p_emb: PARAMETER target='emb'",
             "b_buf: BUFFER target='buf' persistent=True", "c_s: CONSTANT_TENSOR target='s'",
             "c_c: CONSTANT_TENSOR target='c'", "x: USER_INPUT", "y: USER_OUTPUT"]
if mode == "large":
    inits.append(numpy_helper.from_array(np.zeros(2**24 + 1, np.float32), "big"))
    nodes += [helper.make_node("ReduceSum", ["big"], ["total"], keepdims=0),
              helper.make_node("Add", ["h5", "total"], ["y"])]
graph = helper.make_graph(nodes, "signature",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
if mode == "large":  # the 64 MiB beside the model, as an exporter writes it
    onnx.external_data_helper.convert_model_to_external_data(
        model, location=os.path.basename(out) + ".data", size_threshold=1 << 20)
    onnx.external_data_helper.write_external_data_tensors(model, os.path.dirname(out) or ".")


def varint(v):
    b = bytearray()
    while True:
        b.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(b)


def field(number, payload):  # a length-delimited protobuf field
    return varint(number << 3 | 2) + varint(len(payload)) + payload


entry = onnx.StringStringEntryProto(key="pkg.torch.export.ExportedProgram.graph_signature",
                                    value="\n".join(lines)).SerializeToString()
graph_bytes = model.graph.SerializeToString() + field(16, entry)
model.ClearField("graph")
with open(out, "wb") as f:
    f.write(model.SerializeToString() + field(7, graph_bytes))
