#!/usr/bin/python3
"""Writes the hostile models of test/lit/import/hostile.test: each breaks one
rule of the input contract (docs/design.md) in a way that once crashed otc or
was silently accepted. Run with Debian's python3."""
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).parent / "hostile"
OUT.mkdir(exist_ok=True)
X = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
W = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "w")


def save(name, nodes, inits=(), inputs=(X,)):
    graph = helper.make_graph(nodes, name, list(inputs),
                              [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
                              list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    (OUT / f"{name}.onnx").write_bytes(model.SerializeToString())


def gemm_loss():
    return [helper.make_node("Gemm", ["x", "w"], ["h"], name="fc", transB=1),
            helper.make_node("ReduceSum", ["h"], ["loss"], name="sum", keepdims=0)]


def const(name, array):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(array)))


# An int64 shape tensor whose raw_data is not a whole number of elements:
# libonnx's shape inference copied raw_data.size() bytes into size()/8 slots.
shape = numpy_helper.from_array(np.array([-1, 12], np.int64), "shape")
shape.raw_data = shape.raw_data[:12]
save("int64_raw_partial", [helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
                           helper.make_node("ReduceSum", ["r"], ["loss"], name="sum", keepdims=0)],
     [shape])

# A parameter whose raw_data is shorter than its shape: trained on garbage.
short = numpy_helper.from_array(np.zeros((3, 4), np.float32), "w")
short.raw_data = short.raw_data[:40]
save("param_raw_short", gemm_loss(), [short])

# Typed values that do not match the shape, inside a Constant node.
bad = TensorProto(name="c", data_type=TensorProto.FLOAT, dims=[3, 4], float_data=[1.0] * 5)
save("constant_values_short",
     [helper.make_node("Constant", [], ["c"], name="konst", value=bad),
      helper.make_node("Add", ["x", "c"], ["s"], name="add"),
      helper.make_node("ReduceSum", ["s"], ["loss"], name="sum", keepdims=0)])

# Unsqueeze with a repeated axis that shape inference cannot see (the axes
# are computed), which once read out of bounds in the importer.
save("unsqueeze_repeated_axes",
     [const("one", [1]), helper.make_node("Concat", ["one", "one"], ["axes"], name="cat", axis=0),
      helper.make_node("Unsqueeze", ["x", "axes"], ["u"], name="unsq"),
      helper.make_node("ReduceSum", ["u"], ["loss"], name="sum", keepdims=0)])

# A negative input dimension (tensor<2x-1xf32> once compiled).
save("negative_dim", [helper.make_node("ReduceSum", ["x"], ["loss"], name="sum", keepdims=0)],
     inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", -1])])

# An initializer whose element count overflows int64.
huge = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 40, 1 << 40])
save("count_overflow", gemm_loss(), [huge])
# Its last dim alone overflows the count (found by fuzz-import).
huge_last = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[16, (1 << 63) - 1])
save("count_overflow_last", gemm_loss(), [huge_last])

# A reshape target whose element count overflows; computed, so that only
# otc's importer sees its values.
save("reshape_overflow",
     [const("big", [1 << 40]), const("rest", [-1]),
      helper.make_node("Concat", ["big", "big", "rest"], ["target"], name="cat", axis=0),
      helper.make_node("Reshape", ["x", "target"], ["r"], name="reshape"),
      helper.make_node("ReduceSum", ["r"], ["loss"], name="sum", keepdims=0)])

# A host fold whose result would have 2^25 elements.
save("fold_too_large",
     [const("col", np.ones((1 << 12, 1), np.int64)), const("row", np.ones((1, 1 << 13), np.int64)),
      helper.make_node("Mul", ["col", "row"], ["big"], name="outer"),
      helper.make_node("Reshape", ["x", "big"], ["r"], name="reshape"),
      helper.make_node("ReduceSum", ["r"], ["loss"], name="sum", keepdims=0)])

