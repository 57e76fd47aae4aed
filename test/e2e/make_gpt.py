#!/usr/bin/python3
"""Exports the zoo's GPT at a given size, with random token data, into OUT
(model.onnx, data/tokens.npy, data/targets.npy): for tests that need the
activations to dominate memory (recompute, auto-fit).

usage: make_gpt.py OUT [--vocab V] [--t T] [--d D] [--heads H] [--layers L]
                       [--micro N] [--samples S]
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "zoo"))
import make_zoo  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    for flag, default in (("vocab", 256), ("t", 64), ("d", 64), ("heads", 4), ("layers", 2),
                          ("micro", 2), ("samples", 16)):
        p.add_argument("--" + flag, type=int, default=default)
    a = p.parse_args()
    case = make_zoo.Case(lambda: make_zoo.GPT(a.vocab, a.t, a.d, a.heads, a.layers),
                         make_zoo.sequences(a.vocab, a.t), "adamw", 1e-3, micro=a.micro)
    torch.manual_seed(0)
    model = case.build()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    data = case.inputs(np.random.default_rng(0), a.samples)
    out = Path(a.out)
    (out / "data").mkdir(parents=True, exist_ok=True)
    for k, v in data.items():
        np.save(out / "data" / f"{k}.npy", v)
    make_zoo.export(case, model, state, data, out / "model.onnx")


if __name__ == "__main__":
    main()
