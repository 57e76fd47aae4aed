#!/usr/bin/python3
"""Loops with a trip count and condition known at compile time, as otc
unrolls them. h = x W^T (W [4, 3]), then:
  A. repeat_interleave(h, 2, dim=1) as PyTorch exports it (GPT-J's rotary
     embedding): a Loop over Shape(h)[1], its body reading the columns of
     an outer SplitToSequence at the iteration number and appending each
     twice (Expand, Reshape) to a carried SequenceEmpty; ConcatFromSequence.
  B. 3 iterations (an initializer) of acc = tanh(acc) v + i, acc starting
     at h, v [4] a parameter read only inside the body; its condition
     output is i < 10, computed; scan output 2 acc, stacked [3, N, 4] and
     read back as [N, 12]; the stacked iterations also come from a
     SequenceConstruct then ConcatFromSequence with new_axis = 1.
  C. no trip count: c = sin(c) + h while the computed i < 1 (2 iterations).
  D. nested: 2 outer iterations of e = inner(e) + j, inner being 2
     iterations of f = 0.9 f + k v (0.9 a Constant node in the body; each
     iteration's copy of it gets its own name).
  E. 2 iterations whose scan output is u itself, a parameter [4] that no
     node reads (the body passes it through): summed, times c.
  F. If on Shape(h)[1] > 2 (true at compile time): 3 h (3 a Constant node
     in the branch), else -h; G. If on Not(true): else sin(h).
  H. SequenceConstruct(h, tanh h, sin h), SequenceErase at 1, then
     SequenceInsert of 2h at position 0: [2h, h, sin h] joined.
y = [A, B's acc, B's scan, C, D, the stack of B's acc and C, E, F, G, H].
Its data, and W, v and u after SGD from float64 finite differences of the
numpy forward.

MODE runtime_trips makes the trip count a run-time value, MODE huge one of
10^12 iterations, MODE unsupported puts an unsupported op in the body and
MODE runtime_if gives an If a run-time condition: models otc refuses (no
data).

usage: make_loop.py MODE OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

mode, out, data = sys.argv[1], sys.argv[2], Path(sys.argv[3])
steps, lr, expected = int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
rng = np.random.default_rng(14)
n = helper.make_node
F, I, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
i64 = lambda name, vals: numpy_helper.from_array(np.array(vals, np.int64), name)
vi = helper.make_tensor_value_info


def scalar(name, dtype):
    return vi(name, dtype, [])


def body_graph(nodes, name, ins, outs):
    return helper.make_graph(nodes, name, ins, outs)


if mode == "runtime_if":
    branch = lambda op: helper.make_graph([n(op, ["x"], ["b_" + op])], op, [], [vi("b_" + op, F, ["N", 4])])
    graph = helper.make_graph(
        [n("ReduceSum", ["x"], ["total"], keepdims=0), n("Greater", ["total", "zero_f"], ["positive"]),
         n("If", ["positive"], ["y"], then_branch=branch("Neg"), else_branch=branch("Sin"),
           name="the_if")], mode, [vi("x", F, ["N", 4])], [vi("y", F, ["N", 4])],
        [numpy_helper.from_array(np.array(0, np.float32), "zero_f")])
    save_model(graph, out, opset=13, ir_version=7)
    sys.exit(0)
if mode in ("runtime_trips", "huge", "unsupported"):
    body = body_graph(
        [n("Identity", ["cond_in"], ["cond_out"]),
         n("Det" if mode == "unsupported" else "Neg", ["a_in"], ["a_out"], name="inner_node")],
        "body", [scalar("i", I), scalar("cond_in", B), vi("a_in", F, ["N", 4])],
        [scalar("cond_out", B), vi("a_out", F, ["N", 4])])
    trips = "m" if mode == "runtime_trips" else "big"
    # (a run-time trip count: x's largest value as an integer)
    counted = [n("ReduceMax", ["x"], ["mx"], keepdims=0), n("Cast", ["mx"], ["m"], to=I)]
    graph = helper.make_graph(
        (counted if mode == "runtime_trips" else []) +
        [n("Loop", [trips, "yes", "x"], ["y"], body=body, name="the_loop")], mode,
        [vi("x", F, ["N", 4])],
        [vi("y", F, ["N", 4])],
        [i64("big", 10**12), numpy_helper.from_array(np.array(True), "yes")])
    save_model(graph, out, opset=13, ir_version=7)
    sys.exit(0)

w0 = rng.normal(0, 0.5, (4, 3)).astype(np.float32)
v0 = rng.normal(0, 0.5, (4,)).astype(np.float32)
u0 = rng.normal(0, 0.5, (4,)).astype(np.float32)

# A: repeat_interleave(h, 2, dim=1).
body_a = body_graph(
    [n("SequenceAt", ["cols", "ia"], ["col"]),
     n("Expand", ["col", "shape_n2"], ["col2"]),
     n("Reshape", ["col2", "shape_n_minus1"], ["pair"]),
     n("SequenceInsert", ["seq_in", "pair"], ["seq_out"]),
     n("Identity", ["cond_a"], ["cond_a_out"])],
    "body_a", [scalar("ia", I), scalar("cond_a", B), helper.make_tensor_sequence_value_info("seq_in", F, None)],
    [scalar("cond_a_out", B), helper.make_tensor_sequence_value_info("seq_out", F, None)])
# B: acc = tanh(acc) v + i; scan 2 acc; condition i < 10.
body_b = body_graph(
    [n("Tanh", ["acc_in"], ["t"]), n("Mul", ["t", "v"], ["tv"]),
     n("Cast", ["ib"], ["ibf"], to=F), n("Add", ["tv", "ibf"], ["acc_out"]),
     n("Add", ["acc_out", "acc_out"], ["scan_out"]),
     n("Less", ["ib", "ten"], ["cond_b_out"])],
    "body_b", [scalar("ib", I), scalar("cond_b", B), vi("acc_in", F, ["N", 4])],
    [scalar("cond_b_out", B), vi("acc_out", F, ["N", 4]), vi("scan_out", F, ["N", 4])])
# C: c = sin(c) + h while i < 1.
body_c = body_graph(
    [n("Sin", ["c_in"], ["s"]), n("Add", ["s", "h"], ["c_out"]), n("Less", ["ic", "one"], ["cond_c_out"])],
    "body_c", [scalar("ic", I), scalar("cond_c", B), vi("c_in", F, ["N", 4])],
    [scalar("cond_c_out", B), vi("c_out", F, ["N", 4])])
# D: e = inner(e) + j; inner: f = 0.9 f + k v.
inner = body_graph(
    [n("Constant", [], ["point9"], value=numpy_helper.from_array(np.array(0.9, np.float32))),
     n("Mul", ["f_in", "point9"], ["f9"]), n("Cast", ["k"], ["kf"], to=F), n("Mul", ["v", "kf"], ["kv"]),
     n("Add", ["f9", "kv"], ["f_out"]), n("Identity", ["cond_k"], ["cond_k_out"])],
    "inner", [scalar("k", I), scalar("cond_k", B), vi("f_in", F, ["N", 4])],
    [scalar("cond_k_out", B), vi("f_out", F, ["N", 4])])
body_d = body_graph(
    [n("Loop", ["two", "", "e_in"], ["e_inner"], body=inner),
     n("Cast", ["j"], ["jf"], to=F), n("Add", ["e_inner", "jf"], ["e_out"]),
     n("Identity", ["cond_j"], ["cond_j_out"])],
    "body_d", [scalar("j", I), scalar("cond_j", B), vi("e_in", F, ["N", 4])],
    [scalar("cond_j_out", B), vi("e_out", F, ["N", 4])])

# E: the scan output is the outer u.
body_e = body_graph(
    [n("Identity", ["cond_e"], ["cond_e_out"])],
    "body_e", [scalar("ie", I), scalar("cond_e", B)],
    [scalar("cond_e_out", B), vi("u", F, [4])])

# F and G: If.
then_f = body_graph(
    [n("Constant", [], ["three_f"], value=numpy_helper.from_array(np.array(3, np.float32))),
     n("Mul", ["h", "three_f"], ["f_then"])], "then_f", [], [vi("f_then", F, ["N", 4])])
else_f = body_graph([n("Neg", ["h"], ["f_else"])], "else_f", [], [vi("f_else", F, ["N", 4])])
then_g = body_graph([n("Neg", ["h"], ["g_then"])], "then_g", [], [vi("g_then", F, ["N", 4])])
else_g = body_graph([n("Sin", ["h"], ["g_else"])], "else_g", [], [vi("g_else", F, ["N", 4])])

nodes = [n("Gemm", ["x", "w"], ["h"], transB=1),
         # A
         n("Shape", ["h"], ["hs"]), n("Gather", ["hs", "one"], ["width"]),
         n("SplitToSequence", ["h", "one_size"], ["cols"], axis=1),
         n("SequenceEmpty", [], ["empty"], dtype=F),
         n("Loop", ["width", "yes", "empty"], ["seq"], body=body_a),
         n("ConcatFromSequence", ["seq"], ["rep"], axis=1),
         # B
         n("Loop", ["three", "yes", "h"], ["acc", "scans"], body=body_b),
         n("Transpose", ["scans"], ["scans_t"], perm=[1, 0, 2]),
         n("Reshape", ["scans_t", "shape_n12"], ["scans_flat"]),
         # C
         n("Loop", ["", "yes", "h"], ["c"], body=body_c),
         # D
         n("Loop", ["two", "", "h"], ["e"], body=body_d),
         # stacking a constructed sequence on a new last axis
         n("SequenceConstruct", ["acc", "c"], ["pair_seq"]),
         n("ConcatFromSequence", ["pair_seq"], ["stacked"], axis=-1, new_axis=1),
         n("Reshape", ["stacked", "shape_n8"], ["stacked_flat"]),
         # E
         n("Loop", ["two", "yes"], ["vs"], body=body_e),
         n("ReduceSum", ["vs", "axis0"], ["vsum"], keepdims=0),
         n("Mul", ["vsum", "c"], ["ev"]),
         # F, G
         n("Greater", ["width", "two"], ["wide"]),
         n("If", ["wide"], ["f"], then_branch=then_f, else_branch=else_f),
         n("Not", ["yes"], ["no"]),
         n("If", ["no"], ["g"], then_branch=then_g, else_branch=else_g),
         # H
         n("Tanh", ["h"], ["th"]), n("Sin", ["h"], ["sh"]), n("Add", ["h", "h"], ["h2"]),
         n("SequenceConstruct", ["h", "th", "sh"], ["three_seq"]),
         n("SequenceErase", ["three_seq", "one"], ["two_seq"]),
         n("SequenceInsert", ["two_seq", "h2", "zero_i"], ["edited"]),
         n("ConcatFromSequence", ["edited"], ["joined"], axis=1),
         n("Concat", ["rep", "acc", "scans_flat", "c", "e", "stacked_flat", "ev", "f", "g", "joined"],
           ["y"], axis=1)]
graph = helper.make_graph(
    nodes, "loops", [vi("x", F, ["N", 3])], [vi("y", F, ["N", 64])],
    [numpy_helper.from_array(w0, "w"), numpy_helper.from_array(v0, "v"),
     numpy_helper.from_array(u0, "u"),
     i64("one", 1), i64("one_size", 1), i64("axis0", [0]), i64("zero_i", 0), i64("two", 2), i64("three", 3), i64("ten", 10),
     i64("shape_n2", [1, 2]), i64("shape_n_minus1", [0, -1]), i64("shape_n12", [0, 12]),
     i64("shape_n8", [0, 8]), numpy_helper.from_array(np.array(True), "yes")])
save_model(graph, out, opset=13, ir_version=7)

x = rng.normal(size=(8, 3)).astype(np.float32)
t = rng.normal(size=(8, 64)).astype(np.float32)
save_data(data, x=x, targets=t)


def forward(w, v, u, xb):
    h = xb @ w.T
    rep = np.repeat(h, 2, axis=1)
    acc, scans = h, []
    for i in range(3):
        acc = np.tanh(acc) * v + i
        scans.append(2 * acc)
    scans_flat = np.stack(scans).transpose(1, 0, 2).reshape(len(xb), 12)
    c = h
    for _ in range(2):
        c = np.sin(c) + h
    e = h
    for j in range(2):
        f = e
        for k in range(2):
            f = np.float32(0.9) * f + k * v
        e = f + j
    stacked = np.stack([acc, c], axis=-1).reshape(len(xb), 8)
    ev = 2 * u * c
    joined = np.concatenate([2 * h, h, np.sin(h)], axis=1)
    return np.concatenate([rep, acc, scans_flat, c, e, stacked, ev, 3 * h, np.sin(h), joined],
                          axis=1)


def loss(p, s):
    y = forward(p["w"], p["v"], p["u"], batch(x, s).astype(np.float64))
    return ((y - batch(t, s).astype(np.float64)) ** 2).mean()


p = sgd({"w": w0, "v": v0, "u": u0}, loss, steps, lr)
np.savez(expected, w=p["w"], v=p["v"], u=p["u"])
