#!/usr/bin/python3
"""Trains a small CNN with one upsampling layer, as torch.onnx exports it
(Resize for F.interpolate, ConvTranspose for nn.ConvTranspose2d), on otc's
CPU target and compares its weights with PyTorch's after the same SGD
steps (activations.py's comparison and tolerance).

  x [12, 1, 5, 6] -> Conv(1, 2, 3, pad 1) -> MODE -> Conv(C, 1, 3) -> y

usage: upsample.py MODE OUT_DIR    (otc on PATH; exits 1 on a mismatch)
"""
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from activations import compare_with_pytorch

# Each mode as F.interpolate's arguments: the exports' nearest (asymmetric,
# floor), linear (pytorch_half_pixel, or align_corners) and cubic forms, by
# scale or by size, up and down.
MODES = {
    "nearest2": dict(scale_factor=2, mode="nearest"),
    "nearest_size": dict(size=(7, 9), mode="nearest"),
    "bilinear": dict(scale_factor=2, mode="bilinear", align_corners=False),
    "bilinear_corners": dict(size=(8, 11), mode="bilinear", align_corners=True),
    "bilinear_down": dict(size=(3, 4), mode="bilinear", align_corners=False),
    "bicubic": dict(scale_factor=2, mode="bicubic", align_corners=False),
    # Transposed convolutions (their own weights train too): stride 2 with
    # padding, output_padding and groups; and a dilated one.
    "convtranspose": lambda: torch.nn.ConvTranspose2d(2, 4, 3, stride=2, padding=1,
                                                      output_padding=1, groups=2),
    "convtranspose_dilated": lambda: torch.nn.ConvTranspose2d(2, 3, (2, 3), dilation=2, bias=False),
}


class Net(torch.nn.Module):
    def __init__(self, how):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 2, 3, padding=1)
        if callable(how):
            self.up = how()
        else:
            self.up = lambda v: F.interpolate(v, **how)
        channels = self.up.out_channels if callable(how) else 2
        self.c2 = torch.nn.Conv2d(channels, 1, 3)

    def forward(self, x):
        return self.c2(self.up(self.c1(x))).flatten(1)


def main():
    name, out = sys.argv[1], Path(sys.argv[2])
    torch.manual_seed(0)
    net = Net(MODES[name])
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.normal(0, 1, (12, 1, 5, 6)), dtype=torch.float32)
    with torch.no_grad():
        shape = net(x[:1]).shape
    t = torch.tensor(rng.normal(0, 1, (12, shape[1])), dtype=torch.float32)
    # By size, torch 1.13 computes the sizes from the input's shape, so a
    # dynamic batch would leave the output's other dims symbolic too (which
    # otc refuses for the targets): those export with a fixed batch.
    sys.exit(compare_with_pytorch(net, x, t, 0.1, out, dynamic=callable(MODES[name]) or "size" not in MODES[name]))


if __name__ == "__main__":
    main()
