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
    # Second round, 2026-11-29.
    "tf_efficientnet_b0": tm("tf_efficientnet_b0"),
    "mobilenetv3_small_050": tm("mobilenetv3_small_050"),
    "deit3_small_patch16_224": tm("deit3_small_patch16_224", 32, img_size=32),
    "flexivit_small": tm("flexivit_small", 32, img_size=32),
    "convnextv2_atto": tm("convnextv2_atto"),
    "efficientformerv2_s0": tm("efficientformerv2_s0", 64, img_size=64),
    "fastvit_t8": tm("fastvit_t8"),
    "coatnet_nano_rw_224": tm("coatnet_nano_rw_224", 64, img_size=64),
    "maxxvit_rmlp_nano_rw_256": tm("maxxvit_rmlp_nano_rw_256", 64, img_size=64),
    "mobileone_s0": tm("mobileone_s0"),
    "repvit_m1": tm("repvit_m1"),
    "rexnet_100": tm("rexnet_100"),
    "hgnet_tiny": tm("hgnet_tiny"),
    "inception_next_tiny": tm("inception_next_tiny"),
    "nest_tiny": tm("nest_tiny", 32, img_size=32),
    "twins_svt_small": tm("twins_svt_small"),
    "twins_pcpvt_small": tm("twins_pcpvt_small"),
    "pvt_v2_b0": tm("pvt_v2_b0"),
    "sequencer2d_s": tm("sequencer2d_s"),
    "visformer_tiny": tm("visformer_tiny", 64, img_size=64),
    "volo_d1_224": tm("volo_d1_224", 64, img_size=64),
    "davit_tiny": tm("davit_tiny"),
    "gcvit_xxtiny": tm("gcvit_xxtiny", 224),
    "crossvit_tiny_240": tm("crossvit_tiny_240", 240),
    "mvitv2_tiny": tm("mvitv2_tiny", 64, img_size=64),
    "efficientvit_m0": tm("efficientvit_m0", 64, img_size=64),
    "levit_conv_128s": tm("levit_conv_128s", 64, img_size=64),
    "res2net50_14w_8s": tm("res2net50_14w_8s"),
    "skresnet18": tm("skresnet18"),
    "ese_vovnet19b_dw": tm("ese_vovnet19b_dw"),
    "legacy_xception": tm("legacy_xception"),
    "tresnet_m": tm("tresnet_m"),
    "lambda_resnet26t": tm("lambda_resnet26t", 64, img_size=64),
    "botnet26t_256": tm("botnet26t_256", 64, img_size=64),
    "halonet26t": tm("halonet26t", 64, img_size=64),
    "sebotnet33ts_256": tm("sebotnet33ts_256", 64, img_size=64),
    "cs3darknet_focus_s": tm("cs3darknet_focus_s"),
    "nfnet_l0": tm("nfnet_l0"),
    "mixnet_s": tm("mixnet_s"),
    "fbnetc_100": tm("fbnetc_100"),
    "lcnet_050": tm("lcnet_050"),
    "legacy_seresnet18": tm("legacy_seresnet18"),
    "inception_v4": tm("inception_v4", 128),
    "coat_tiny": tm("coat_tiny", 32, img_size=32),
    "vit_relpos_small_patch16_224": tm("vit_relpos_small_patch16_224", 32, img_size=32),
    "vit_small_r26_s32_224": tm("vit_small_r26_s32_224", 64, img_size=64),
    "vit_small_patch14_reg4_dinov2": tm("vit_small_patch14_reg4_dinov2", 28, img_size=28),
    "poolformerv2_s12": tm("poolformerv2_s12"),
    "caformer_s18": tm("caformer_s18"),
    "convformer_s18": tm("convformer_s18"),
    "gernet_s": tm("gernet_s"),
    "eca_resnet33ts": tm("eca_resnet33ts"),
    "gcresnext26ts": tm("gcresnext26ts"),
    "resnet26t": tm("resnet26t"),
}


if __name__ == "__main__":
    pf.main(MODELS, __doc__)
