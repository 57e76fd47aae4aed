#!/usr/bin/python3
"""Compares two 16-bit runs' departures from a float32 reference.

usage: check_departure.py CANDIDATE.onnx PEER.onnx REFERENCE.(npz|onnx)

Each run's departure is, over the reference's tensors, the largest
max |w - ref| / max |ref| (a tensor's error on its own scale). Passes when
the candidate's is at most twice the peer's, plus 1e-6: two runs in the
same 16-bit type round in different orders and places, not by different
amounts (the criterion GPT-2's loss curve uses in bench/gpu_train/run.py).
The peer is the same model built the established way, here im2col and
GEMMs against --conv-op's cuDNN.
"""
import sys

import numpy as np

from check_weights import initializers


def departure(run, ref):
    worst = 0.0
    for name, r in ref.items():
        scale = float(np.abs(r).max()) or 1.0
        worst = max(worst, float(np.abs(run[name].astype(np.float64) - r).max()) / scale)
    return worst


def main():
    cand, peer, ref = (initializers(p) for p in sys.argv[1:4])
    ref = {k: v for k, v in ref.items() if not k.startswith("tol/")}  # check_weights' tolerances
    d, p = departure(cand, ref), departure(peer, ref)
    ok = d <= 2 * p + 1e-6
    print(f"{'ok' if ok else 'FAIL'}: departure {d:.3g}, the peer's {p:.3g} (at most twice)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