# A node name of 300 lines in a node that fails shape inference: such
# errors once printed thousands of lines.
save("long_error",
     [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm\n" * 300),
      helper.make_node("ReduceSum", ["y"], ["loss"], name="sum", keepdims=0)],
     [numpy_helper.from_array(np.zeros((5, 3), np.float32), "w")])


# A finite loss whose gradient overflows float32: d(x/w)/dw = -x/w^2 with
# w = 1e-30. Training must stop at the gradient, not save infinities.
save("grad_overflow",
     [helper.make_node("Div", ["x", "w"], ["q"], name="div"),
      helper.make_node("ReduceMean", ["q"], ["loss"], name="mean", keepdims=0)],
     [numpy_helper.from_array(np.full(6, 1e-30, np.float32), "w")],
     inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6])])

# Activations that fit one by one but not together: six [2^24, 4096] float
# buffers at --micro-batch 16777216 pass 2^40 bytes of arena.
save("arena_too_large",
     [helper.make_node("Mul", ["x" if i == 0 else f"h{i - 1}", f"w{i}"], [f"h{i}"], name=f"mul{i}")
      for i in range(6)] +
     [helper.make_node("ReduceMean", ["h5"], ["loss"], name="mean", keepdims=0)],
     [numpy_helper.from_array(np.ones(1, np.float32), f"w{i}") for i in range(6)],
     inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4096])])

# Names as code: quotes, backslashes and a would-be statement in a parameter
# name must reach the executable and the saved model intact, and a control
# character is refused.
X6 = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6])
QUOTE_NAME = 'w"); system("id"); //\\'
save("name_quote",
     [helper.make_node("Gemm", ["x", QUOTE_NAME], ["h"], name="fc", transB=1),
      helper.make_node("ReduceSum", ["h"], ["loss"], name="sum", keepdims=0)],
     [numpy_helper.from_array(np.ones((3, 6), np.float32), QUOTE_NAME)], inputs=[X6])
save("name_control", gemm_loss(), [numpy_helper.from_array(np.ones((3, 4), np.float32), "w")],
     inputs=[helper.make_tensor_value_info("x\n", TensorProto.FLOAT, ["batch", 4])])

# A zero-sized constant with a huge leading dim: folding Gather over it once
# looped 2^36 times.
zero = TensorProto(name="z", data_type=TensorProto.INT64, dims=[1 << 36, 1, 0])
save("gather_zero_sized",
     [const("idx", np.zeros(1000, np.int64)),
      helper.make_node("Gather", ["z", "idx"], ["g"], name="gather", axis=1),
      helper.make_node("ReduceSum", ["x"], ["loss"], name="sum", keepdims=0)], [zero])

# Both spellings of the default domain: libonnx checks against "" (opset 11,
# where ReduceSum takes axes as an attribute), so otc must import opset 11.
graph = helper.make_graph(
    [helper.make_node("ReduceSum", ["x"], ["r"], name="rows", axes=[1], keepdims=0),
     helper.make_node("ReduceMean", ["r"], ["loss"], name="mean", keepdims=0)],
    "two_opsets", [X], [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11),
                                                helper.make_opsetid("ai.onnx", 13)])
(OUT / "two_opsets.onnx").write_bytes(model.SerializeToString())

# Non-finite constants are emitted as NAN/INFINITY, not as broken literals.
save("nan_constant",
     [helper.make_node("Constant", [], ["c"], name="c", value_float=float("nan")),
      helper.make_node("Gemm", ["x", "w"], ["h"], name="fc", transB=1),
      helper.make_node("Add", ["h", "c"], ["s"], name="add"),
      helper.make_node("ReduceSum", ["s"], ["loss"], name="sum", keepdims=0)], [W])

# An initializer already named "labels": --loss cross-entropy would wire it
# in place of the labels it adds.
save("labels_taken",
     [helper.make_node("Gemm", ["x", "w", "labels"], ["logits"], name="fc", transB=1),
      helper.make_node("ReduceSum", ["logits"], ["loss"], name="sum", keepdims=0)],
     [W, numpy_helper.from_array(np.zeros(3, np.float32), "labels")])

