#!/opt/t2venv/bin/python
"""The probes' models exported by PyTorch 2's default exporter
(torch.onnx.export(..., dynamo=True), the default from PyTorch 2.9), as
users of current PyTorch export them, then compiled and trained by otc
and compared with PyTorch (make_models.py's way: 3 SGD steps, float32
against float64 for the tolerance). The weights are perturbed first, as a
pretrained checkpoint's would be, and exported with optimize=False, as the
README advises for training (--optimize: optimize=True, which folds some
parameters into constants). Needs PyTorch 2.9 (scripts/install-torch2.sh
makes /opt/t2venv, with transformers 4.57); not part of the test command:

  test/models/probe_torch2.py OTC WORKDIR [--optimize] [NAME ...]

NAME: a case of make_models.py, probe_families.py, probe_multimodal.py,
probe_torchvision.py or probe_timm.py (the last two need torchvision
0.24.1, timm 1.0.22 and pillow installed with --no-deps into the venv);
default: all of make_models' and probe_families'.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_models as mm  # noqa: E402
import probe_families as pf  # noqa: E402


def main():
    optimize = "--optimize" in sys.argv
    if optimize:
        sys.argv.remove("--optimize")
    cases = {**mm.CASES, **pf.FAMILIES}
    # Other probes' models by name (timm and torchvision: pip install --no-deps
    # torchvision==0.24.1 timm==1.0.22 pillow into the venv).
    for module in ("probe_multimodal", "probe_torchvision", "probe_timm"):
        if any(name not in cases for name in sys.argv[3:]):
            cases.update(__import__(module).MODELS)

    def make(name):
        model, _ = cases[name](__import__("numpy").random.default_rng(0), mm.MICRO)
        mm.make(name, exporter=mm.export_torch2(optimize), perturb=True,
                extra_flags=" --batch-norm train" if mm.batchnorms(model) else "")

    pf.main(cases, __doc__, make, perturb=True)


if __name__ == "__main__":
    main()
