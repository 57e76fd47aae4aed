#!/usr/bin/python3
"""Two BatchNormalizations torch.onnx exports with constant folding on, in
training mode: `std` standardises a convolution's weight with F.batch_norm
as timm's NFNet does (ScaledStdConv2d: its weight gain * scale folds into
an anonymous initializer, which trains in place of gain), `noaffine` a
BatchNorm2d(affine=False) over activations (anonymous ones and zeros,
nothing folded from a parameter).

usage: make_folded_bn.py std|noaffine OUT.onnx
"""
import sys

import torch
import torch.nn.functional as F


class StdConv(torch.nn.Conv2d):
    def __init__(self):
        super().__init__(1, 4, 3)
        self.gain = torch.nn.Parameter(torch.ones(4))
        self.scale = 3 ** -1

    def forward(self, x):
        w = F.batch_norm(self.weight.reshape(1, 4, -1), None, None, weight=(self.gain * self.scale),
                         training=True, momentum=0.0, eps=1e-6).reshape_as(self.weight)
        return F.conv2d(x, w, self.bias)


mode, out = sys.argv[1], sys.argv[2]
layer = StdConv() if mode == "std" else torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4, affine=False))
m = torch.nn.Sequential(layer, torch.nn.Flatten(), torch.nn.Linear(16, 2))
torch.onnx.export(m, torch.randn(2, 1, 4, 4), out, opset_version=17, input_names=["x"], output_names=["y"],
                  training=torch.onnx.TrainingMode.TRAINING)
