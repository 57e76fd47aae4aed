#!/usr/bin/python3
"""Checks a train --profile JSON against the program it timed (otc compile
--emit program): the same steps in the same order; each GEMM's and element
step's FLOPs and least bytes, and each attention's FLOPs, derived
here from the printed program; the update's bytes from the optimizer's
per-element traffic and the 16-bit copies it writes; and times that are real numbers.

usage: check_profile.py PROFILE.json PROGRAM.txt OPTIMIZER MICRO_BATCHES_TIMED
"""
import json
import math
import re
import sys

SIZE = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i1": 1}
NOT_ARITHMETIC = {"load", "const", "seed", "first", "coord", "reduced", "gather"}
UPDATE_BYTES = {"sgd": 12, "momentum": 20, "adam": 28, "adamw": 28}


def parse(text):
    buffers, steps = {}, []
    for line in text.splitlines():
        m = re.match(r"  b(\d+) (\w+)\[([\d,]*)\] (\w+)", line)
        if m and not steps:
            count = math.prod(int(d) for d in m.group(3).split(",") if d)
            buffers[int(m.group(1))] = (m.group(2), count, m.group(4))
            continue
        m = re.match(r"  s(\d+) (\w+) \(([\w.]+)\)(.*)", line)
        if m:
            steps.append({"kind": m.group(2), "op": m.group(3), "rest": m.group(4), "nodes": []})
        elif line.startswith("    ") and steps:
            steps[-1]["nodes"].append(line.strip())
    return buffers, steps


def gemm(rest, buffers):
    f = dict(re.findall(r"(\w+)=(\S+)", rest))
    m, n, k, batch = (int(f[x]) for x in ("m", "n", "k", "batch"))
    a, b, c = (int(x) for x in re.match(r"\s*b(\d+)\S* \* b(\d+)\S* -> b(\d+)", rest).groups())
    size = lambda id: SIZE[buffers[id][0]]
    reads = m * k * batch * size(a) + k * n * batch * size(b)
    writes = m * n * batch * size(c)
    flops = 2 * m * n * k * batch
    if f["beta"] != "0":
        reads += m * n * batch * size(c)
    if "bias" in f:
        bias = int(f["bias"][1:])
        reads += n * size(bias)
    if f["beta"] != "0" or "bias" in f:
        flops += m * n * batch
    g = re.search(r"bias_grad\((\w)\)->b(\d+)", rest)
    if g:
        length = m if g.group(1) == "a" else n
        writes += length * size(int(g.group(2)))
        flops += k * length
    return flops, reads + writes


def element_step(step, buffers):
    """FLOPs: per iteration point, each float arithmetic node and reduction.
    Bytes: per buffer read (or written), the points along the dims its
    strides walk (a gather: every point), at most the buffer."""
    shape = [int(d.rstrip("r")) for d in re.search(r"\[([\dr,]+)\]", step["rest"]).group(1).split(",")]
    points = math.prod(shape)
    per, reads, writes = 0, {}, {}

    def touch(to, buffer, strides):
        n = points if strides is None else math.prod(d for d, st in zip(shape, strides) if st != 0)
        to[buffer] = min(to.get(buffer, 0) + n, buffers[buffer][1])

    for node in step["nodes"]:
        m = re.match(r"n\d+ = (\w+) .*: f32$", node)
        if m and m.group(1) not in NOT_ARITHMETIC:
            per += 1
        if re.match(r"r\d+ = ", node):
            per += 1
        m = re.match(r"n\d+ = load b(\d+)\[([-\d,]*)\]", node)
        if m:
            touch(reads, int(m.group(1)), [int(x) for x in m.group(2).split(",") if x])
        m = re.match(r"n\d+ = gather b(\d+)", node)
        if m:
            touch(reads, int(m.group(1)), None)
        m = re.match(r"store b(\d+)\[([-\d,]*)\]", node)
        if m:
            touch(writes, int(m.group(1)), [int(x) for x in m.group(2).split(",") if x])
    nbytes = sum(n * SIZE[buffers[b][0]] for to in (reads, writes) for b, n in to.items())
    return per * points, nbytes


def main():
    profile = json.load(open(sys.argv[1]))
    buffers, steps = parse(open(sys.argv[2]).read())
    optimizer, timed = sys.argv[3], int(sys.argv[4])
    got = profile["steps"]
    if len(got) != len(steps):
        sys.exit(f"profile has {len(got)} steps, the program {len(steps)}")
    checked = {"gemm": 0, "element": 0, "attention": 0}
    for i, (p, s) in enumerate(zip(got, steps)):
        if (p["step"], p["op"], p["kind"]) != (i, s["op"], s["kind"]):
            sys.exit(f"step {i}: profile says {p['op']} {p['kind']}, the program {s['op']} {s['kind']}")
        if not (math.isfinite(p["ms"]) and p["ms"] >= 0):
            sys.exit(f"step {i}: time {p['ms']}")
        if s["kind"] == "gemm":
            want = gemm(s["rest"], buffers)
            checked["gemm"] += 1
        elif s["kind"] in ("elementwise", "reduce", "row_reduce"):
            want = element_step(s, buffers)
            checked["element"] += 1
        elif s["op"] == "otc.attention":
            b, h, _, t, src, d, dv = (int(x) for x in re.search(r"\[([\d,]+)\]", s["rest"]).group(1).split(",")[:7])
            want = (2 * b * h * t * src * (d + dv), p["bytes"])
            checked["attention"] += 1
        else:
            continue
        if (p["flops"], p["bytes"]) != want:
            sys.exit(f"step {i} ({s['op']}): profile FLOPs, bytes {p['flops']}, {p['bytes']}; "
                     f"derived {want[0]}, {want[1]}")
    grads = sum(count for _, count, place in buffers.values() if place == "grad")
    # The update also writes each 16-bit weight copy the step reads.
    low = sum(count * SIZE[t] for t, count, place in buffers.values() if place == "low_param")
    want = UPDATE_BYTES[optimizer] * grads + low
    if profile["update_bytes"] != want:
        sys.exit(f"update bytes {profile['update_bytes']}, derived {want}")
    if profile["micro_batches_timed"] != timed:
        sys.exit(f"{profile['micro_batches_timed']} micro-batches timed, expected {timed}")
    if not profile["micro_batch_ms"] > 0 or not profile["update_ms"] > 0:
        sys.exit(f"micro-batch {profile['micro_batch_ms']} ms, update {profile['update_ms']} ms")
    print(f"profile: {len(steps)} steps as the program; FLOPs and bytes of "
          f"{checked['gemm']} GEMMs, FLOPs and bytes of {checked['element']} element steps and "
          f"{checked['attention']} attentions as derived; update bytes as derived")


if __name__ == "__main__":
    main()
