#!/usr/bin/env bash
# Builds the recompute comparison against torch.utils.checkpoint (README.md
# here) into a folder that runs on a GPU machine without MLIR: CUDA
# executables of make_models.py's GPT under each --recompute policy, with
# their compile logs (plan, FLOPs) and memory timelines.
# usage: bundle.sh OUT [cuda|cpu]   (needs build/bin/otc; then, there:
# python3 OUT/recompute_gpu.py OUT; a cpu bundle tests the script)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: bundle.sh OUT [cuda|cpu]}
target=${2:-cuda}
otc=$root/build/bin/otc
budget=200M # between selective's plan and blocks' (cuBLAS workspace included): budget recomputes some layers
rm -rf "$out" && mkdir -p "$out/lib" "$out/models"
/usr/bin/python3 "$root/bench/amp/make_models.py" "$out/models" > /dev/null 2>&1
rm -rf "$out/models/resnet_bench"
d=$out/models/gpt_bench
for p in none selective blocks sqrt budget; do
  extra=()
  [ $p = budget ] && extra=(--memory-budget $budget)
  "$otc" compile "$d/model.onnx" -o "$d/train_$p" --target $target $(cat "$d/compile_flags") \
    --recompute $p "${extra[@]}" --embed-weights --memory-report "$d/timeline_$p.svg" 2> "$d/compile_$p.log"
  strip "$d/train_$p"
done
rm "$d/model.onnx"
cp "$root/bench/recompute/recompute_gpu.py" "$root/bench/amp/make_models.py" "$root/bench/otc_run.py" \
   "$root/test/zoo/make_zoo.py" "$out/"
ldd "$d/train_none" | awk '/onnx|protobuf/ {print $3}' | xargs -r cp -L -t "$out/lib"
du -sh "$out"
echo "bundle ready: $out (run there: python3 $out/recompute_gpu.py $out)"
