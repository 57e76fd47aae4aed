#!/usr/bin/python3
"""Trains a small CNN with one vision layer, as torch.onnx exports it
(Resize for F.interpolate, ConvTranspose, InstanceNormalization for
InstanceNorm2d and GroupNorm, DepthToSpace for PixelShuffle, GridSample
for F.grid_sample), on otc's CPU
target and compares its weights with PyTorch's after the same SGD steps
(activations.py's comparison and tolerance).

  x [12, 1, 5, 6] -> Conv(1, C, 3, pad 1) -> LAYER -> Conv(C', 1, 3) -> y

usage: vision_layers.py LAYER OUT_DIR    (otc on PATH; exits 1 on a mismatch)
"""
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from activations import compare_with_pytorch

# Each layer as F.interpolate's arguments (the exports' nearest, asymmetric
# and floor; linear, pytorch_half_pixel or align_corners; cubic; by scale or
# by size, up and down), or as a module factory.
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
    # Norms (GroupNorm exports as InstanceNormalization between reshapes),
    # and the pixel shuffle of super-resolution models, each on 4 channels.
    "groupnorm": lambda: torch.nn.GroupNorm(2, 4),
    "instancenorm": lambda: torch.nn.InstanceNorm2d(4, affine=True),
    "pixelshuffle": lambda: torch.nn.PixelShuffle(2),
    # torch.flip exports as Slice with negative steps.
    "flip": lambda: Flip(),
    # F.grid_sample at a grid the net computes from its input (some points
    # outside [-1, 1]), so both the image's and the grid's gradients train.
    "gridsample": lambda: Sample("bilinear", "zeros", False),
    "gridsample_border_corners": lambda: Sample("bilinear", "border", True),
    "gridsample_reflection": lambda: Sample("bilinear", "reflection", False),
    "gridsample_reflection_corners": lambda: Sample("bilinear", "reflection", True),
    "gridsample_nearest": lambda: Sample("nearest", "zeros", False),
}
# The channels each layer reads and writes, where not 2 and 2.
CHANNELS = {"convtranspose": (2, 4), "convtranspose_dilated": (2, 3), "groupnorm": (4, 4),
            "instancenorm": (4, 4), "pixelshuffle": (4, 1)}


class Flip(torch.nn.Module):
    def forward(self, v):
        return torch.flip(v, dims=(2, 3))


class Sample(torch.nn.Module):
    """grid_sample of its input at tanh(conv(input)) * 1.3: a learned grid."""

    def __init__(self, mode, padding, corners):
        super().__init__()
        self.where = torch.nn.Conv2d(2, 2, 3, padding=1)
        self.how = dict(mode=mode, padding_mode=padding, align_corners=corners)

    def forward(self, v):
        grid = torch.tanh(self.where(v)).permute(0, 2, 3, 1) * 1.3
        return F.grid_sample(v, grid, **self.how)


class Net(torch.nn.Module):
    def __init__(self, name):
        super().__init__()
        how, (cin, cout) = MODES[name], CHANNELS.get(name, (2, 2))
        self.c1 = torch.nn.Conv2d(1, cin, 3, padding=1)
        if callable(how):
            self.up = how()
        else:
            self.up = lambda v: F.interpolate(v, **how)
        self.c2 = torch.nn.Conv2d(cout, 1, 3)

    def forward(self, x):
        return self.c2(self.up(self.c1(x))).flatten(1)


def main():
    name, out = sys.argv[1], Path(sys.argv[2])
    torch.manual_seed(0)
    net = Net(name)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.normal(0, 1, (12, 1, 5, 6)), dtype=torch.float32)
    with torch.no_grad():
        shape = net(x[:1]).shape
    t = torch.tensor(rng.normal(0, 1, (12, shape[1])), dtype=torch.float32)
    # By size, torch 1.13 computes the sizes from the input's shape, so with
    # a dynamic batch the output's other dims are symbolic too: otc's own
    # shape computation fills them for the targets.
    sys.exit(compare_with_pytorch(net, x, t, 0.1, out))


if __name__ == "__main__":
    main()
