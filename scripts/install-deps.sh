#!/usr/bin/env bash
# Installs what otc needs to build and test on Debian 12, skipping what is present.
set -euo pipefail

pkgs=(
  cmake ninja-build g++ git
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  libopenblas-dev libgtest-dev
  libopenmpi-dev openmpi-bin
  clang-14 libclang-rt-14-dev libomp-14-dev
  python3-numpy python3-onnx python3-torch python3-sklearn python3-venv
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "otc: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# onnxruntime, the consumer of trained models in tests, from PyPI into a
# virtual environment beside Debian's numpy and onnx (.venv, not tracked).
ORT_VERSION=1.31.1
venv="$(cd "$(dirname "$0")/.." && pwd)/.venv"
if ! "$venv/bin/python" -c "import onnxruntime as o; assert o.__version__ == '$ORT_VERSION'" 2>/dev/null; then
  echo "otc: installing onnxruntime $ORT_VERSION into $venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "onnxruntime==$ORT_VERSION"
fi

# cudnn-frontend's headers (cuDNN's graph API in C++, header-only), pinned,
# for the CUDA runtime's fused attention: from its PyPI wheel into
# .deps/cudnn-frontend (not tracked). Only where CUDA is.
CUDNN_FE_VERSION=1.32.0
deps="$(cd "$(dirname "$0")/.." && pwd)/.deps"
if [ -x /usr/local/cuda/bin/nvcc ] &&
   ! grep -qs "$CUDNN_FE_VERSION" "$deps/cudnn-frontend/VERSION"; then
  echo "otc: fetching cudnn-frontend $CUDNN_FE_VERSION headers into $deps"
  rm -rf "$deps/cudnn-frontend" "$deps/wheel"
  mkdir -p "$deps/wheel"
  "$venv/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$deps/wheel" "nvidia-cudnn-frontend==$CUDNN_FE_VERSION"
  "$venv/bin/python" - "$deps" <<'PY'
import sys, zipfile, glob, os
deps = sys.argv[1]
wheel = glob.glob(os.path.join(deps, "wheel", "*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("include/"):
            z.extract(name, os.path.join(deps, "cudnn-frontend"))
PY
  echo "$CUDNN_FE_VERSION" > "$deps/cudnn-frontend/VERSION"
  rm -rf "$deps/wheel"
fi
