#!/usr/bin/python3
"""Compares the initializers of a trained ONNX model with a reference.

usage: check_weights.py TRAINED.onnx REFERENCE.(npz|onnx) [--rtol R] [--atol A]
                        [--only NAME ...] [--tolerances TOLS.npz]

Passes when every reference tensor is matched elementwise within
atol + rtol * |reference|; prints the worst relative error either way. An
.npz entry tol/NAME replaces atol for tensor NAME and sets its rtol to 0
(tolerances derived per tensor by the fixture script, which says why).
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def initializers(path):
    if path.endswith(".npz"):
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    model = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trained")
    p.add_argument("reference")
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--atol", type=float, default=1e-7)
    p.add_argument("--only", nargs="+", help="compare these reference tensors alone")
    p.add_argument("--tolerances", help="an .npz whose tol/NAME entries apply (two runs of "
                   "otc compared within a PyTorch reference's derived tolerances)")
    a = p.parse_args()
    got, want = initializers(a.trained), initializers(a.reference)
    tols = {k[4:]: float(want.pop(k)) for k in list(want) if k.startswith("tol/")}
    if a.tolerances:
        tols.update({k[4:]: float(v) for k, v in initializers(a.tolerances).items()
                     if k.startswith("tol/")})
    if a.only:
        missing = [n for n in a.only if n not in want]
        if missing:
            print(f"FAIL: {', '.join(missing)} not in {a.reference}")
            return 1
        want = {n: want[n] for n in a.only}
    ok = True
    for name, ref in sorted(want.items()):
        if name not in got:
            print(f"FAIL {name}: missing from {a.trained}")
            ok = False
            continue
        g = got[name]
        if g.shape != ref.shape:
            print(f"FAIL {name}: shape {g.shape} != {ref.shape}")
            ok = False
            continue
        err = np.abs(g.astype(np.float64) - ref)
        tol = tols[name] if name in tols else a.atol + a.rtol * np.abs(ref)
        # --rtol 0 --atol 0 asks for bitwise equality: 0/0 counts as a match.
        worst = float(np.max(np.where(err == 0, 0.0, err / np.maximum(tol, 1e-300))))
        status = "ok" if worst <= 1.0 else "FAIL"
        ok &= worst <= 1.0
        rel = float(np.max(err / np.maximum(np.abs(ref), 1e-12)))
        print(f"{status} {name}: max |diff| {float(err.max()):.3g}, max rel {rel:.3g}")
    print("weights match" if ok else "weights differ")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