# External data larger than one ONNX file can carry (the test makes a sparse
# file for it).
big = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 29],
                  data_location=TensorProto.EXTERNAL)
e = big.external_data.add()
e.key, e.value = "location", "big.bin"
save("external_too_large",
     [helper.make_node("ReduceSum", ["w"], ["loss"], name="sum", keepdims=0)], [big])

# Two inputs whose data files would be the same ("a b" and "a_b" -> a_b.npy).
save("inputs_share_file",
     [helper.make_node("Add", ["a b", "a_b"], ["s"], name="add"),
      helper.make_node("Mul", ["s", "w"], ["p"], name="scale"),
      helper.make_node("ReduceSum", ["p"], ["loss"], name="sum", keepdims=0)],
     [numpy_helper.from_array(np.ones(4, np.float32), "w")],
     inputs=[helper.make_tensor_value_info("a b", TensorProto.FLOAT, ["batch", 4]),
             helper.make_tensor_value_info("a_b", TensorProto.FLOAT, ["batch", 4])])

# A reduction of a scalar (ReduceSum of a ReduceSum): once emitted
# `long long j = ;`.
save("reduce_scalar",
     [helper.make_node("Mul", ["x", "w"], ["h"], name="scale"),
      helper.make_node("ReduceSum", ["h"], ["s"], name="inner", keepdims=0),
      helper.make_node("ReduceSum", ["s"], ["loss"], name="outer", keepdims=0)],
     [numpy_helper.from_array(np.ones(4, np.float32), "w")])

# NegativeLogLikelihoodLoss over 2^31 classes (found by fuzz-import): the
# class ids' constant was allocated (16 GiB) before any size check.
save("nll_huge_classes",
     [helper.make_node("NegativeLogLikelihoodLoss", ["logp", "labels"], ["loss"], name="nll")],
     inputs=(helper.make_tensor_value_info("logp", TensorProto.FLOAT, [2, 1 << 31]),
             helper.make_tensor_value_info("labels", TensorProto.INT64, [2])))

# tf_crop_and_resize with an roi end of 3.4e31 (found by fuzz-import): the
# source coordinates' floor overflowed int64.
X44 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
save("resize_huge_roi",
     [helper.make_node("Resize", ["x", "roi", "", "sizes"], ["r"], name="resize",
                       coordinate_transformation_mode="tf_crop_and_resize", mode="linear"),
      helper.make_node("ReduceSum", ["r"], ["loss"], name="sum", keepdims=0)],
     [numpy_helper.from_array(np.array([0, 0, 0.4, 0.6, 1, 1, 1.2, 3.4e31], np.float32), "roi"),
      numpy_helper.from_array(np.array([1, 1, 3, 3], np.int64), "sizes")], inputs=(X44,))

# A convolution with a stride of 0 (found by fuzz-import): libonnx's shape
# inference divides by it (SIGFPE) before any importer runs.
X4 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6])
save("conv_zero_stride",
     [helper.make_node("Conv", ["x", "k"], ["c"], name="conv", strides=[2, 0]),
      helper.make_node("ReduceSum", ["c"], ["loss"], name="sum", keepdims=0)],
     [numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "k")], inputs=(X4,))

# Min of a float tensor and an int64 one that do not broadcast, picked as
# the loss's output (found by fuzz-import): resolving the loss's dims
# imports the model before ONNX's checks, and the comparison's builder
# aborted on the types.
graph = helper.make_graph([helper.make_node("Min", ["x", "k"], ["m"], name="min")], "min_mixed_types",
                          [X, helper.make_tensor_value_info("k", TensorProto.INT64, ["batch", 17])],
                          [helper.make_tensor_value_info("m", TensorProto.FLOAT, ["a", "b"])])
(OUT / "min_mixed_types.onnx").write_bytes(
    helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
