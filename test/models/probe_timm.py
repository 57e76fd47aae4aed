#!/opt/hfvenv/bin/python
"""timm's image models probed the model suite's way (make_models.py: random
init, torch.onnx.export's defaults, 3 SGD steps of PyTorch in float32 and
float64 for the tolerance), then compiled and trained by otc and compared.
Not part of the test command; run it when the importer changes:

  test/models/probe_timm.py OTC WORKDIR [MODEL ...]

timm (0.9.16) installs into the Hugging Face venv without its dependencies
(`pip install --no-deps timm==0.9.16`); it needs torchvision, whose 0.15
wheel's Python runs on torch 1.13 (probe_torchvision.py says how):

  PYTHONPATH=TV test/models/probe_timm.py ...

Each model is the smallest of its family, at full width, on small images;
dropout and drop-path are 0. A failed comparison also prints
probe_families.noise (BatchNorm over two small images can be chaotic).
"""
import sys
from pathlib import Path

import timm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import probe_families as pf  # noqa: E402
from probe_torchvision import vision  # noqa: E402


def tm(name, size=64, **kw):
    def build(num_classes):
        try:
            return timm.create_model(name, pretrained=False, num_classes=num_classes,
                                     drop_rate=0.0, drop_path_rate=0.0, **kw)
        except TypeError:  # a family without drop-path
            return timm.create_model(name, pretrained=False, num_classes=num_classes,
                                     drop_rate=0.0, **kw)
    return vision(build, size=size)


MODELS = {
    "mixer_s16_224": tm("mixer_s16_224", 32, img_size=32),
    "resmlp_12_224": tm("resmlp_12_224", 32, img_size=32),
    "gmlp_ti16_224": tm("gmlp_ti16_224", 32, img_size=32),
    "cait_xxs24_224": tm("cait_xxs24_224", 32, img_size=32),
    "xcit_nano_12_p16_224": tm("xcit_nano_12_p16_224", 32, img_size=32),
    "convit_tiny": tm("convit_tiny", 32, img_size=32),
    "eva02_tiny_patch14_224": tm("eva02_tiny_patch14_224", 28, img_size=28),
    "ghostnet_100": tm("ghostnet_100"),
    "resnest14d": tm("resnest14d"),
    "repvgg_a0": tm("repvgg_a0"),
    "dla34": tm("dla34"),
    "hrnet_w18_small": tm("hrnet_w18_small"),
    "nf_resnet26": tm("nf_resnet26"),
    "edgenext_xx_small": tm("edgenext_xx_small"),
    "mobilevitv2_050": tm("mobilevitv2_050"),
    "tinynet_e": tm("tinynet_e"),
    "regnetz_005": tm("regnetz_005"),
    "selecsls42b": tm("selecsls42b"),
    "dpn68": tm("dpn68"),
    "tnt_s_patch16_224": tm("tnt_s_patch16_224", 32, img_size=32),
    "pit_ti_224": tm("pit_ti_224", 224),
    "coat_lite_tiny": tm("coat_lite_tiny", 32, img_size=32),
    "cspdarknet53": tm("cspdarknet53"),
    "efficientvit_b0": tm("efficientvit_b0"),
}


if __name__ == "__main__":
    pf.main(MODELS, __doc__)
