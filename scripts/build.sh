#!/usr/bin/env bash
# Installs what is missing, configures and builds otc.
#   scripts/build.sh             release build in build/ (the host compiler)
#   scripts/build.sh --sanitize  ASan + UBSan + LSan build with clang in
#                                build-san/, with the libFuzzer targets
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
dir=build
extra=()
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-san
  # CUDA stays off: ASan and the CUDA driver do not share an address space
  # layout, and no GPU runs these tests anyway.
  extra=(-DOTC_SANITIZE=ON -DOTC_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
         -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14)
else
  extra=(-DCMAKE_BUILD_TYPE=Release)
fi
if [ ! -f "$dir/build.ninja" ]; then
  cmake -G Ninja -S . -B "$dir" "${extra[@]}" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
ninja -C "$dir" -j "$(nproc)"
