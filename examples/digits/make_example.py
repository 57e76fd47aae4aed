#!/usr/bin/python3
"""Build the digits example: an ONNX MLP and a small CNN plus train/test data
for otc.

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


class CNN(nn.Module):
    """Two 3x3 convolutions with max pooling over the 8x8 image; the data
    stays flat [N, 64], so the model reshapes it."""
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x.reshape(-1, 1, 8, 8))), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        return self.fc(h.flatten(1))


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


def export_model(cls, name):
    torch.manual_seed(0)
    torch.onnx.export(
        cls(), (torch.zeros(1, 64),), str(HERE / name),
        opset_version=17,
        training=torch.onnx.TrainingMode.TRAINING,
        do_constant_folding=False,
        input_names=["x"],
        output_names=["logits"],
        dynamic_axes={"x": {0: "batch"}},
    )
    print(f"model -> {HERE / name}")


if __name__ == "__main__":
    write_data()
    export_model(MLP, "mlp.onnx")
    export_model(CNN, "cnn.onnx")
