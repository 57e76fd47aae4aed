#!/usr/bin/env bash
# Builds the mixed-precision comparison against PyTorch AMP (README.md here)
# into a folder that runs on a GPU machine without MLIR: CUDA executables at
# fp32, fp16 and bf16 for the zoo's GPT and LeNet (200-step loss curves) and
# for the benchmark models of make_models.py (step time, memory).
# usage: bundle.sh OUT [cuda|cpu]   (needs build/bin/otc; then, there:
# python3 OUT/amp_gpu.py OUT; a cpu bundle tests the script, see amp_gpu.py)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: bundle.sh OUT [cuda|cpu]}
target=${2:-cuda}
otc=$root/build/bin/otc
rm -rf "$out" && mkdir -p "$out/lib" "$out/models"
/usr/bin/python3 "$root/bench/amp/make_models.py" "$out/models" 2>/dev/null
for zc in gpt lenet; do
  mkdir -p "$out/models/$zc"
  cp -r "$root/test/zoo/fixtures/$zc/"{model.onnx,data,compile_flags,train_flags} "$out/models/$zc/"
done
for dir in "$out"/models/*/; do
  for p in fp32 fp16 bf16; do
    "$otc" compile "$dir/model.onnx" -o "$dir/train_$p" --target $target $(cat "$dir/compile_flags") --precision $p \
      --embed-weights # the device machine has none of these paths
    strip "$dir/train_$p"
  done
  # The executables embed the model. PyTorch loads the zoo's initial weights;
  # the benchmark models' are make_models.py's seeded ones.
  [ -e "$dir/compile_flags" ] && [ -e "$root/test/zoo/fixtures/$(basename "$dir")" ] &&
  /usr/bin/python3 -c "import sys, onnx, numpy as np; from onnx import numpy_helper as h
np.savez(sys.argv[2], **{i.name: h.to_array(i) for i in onnx.load(sys.argv[1]).graph.initializer})" \
    "$dir/model.onnx" "$dir/init.npz"
  rm "$dir/model.onnx"
done
cp "$root/bench/amp/amp_gpu.py" "$root/bench/amp/make_models.py" "$root/bench/otc_run.py" \
   "$root/test/zoo/make_zoo.py" "$out/"
ldd "$out/models/gpt/train_fp32" | awk '/onnx|protobuf/ {print $3}' | xargs -r cp -L -t "$out/lib"
echo "bundle ready: $out (run there: python3 $out/amp_gpu.py $out)"
