#!/usr/bin/env bash
# Command 1: installs what is missing, builds, trains the bundled digits
# examples (an MLP and a CNN) on the CPU and reports held-out accuracy, then
# trains the character-level transformer and reports its held-out loss.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ex=examples/digits
out=build/digits
mkdir -p "$out"
build/bin/otc compile $ex/mlp.onnx -o "$out/train" --target cpu \
  --optimizer adamw --micro-batch 50 --loss cross-entropy:logits
echo "held-out accuracy before training:"
/usr/bin/python3 $ex/evaluate.py $ex/mlp.onnx $ex/data/test
"$out/train" --data $ex/data/train --epochs 20 --accum-steps 2 --lr 0.01 \
  --save "$out/trained.onnx" --log "$out/metrics.jsonl"
echo "held-out accuracy after training:"
/usr/bin/python3 $ex/evaluate.py "$out/trained.onnx" $ex/data/test

# The CNN variant: two convolutions with max pooling.
build/bin/otc compile $ex/cnn.onnx -o "$out/train_cnn" --target cpu \
  --optimizer adamw --micro-batch 50 --loss cross-entropy:logits
"$out/train_cnn" --data $ex/data/train --epochs 30 --accum-steps 2 --lr 0.003 \
  --save "$out/trained_cnn.onnx" --log "$out/metrics_cnn.jsonl"
echo "CNN held-out accuracy after training:"
/usr/bin/python3 $ex/evaluate.py "$out/trained_cnn.onnx" $ex/data/test

# A character-level transformer on the shipped public-domain texts: its
# held-out loss against the unigram entropy of the characters.
cg=examples/chargpt
build/bin/otc compile $cg/model.onnx -o "$out/train_chargpt" --target cpu \
  --optimizer adamw --micro-batch 32
"$out/train_chargpt" --data $cg/data/train --epochs 12 --lr 0.003 --weight-decay 0.1 \
  --save "$out/chargpt.onnx"
build/bin/otc compile "$out/chargpt.onnx" --forward-only --micro-batch 22 --target cpu \
  -o "$out/chargpt_forward"
"$out/chargpt_forward" --data $cg/data/test --out "$out/chargpt_test"
/usr/bin/python3 $cg/evaluate.py "$out/chargpt_test/loss.npy"
