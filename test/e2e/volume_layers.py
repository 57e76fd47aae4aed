#!/usr/bin/python3
"""Trains a small 3-D CNN (video and volume models: VideoMAE's tubelets,
r3d, 3-D U-Nets) with one 3-D layer (convolution, transposed or pooling), as torch.onnx exports it, on otc's
CPU target and compares its weights with PyTorch's after the same SGD steps
(activations.py's comparison and tolerance). otc composes each 3-D window
of 2-D ones; the strides, pads, dilations, groups and ceil modes below are
uneven across D, H and W so that a mixed-up axis shows.

  x [12, 1, 4, 5, 6] -> Conv3d(1, C, 3, pad 1) -> LAYER -> Conv3d(C', 1, 1) -> y

usage: volume_layers.py LAYER OUT_DIR    (otc on PATH; exits 1 on a mismatch)
"""
import sys
from pathlib import Path

import numpy as np
import torch

from activations import compare_with_pytorch

LAYERS = {
    "conv": lambda: torch.nn.Conv3d(2, 4, (3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1),
                                    dilation=(1, 2, 1), groups=2),
    "conv_grouped": lambda: torch.nn.Conv3d(4, 6, (2, 3, 3), padding=(1, 1, 0), groups=2),
    "conv_tubelet": lambda: torch.nn.Conv3d(2, 3, (2, 2, 2), stride=2),  # VideoMAE's
    # Transposed (3-D U-Nets' up-sampling): stride with padding,
    # output_padding and groups; a dilated one.
    "convtranspose": lambda: torch.nn.ConvTranspose3d(2, 4, (3, 2, 3), stride=(2, 1, 2),
                                                      padding=(1, 0, 1), output_padding=(1, 0, 1),
                                                      groups=2),
    "convtranspose_dilated": lambda: torch.nn.ConvTranspose3d(2, 3, (2, 2, 3), dilation=(2, 1, 1),
                                                              bias=False),
    "maxpool": lambda: torch.nn.MaxPool3d((2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0),
                                          ceil_mode=True),
    "maxpool_dilated": lambda: torch.nn.MaxPool3d(2, stride=1, dilation=(2, 1, 2)),
    "avgpool": lambda: torch.nn.AvgPool3d((3, 2, 2), stride=(2, 1, 2), padding=(1, 1, 0),
                                          count_include_pad=False, ceil_mode=True),
    "avgpool_pad": lambda: torch.nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=True),
}
CHANNELS = {"conv": (2, 4), "conv_grouped": (4, 6), "conv_tubelet": (2, 3),
            "convtranspose": (2, 4), "convtranspose_dilated": (2, 3)}


class Net(torch.nn.Module):
    def __init__(self, name):
        super().__init__()
        cin, cout = CHANNELS.get(name, (2, 2))
        self.c1 = torch.nn.Conv3d(1, cin, 3, padding=1)
        self.layer = LAYERS[name]()
        self.c2 = torch.nn.Conv3d(cout, 1, 1)

    def forward(self, x):
        return self.c2(self.layer(self.c1(x))).flatten(1)


def main():
    name, out = sys.argv[1], Path(sys.argv[2])
    torch.manual_seed(0)
    net = Net(name)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.normal(0, 1, (12, 1, 4, 5, 6)), dtype=torch.float32)
    with torch.no_grad():
        shape = net(x[:1]).shape
    t = torch.tensor(rng.normal(0, 1, (12, shape[1])), dtype=torch.float32)
    sys.exit(compare_with_pytorch(net, x, t, 0.1, out))


if __name__ == "__main__":
    main()
