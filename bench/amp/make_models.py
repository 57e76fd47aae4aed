#!/usr/bin/python3
"""Exports the mixed-precision benchmark's models (bench/amp/README.md):
the zoo's GPT and ResNet architectures at sizes where the GPU has work to
do, with deterministic initial weights and random data, into OUT/<name>/
(model.onnx, data/*.npy, compile_flags, train_flags), as test/zoo does.

usage: make_models.py OUT
"""
import sys
from pathlib import Path

import numpy as np
import torch

ZOO = Path(__file__).resolve().parents[2] / "test" / "zoo"
sys.path.insert(0, str(ZOO))
import make_zoo  # noqa: E402

def gpt():
    """GPT-2's initialisation (normal, 0.02), so that the tied head starts
    near uniform logits as a real language model does; PyTorch's default
    embedding init (unit normal) makes d = 256 logits start at loss ~180."""
    model = make_zoo.GPT(vocab=1024, t=256, d=256, heads=4, layers=2)
    for p in model.parameters():
        if p.dim() >= 2:
            torch.nn.init.normal_(p, std=0.02)
    return model


# name: (constructor, inputs, optimizer, lr, micro-batch, extra optimizer options)
MODELS = {
    # 1.7 M parameters; at 16 x 256 tokens the activations dominate.
    "gpt_bench": make_zoo.Case(gpt,
                               make_zoo.sequences(1024, 256), "adamw", 1e-3, micro=16,
                               weight_decay=0.1),
    # The zoo's ResNet on 32 x 32 images.
    "resnet_bench": make_zoo.Case(make_zoo.ResNet, make_zoo.images(3, 32, 5), "sgd", 0.05,
                                  micro=128),
}
SAMPLES_PER_MICRO = 4  # distinct micro-batches in the data set


def main():
    out = Path(sys.argv[1])
    for name, case in MODELS.items():
        torch.manual_seed(0)
        model = case.build()
        state = {k: v.clone() for k, v in model.state_dict().items()}
        data = case.inputs(np.random.default_rng(0), case.micro * SAMPLES_PER_MICRO)
        d = out / name
        (d / "data").mkdir(parents=True, exist_ok=True)
        for k, v in data.items():
            np.save(d / "data" / f"{k}.npy", v)
        make_zoo.export(case, model, state, data, d / "model.onnx")
        make_zoo.flags(case, d)
        print(f"{name}: {sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main()
