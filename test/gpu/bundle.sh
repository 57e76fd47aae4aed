#!/usr/bin/env bash
# Builds the CUDA training executables (the e2e checks), the f16/bf16 kernels
# and the bandwidth micro-benchmarks into a self-contained folder
# (executables, fixtures, checkers, non-CUDA shared libraries) that runs on a
# GPU machine without MLIR: see README.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/gpu-bundle}
otc=$root/build/bin/otc
# Executables that carry their weights: the GPU machine has none of these paths.
otc_compile() { "$otc" compile "$@" --embed-weights; }
py=${PYTHON:-/usr/bin/python3} # Debian's, with numpy, onnx and torch
fx=$root/test/e2e/fixtures
rm -rf "$out" && mkdir -p "$out/lib"
for opt in sgd momentum adam adamw; do
  otc_compile "$fx/mlp_ce.onnx" -o "$out/train_$opt" --target cuda --optimizer $opt --micro-batch 2
done
otc_compile "$fx/mlp_ce.onnx" -o "$out/train_large" --target cuda --optimizer sgd --micro-batch 8
# The non-finite gradient check's CUDA kernel (test/e2e/train_hostile.test on the CPU).
otc_compile "$root/test/lit/Inputs/hostile/grad_overflow.onnx" -o "$out/train_grad_overflow" \
  --target cuda --micro-batch 4
