#!/opt/hfvenv/bin/python
"""torchvision's classification architectures probed the model suite's way
(make_models.py: random init, torch.onnx.export's defaults, 3 SGD steps of
PyTorch in float32 and float64 for the tolerance), then compiled and
trained by otc and compared. Not part of the test command (the exports of
full-width networks take minutes); run it when the importer changes:

  test/models/probe_torchvision.py OTC WORKDIR [MODEL ...]

torchvision is not packaged for Debian's torch 1.13; its 0.15 wheel's
models are plain Python and run on it (the C extension is not needed):

  pip download --no-deps torchvision==0.15.2 -d DIR && unzip DIR/*.whl -d TV
  PYTHONPATH=TV test/models/probe_torchvision.py ...

Dropout and stochastic depth are set to 0 (their masks are random), and
GoogLeNet and Inception v3 are built without their auxiliary heads. Not
here: Swin v2 (torch 1.13's exporter has no aten::zero).

Deep networks whose BatchNorm sees two images of a few pixels are chaotic
over 3 steps: PyTorch's float32 run strays from its float64 run by up to
1% of the update, and one element in a thousand tensors may then exceed
the per-tensor bound (4 times that stray). So a failed comparison also
prints (probe_families.noise) how far otc's weights lie from the float64
run relative to PyTorch float32's. LRASPP and r3d-18 are chaotic even so:
a PyTorch float32 run from weights moved by a few roundings lies far
further from the float64 run than otc's does, so they are judged
at fewer steps (make_models.STEPS = 1 or 2 matched, 2026-11-28).
"""
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn
import torchvision.models as tvm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import probe_families as pf  # noqa: E402

CLASSES = 3


class Classify(nn.Module):
    """A torchvision classifier with the suite's named inputs and loss."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, pixel_values, labels):
        out = type("Out", (), {})()
        out.loss = nn.functional.cross_entropy(self.net(pixel_values), labels)
        return out


def vision(builder, size=64, **kw):
    def f(rng, n):
        net = builder(num_classes=CLASSES, **kw)
        for m in net.modules():  # random masks have no reference
            if isinstance(m, nn.Dropout) or type(m).__name__ == "StochasticDepth":
                m.p = 0.0
        x = rng.standard_normal((n, 3, size, size)).astype(np.float32)
        lab = rng.integers(0, CLASSES, n).astype(np.int64)
        return Classify(net), {"pixel_values": x, "labels": lab}
    return f


class Segment(nn.Module):
    """A torchvision segmentation network: per-pixel cross-entropy."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, pixel_values, labels):
        out = type("Out", (), {})()
        out.loss = nn.functional.cross_entropy(self.net(pixel_values)["out"], labels)
        return out


def segmentation(builder, size=64, **kw):
    def f(rng, n):
        net = builder(num_classes=CLASSES, weights_backbone=None, **kw)
        x = rng.standard_normal((n, 3, size, size)).astype(np.float32)
        lab = rng.integers(0, CLASSES, (n, size, size)).astype(np.int64)
        return Segment(net), {"pixel_values": x, "labels": lab}
    return f


def video(builder, frames=4, size=32):
    def f(rng, n):
        net = builder(num_classes=CLASSES)
        x = rng.standard_normal((n, 3, frames, size, size)).astype(np.float32)
        return Classify(net), {"pixel_values": x, "labels": rng.integers(0, CLASSES, n).astype(np.int64)}
    return f


MODELS = {
    "resnet18": vision(tvm.resnet18),
    "resnext50_32x4d": vision(tvm.resnext50_32x4d),
    "mobilenet_v2": vision(tvm.mobilenet_v2),
    "mobilenet_v3_small": vision(tvm.mobilenet_v3_small),
    "mobilenet_v3_large": vision(tvm.mobilenet_v3_large),
    "efficientnet_b0": vision(tvm.efficientnet_b0),
    "efficientnet_v2_s": vision(tvm.efficientnet_v2_s),
    "shufflenet_v2_x0_5": vision(tvm.shufflenet_v2_x0_5),
    "squeezenet1_1": vision(tvm.squeezenet1_1),
    "mnasnet0_5": vision(tvm.mnasnet0_5),
    "regnet_y_400mf": vision(tvm.regnet_y_400mf),
    "densenet121": vision(tvm.densenet121),
    "googlenet": vision(tvm.googlenet, aux_logits=False, init_weights=True),
    "inception_v3": vision(tvm.inception_v3, size=80, aux_logits=False, init_weights=True),
    "alexnet": vision(tvm.alexnet, size=224),  # its pooling needs 6x6 features
    "convnext_tiny": vision(tvm.convnext_tiny),
    "swin_t": vision(tvm.swin_t),
    "vit": vision(tvm.VisionTransformer, size=32, image_size=32, patch_size=8, num_layers=2,
                  num_heads=2, hidden_dim=32, mlp_dim=64),
    # Added 2026-11-28 (second round).
    "vgg11_bn": vision(tvm.vgg11_bn, size=224),  # its pooling needs 7x7 features
    "regnet_x_400mf": vision(tvm.regnet_x_400mf),
    "maxvit_t": vision(tvm.maxvit_t, size=224),
    "lraspp_mobilenet_v3_large": segmentation(tvm.segmentation.lraspp_mobilenet_v3_large),
    "deeplabv3_mobilenet_v3_large": segmentation(tvm.segmentation.deeplabv3_mobilenet_v3_large,
                                                 aux_loss=False),
    "r3d_18": video(tvm.video.r3d_18),
}


if __name__ == "__main__":
    pf.main(MODELS, __doc__)
