#!/usr/bin/python3
"""Build the digits example: an ONNX MLP plus train/test data for otc.

Uses scikit-learn's bundled 8x8 digits (1797 samples, no download). Pixels are
scaled to [0, 1]; after a seeded shuffle the last 297 samples are held out.
"""
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits

HERE = Path(__file__).resolve().parent
N_TEST = 297


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def write_data():
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    x, labels = x[order], labels[order]
    splits = {"train": slice(0, len(x) - N_TEST), "test": slice(len(x) - N_TEST, None)}
    for name, rows in splits.items():
        out = HERE / "data" / name
        out.mkdir(parents=True, exist_ok=True)
        np.save(out / "x.npy", x[rows])
        np.save(out / "labels.npy", labels[rows])
        print(f"{name}: {len(x[rows])} samples -> {out}")


def export_model():
    torch.manual_seed(0)
    torch.onnx.export(
        MLP(), (torch.zeros(1, 64),), str(HERE / "mlp.onnx"),
        opset_version=17,
        training=torch.onnx.TrainingMode.TRAINING,
        do_constant_folding=False,
        input_names=["x"],
        output_names=["logits"],
        dynamic_axes={"x": {0: "batch"}},
    )
    print(f"model -> {HERE / 'mlp.onnx'}")


if __name__ == "__main__":
    write_data()
    export_model()