# The zoo (test/zoo), each case with its own flags, data and reference.
for dir in "$root"/test/zoo/fixtures/*/; do
  case=$(basename "$dir")
  mkdir -p "$out/zoo/$case"
  otc_compile "$dir/model.onnx" -o "$out/zoo/$case/train" --target cuda $(cat "$dir/compile_flags")
  cp -r "$dir/data" "$dir/train_flags" "$out/zoo/$case/"
  if [ -e "$dir/expected.npz" ]; then cp "$dir/expected.npz" "$out/zoo/$case/"; fi
done
# A layer test's model (SCRIPT CASE, trained against PyTorch by the script
# on the CPU) as zoo case NAME: its model for CUDA, data and reference.
script_case() {
  local script=$1 case=$2 name=$3 made
  made=$(mktemp -d)
  PATH=$root/build/bin:$PATH "$py" "$root/test/e2e/$script" "$case" "$made" > /dev/null
  mkdir -p "$out/zoo/$name"
  otc_compile "$made/model.onnx" -o "$out/zoo/$name/train" --target cuda --micro-batch 4 \
    --loss mse:y
  cp -r "$made/data" "$made/expected.npz" "$out/zoo/$name/"
  echo "--steps 3 --lr 0.1" > "$out/zoo/$name/train_flags"
  rm -rf "$made"
}
# 3-D windows (test/e2e/volume_layers.test on the CPU), composed of 2-D ones
# (gathers and scatter-adds along D).
for layer in conv_grouped convtranspose maxpool avgpool; do
  script_case volume_layers.py $layer volume_$layer
done
# Packed sequences (test/e2e/packed_sequences.test on the CPU): the
# recurrences' lengths on the GPU.
for cell in lstm gru rnn; do
  script_case packed_sequences.py $cell packed_$cell
done
# Padded rows (test/lit/codegen/pad-rows.test on the CPU): a 101-class
# classifier, with and without its head's bias, in bf16 with its logits
# padded and dense (OTC_PAD_ROWS=0): cuBLAS and cuBLASLt at ld 104.
mkdir -p "$out/pad"
for v in plain bias; do
  "$py" "$root/test/lit/Inputs/make_odd_classes.py" "$out/pad/$v.onnx" "$out/pad/${v}_data" \
    $([ $v = bias ] && echo bias)
  for mode in padded dense; do
    OTC_PAD_ROWS=$([ $mode = padded ] && echo 1 || echo 0) otc_compile "$out/pad/$v.onnx" \
      -o "$out/pad/${v}_$mode" --target cuda --precision bf16 --optimizer sgd --micro-batch 8 \
      --loss cross-entropy:logits
  done
  rm "$out/pad/$v.onnx"
done
# The step boundary (test/e2e/schedule_clip.test): the zoo's GPT with
# token-weighted windows, warmup + cosine, clipping and --no-decay, against
# the float32 PyTorch reference made here; and SIGKILL + resume on the
# dropout MLP in fp16 with a shuffle (test/e2e/resume.test).
flags="--steps 30 --accum-steps 2 --lr 0.01 --lr-schedule cosine --warmup-steps 5 --min-lr 0.001 --clip-grad-norm 3 --weight-decay 0.1 --no-decay bias$ --no-decay ln"
mkdir -p "$out/run"
"$py" "$root/test/e2e/schedule_reference.py" make gpt "$out/run/gpt"
"$py" "$root/test/e2e/schedule_reference.py" expected gpt "$out/run/gpt" "$out/run/gpt/expected.npz" \
  "$out/run/gpt/logs.npz" $flags
echo "$flags" > "$out/run/gpt/train_flags"
otc_compile "$root/test/zoo/fixtures/gpt/model.onnx" -o "$out/run/gpt/train" --target cuda --optimizer adamw --micro-batch 2
otc_compile "$root/test/zoo/fixtures/dropout_mlp/model.onnx" -o "$out/run/mlp16" --target cuda \
  --optimizer adam --micro-batch 16 --precision fp16 --scale-window 7
cp -r "$root/test/zoo/fixtures/dropout_mlp/data" "$out/run/mlp_data"
# Adafactor (test/e2e/adafactor.test) against transformers' on LeNet.
otc_compile "$root/test/zoo/fixtures/lenet/model.onnx" -o "$out/run/lenet_adafactor" --target cuda \
  --optimizer adafactor --micro-batch 2
cp -r "$root/test/zoo/fixtures/lenet/data" "$out/run/lenet_data"
cp "$root"/test/e2e/fixtures/adafactor/lenet_*.npz "$out/run/"
# 8-bit AdamW (test/e2e/adamw8bit.test): the CUDA run's 200-step curve
# inside the envelope of float32 AdamW at lr x (1 -+ 0.09), run here.
z=$root/test/zoo/fixtures
otc_compile "$z/gpt/model.onnx" -o "$out/run/gpt_q8" --target cuda --optimizer adamw8bit \
  --micro-batch 2 --min-8bit-size 1
cp -r "$z/gpt/data" "$out/run/gpt_zoo_data"
a32=$(mktemp -d)
otc_compile "$z/gpt/model.onnx" -o "$a32/train" --target cpu --optimizer adamw --micro-batch 2 2> /dev/null
for lr in 0.003:a32 0.00273:low 0.00327:high; do
  "$a32/train" --data "$z/gpt/data" --steps 200 --lr "${lr%%:*}" --log "$out/run/q8_${lr##*:}.jsonl" 2> /dev/null
done
rm -rf "$a32"
# LoRA (test/e2e/lora.test) on the zoo's LLaMA block, in float32 and with
# the frozen base stored only in fp16, against the PyTorch LoRA's weights.
lora=(--optimizer adamw --micro-batch 2 --lora 4 --lora-alpha 8 --lora-targets 'w[qv]')
otc_compile "$z/llama/model.onnx" -o "$out/run/lora32" --target cuda "${lora[@]}"
otc_compile "$z/llama/model.onnx" -o "$out/run/lora16" --target cuda "${lora[@]}" --precision fp16
cp -r "$z/llama/data" "$out/run/llama_data"
"$py" "$root/test/e2e/lora_reference.py" expected "$out/run/lora32.npz" 0 4 8 3 2 0.01 0.1 'w[qv]'
"$py" "$root/test/e2e/lora_reference.py" expected "$out/run/lora16.npz" 0.00048828125 4 8 3 2 0.01 0.1 'w[qv]'
# Data parallelism over NCCL (test/e2e/data_parallel*.test on the CPU): the
# zoo's GPT as a group of one through the rendezvous file (the GPU machine
# has no mpirun). MPI's libraries travel so that it loads; nothing calls them.
otc_compile "$z/gpt/model.onnx" -o "$out/run/gpt_dp" --target cuda $(cat "$z/gpt/compile_flags") \
  --data-parallel
cp -r "$z/gpt/data" "$out/run/gpt_data"
ldd "$out/run/gpt_dp" | awk '/libmpi|open-rte|open-pal|hwloc|libevent|libudev/ {print $3}' |
  xargs -r cp -L -t "$out/lib"
cp "$root/test/e2e/schedule_reference.py" "$root/test/e2e/resume_check.py" \
  "$root/test/e2e/check_adamw8bit.py" "$root/test/e2e/check_trace.py" "$out/run/"
# f16/bf16 kernels (test/e2e/kernels_16bit.test on the CPU) and the
# bandwidth micro-benchmarks (bench/gpu_kernels.py).
for t in f32 f16 bf16; do
  "$otc" kernel "$root/test/e2e/kernels/epilogue_$t.mlir" -o "$out/kernel_epilogue_$t" --target cuda
  "$otc" kernel "$root/test/e2e/kernels/conv_$t.mlir" -o "$out/kernel_conv_$t" --target cuda
done
# Convolution as one op (--conv-op, test/e2e/conv_op.test on the CPU): the
# zoo's CNNs in float32 (the direct kernels) against PyTorch, and ResNet and
# the depthwise CNN in bf16 (cuDNN) against the same executables built
# without --conv-op (im2col and GEMMs).
for case in lenet batchnorm_cnn resnet depthwise textcnn vit; do
  otc_compile "$z/$case/model.onnx" -o "$out/zoo/$case/train_conv" --target cuda --conv-op \
    $(cat "$z/$case/compile_flags")
done
for case in resnet depthwise; do
  otc_compile "$z/$case/model.onnx" -o "$out/zoo/$case/train_bf16" --target cuda \
    --precision bf16 $(cat "$z/$case/compile_flags")
  otc_compile "$z/$case/model.onnx" -o "$out/zoo/$case/train_bf16_conv" --target cuda --conv-op \
    --precision bf16 $(cat "$z/$case/compile_flags")
done
for k in chain rows gemm; do
  for t in f16 bf16; do
    "$otc" kernel "$root/test/e2e/kernels/${k}_$t.mlir" -o "$out/kernel_${k}_$t" --target cuda
  done
done
for k in unary softmax normalize gather logic slice steps rotary columns cross_entropy batch_norm; do
  "$otc" kernel "$root/test/e2e/kernels/${k}_f32.mlir" -o "$out/kernel_${k}_f32" --target cuda
done
"$otc" kernel "$root/test/e2e/kernels/dropout_f32.mlir" -o "$out/kernel_dropout" --target cuda
# Fused attention (test/e2e/attention.test on the CPU): the same cases, and
# a GPT-2-sized head (T 1024, D 64) in bf16 on cuDNN and on otc's kernels,
# and grouped queries in f16 on cuDNN; then the [B, T, H, D] layout
# (otc-attention-layout) on otc's kernels and, strided, on cuDNN; then q, k
# and v read in place from one packed projection, with row pitches.
while read -r name flags; do
  "$py" "$root/test/e2e/check_attention.py" "$otc" "$out/attention/$name" --target cuda \
    --build-only $flags > /dev/null
  echo "$flags" > "$out/attention/$name/flags"
done <<'CASES'
causal --causal
padded_gqa --mask add --kv-heads 2
padded_causal --mask add --causal --kv-heads 1
keep --mask keep --queries 6 --keys 9
bf16 --type bf16 --causal --kv-heads 2
f16 --type f16 --mask keep --heads 2 --kv-heads 1 --dim 64 --value-dim 40
gpt2_bf16 --type bf16 --causal --batch 1 --heads 2 --kv-heads 2 --queries 1024 --keys 1024 --dim 64 --value-dim 64 --cudnn
gpt2_bf16_kernel --type bf16 --causal --batch 1 --heads 2 --kv-heads 2 --queries 1024 --keys 1024 --dim 64 --value-dim 64 --kernel
gqa_f16 --type f16 --heads 4 --kv-heads 2 --queries 128 --keys 128 --dim 64 --value-dim 64 --cudnn
bthd_causal --layout bthd --causal --kv-heads 2
bthd_padded --layout bthd --type bf16 --mask add --queries 6 --keys 9 --value-dim 16
gpt2_bthd_bf16 --layout bthd --type bf16 --causal --batch 2 --heads 4 --kv-heads 4 --queries 1024 --keys 1024 --dim 64 --value-dim 64 --cudnn
gqa_bthd_f16 --layout bthd --type f16 --heads 4 --kv-heads 2 --queries 128 --keys 128 --dim 64 --value-dim 64 --cudnn
packed_qkv --packed qkv --causal --kv-heads 2 --value-dim 16
packed_kv --packed kv --type bf16 --mask add --queries 6 --keys 9 --value-dim 16 --kv-heads 2
gpt2_packed_bf16 --packed qkv --type bf16 --causal --batch 2 --heads 4 --kv-heads 4 --queries 1024 --keys 1024 --dim 64 --value-dim 64 --cudnn
gpt2_packed_bf16_kernel --packed qkv --type bf16 --causal --batch 2 --heads 4 --kv-heads 4 --queries 1024 --keys 1024 --dim 64 --value-dim 64 --kernel
packed_kv_f16 --packed kv --type f16 --heads 4 --kv-heads 2 --queries 128 --keys 256 --dim 64 --value-dim 64 --cudnn
CASES
# Recurrent cells (test/e2e/recurrent.test on the CPU): the same cases.
while read -r name flags; do
  "$py" "$root/test/e2e/check_recurrent.py" "$otc" "$out/recurrent/$name" --target cuda \
    --build-only $flags > /dev/null
  echo "$flags" > "$out/recurrent/$name/flags"
done <<'CASES'
lstm --cell lstm
lstm_rev --cell lstm --reverse --no-cell-grad --steps 4 --batch 2 --hidden 33
gru_lbr --cell gru --lbr 1 --rbias
gru --cell gru --lbr 0 --reverse --hidden 17
rnn --cell rnn --steps 9
rnn_relu --cell rnn --relu --reverse --hidden 17
lstm_bf16 --cell lstm --type bf16 --reverse
gru_bf16 --cell gru --type bf16 --lbr 0
gru_lbr_bf16 --cell gru --type bf16 --lbr 1 --rbias --reverse
rnn_relu_bf16 --cell rnn --relu --type bf16
lstm_lens --cell lstm --lens --reverse --no-cell-grad
gru_lens_bf16 --cell gru --lbr 1 --rbias --lens --type bf16
rnn_lens --cell rnn --relu --lens --batch 4
CASES
"$otc" kernel "$root/bench/kernels/ce_rows.mlir" -o "$out/bench_ce" --target cuda
"$py" "$root/test/e2e/check_attention.py" "$otc" "$out/bench_attention" --target cuda --build-only \
  --type bf16 --causal --batch 8 --heads 12 --kv-heads 12 --queries 1024 --keys 1024 --dim 64 \
  --value-dim 64 > /dev/null
"$otc" kernel "$root/bench/kernels/chain.mlir" -o "$out/bench_chain" --target cuda
# GPT-2 124M, BERT-large (the seeds' five configurations) and ResNet-50
# against PyTorch eager and torch.compile (bench/gpu_train): the executables
# travel, the exports (0.5 and 1.3 GB) stay here. OTC_BENCH="" skips them.
for model in ${OTC_BENCH-gpt2 bert resnet50}; do
  bench_work=$(mktemp -d)
  "$py" "$root/bench/gpu_train/make.py" "$model" "$bench_work" "$out/bench_$model" --target cuda
  rm -rf "$bench_work" "$out/bench_$model/lib" # the bundle's lib/ serves (run.py looks in ../lib)
done
cp -r "$fx/data" "$fx"/expected_ce_*.npz "$root/test/e2e/check_weights.py" "$root/test/gpu/run_bundle.sh" \
  "$root/test/e2e/check_departure.py" \
  "$root/test/e2e/check_kernel.py" "$root/test/e2e/check_attention.py" "$root/test/e2e/check_recurrent.py" "$root/test/e2e/check_dropout.py" "$root/test/e2e/philox_reference.py" \
  "$root/bench/gpu_kernels.py" "$root/bench/attention_gpu.py" "$out/"
# Debian's protobuf and ONNX libraries travel; CUDA's come from the GPU machine.
ldd "$out/train_sgd" | awk '/onnx|protobuf/ {print $3}' | xargs -r cp -L -t "$out/lib"
echo "bundle ready: $out (run: bash $out/run_bundle.sh)"
