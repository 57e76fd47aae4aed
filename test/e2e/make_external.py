#!/usr/bin/python3
"""Lays out the external-data cases of external_data.test in folder OUT:

  OUT/good/model.onnx    every initializer in OUT/good/weights.bin
  OUT/abs/model.onnx     a location that is an absolute path (to a real file)
  OUT/up/model.onnx      a location that climbs out of the folder
  OUT/link/model.onnx    a location that is a symbolic link leading out
  OUT/short/model.onnx   a location whose file is too short
  OUT/outside.bin        the file the escaping locations reach

usage: make_external.py MODEL.onnx OUT
"""
import os
import shutil
import sys

import onnx

src, out = sys.argv[1], sys.argv[2]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
outside = os.path.join(out, "outside.bin")
with open(outside, "wb") as f:
    f.write(bytes(1 << 16))

good = os.path.join(out, "good")
os.makedirs(good)
model = onnx.load(src)
onnx.save_model(model, os.path.join(good, "model.onnx"), save_as_external_data=True,
                all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)


def relocate(case, location, data=None):
    folder = os.path.join(out, case)
    os.makedirs(folder)
    m = onnx.load(os.path.join(good, "model.onnx"), load_external_data=False)
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = location
    if data is not None:
        with open(os.path.join(folder, location), "wb") as f:
            f.write(data)
    onnx.save(m, os.path.join(folder, "model.onnx"))
    return folder


relocate("abs", os.path.abspath(outside))
relocate("up", "../outside.bin")
os.symlink("../outside.bin", os.path.join(relocate("link", "link.bin"), "link.bin"))
relocate("short", "short.bin", bytes(8))
