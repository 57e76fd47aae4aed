#!/usr/bin/env bash
# Makes /opt/t2venv: PyTorch 2.9 (from PyPI, with its CUDA 12 wheels, about
# 7 GB), onnxscript and transformers 4.57, for regenerating test/models'
# <case>_torch2 fixtures with PyTorch 2's default exporter
# (make_models.py --torch2). The tests read the committed fixtures and need
# none of this.
set -euo pipefail
venv=${1:-/opt/t2venv}
if ! "$venv/bin/python" -c "import torch, onnxscript, transformers" 2> /dev/null; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet torch==2.9.1 onnxscript==0.7.2 onnx==1.23.2 transformers==4.57.1 numpy
fi
"$venv/bin/python" -c "import transformers, torch, onnxscript; print('transformers', transformers.__version__, 'torch', torch.__version__, 'onnxscript', onnxscript.__version__)"
