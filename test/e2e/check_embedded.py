"""Prints what a training executable embeds of its model: each initializer
and Constant node value of at least 64 KiB (OTC_EMBED_CONSTANT_BYTES) in
the model it was compiled from, and how many bytes of it the executable
carries (0 where it is read from the model at start, or by a saving run).

usage: check_embedded.py EXECUTABLE MODEL.onnx
"""
import subprocess
import sys

import onnx

exe, source = sys.argv[1], sys.argv[2]
symbols = {}
for line in subprocess.check_output(["nm", exe], text=True).splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[2] in ("otc_model_begin", "otc_model_end"):
        symbols[parts[2]] = int(parts[0], 16)
with open(exe, "rb") as f:
    blob = f.read()
sections = subprocess.check_output(["objdump", "-h", exe], text=True).splitlines()
begin, end = symbols["otc_model_begin"], symbols["otc_model_end"]
for line in sections:  # the section that holds the model: file offset of its address
    f = line.split()
    if len(f) >= 6 and f[0].isdigit():
        vma, size, off = int(f[3], 16), int(f[2], 16), int(f[5], 16)
        if vma <= begin and end <= vma + size:
            embedded = onnx.load_from_string(blob[begin - vma + off:end - vma + off])
            break


def tensors(model):
    out = {t.name: t for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    out[n.output[0]] = a.t
    return out


carried = tensors(embedded)
for name, t in sorted(tensors(onnx.load(source)).items()):
    if len(t.raw_data) >= 65536:
        print(f"{name}: {len(t.raw_data)} bytes, {len(carried[name].raw_data)} embedded")
