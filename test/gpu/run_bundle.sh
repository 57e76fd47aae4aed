#!/usr/bin/env bash
# Runs the bundle made by bundle.sh on a GPU: weights after 3 steps of each
# optimizer against PyTorch, and accumulation against the large batch.
set -uo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$dir/lib:${LD_LIBRARY_PATH:-}"
py=${PYTHON:-python3}
# cuDNN (fused attention, opened at run time) and the shared CUDA runtime
# that cudnn-frontend opens come from PyTorch's wheels when the system has none.
wheels=$("$py" -c "
import glob, nvidia
print(':'.join(d for p in nvidia.__path__ for d in sorted(glob.glob(p + '/*/lib'))
               if glob.glob(d + '/libcudnn.so.9') or glob.glob(d + '/libcudart.so.13')))" 2>/dev/null || true)
[ -n "$wheels" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$wheels"
tmp=$(mktemp -d)
pass=0 fail=0
check() { # name, trained model, reference
  if "$py" "$dir/check_weights.py" "$2" "$3"; then pass=$((pass + 1)); echo "PASS $1"
  else fail=$((fail + 1)); echo "FAIL $1"; fi
}
run() { # name, executable, flags...
  local name=$1 exe=$2; shift 2
  "$dir/$exe" --data "$dir/data" --steps 3 "$@" --save "$tmp/$name.onnx" || echo "train failed: $name"
}
run sgd train_sgd --accum-steps 4 --lr 0.1
run momentum train_momentum --accum-steps 4 --lr 0.1 --momentum 0.9
run adam train_adam --accum-steps 4 --lr 0.01
run adamw train_adamw --accum-steps 4 --lr 0.01 --weight-decay 0.1
run large train_large --lr 0.1
for opt in sgd momentum adam adamw; do check "$opt matches PyTorch" "$tmp/$opt.onnx" "$dir/expected_ce_$opt.npz"; done
check "accumulation equals large batch" "$tmp/sgd.onnx" "$tmp/large.onnx"
check "large batch matches PyTorch" "$tmp/large.onnx" "$dir/expected_ce_sgd.npz"
# The zoo: CNNs and more against PyTorch, with the CPU's tolerances.
for zc in "$dir"/zoo/*/; do
  case=$(basename "$zc")
  "$zc/train" --data "$zc/data" $(cat "$zc/train_flags") --save "$tmp/zoo_$case.onnx" \
    2> "$tmp/zoo_$case.err" || echo "train failed: zoo $case"
  cat "$tmp/zoo_$case.err" >&2
  # The arena's measured high-water mark equals the plan (memory_plan.test on the CPU).
  if grep -Eq "arena high-water mark ([0-9]+) bytes \(planned \1\)" "$tmp/zoo_$case.err"; then
    pass=$((pass + 1)); echo "PASS zoo $case arena high-water mark equals the plan"
  else fail=$((fail + 1)); echo "FAIL zoo $case arena high-water mark"; fi
  # The dropout case has no reference weights (its draws are otc's own).
  if [ -e "$zc/expected.npz" ]; then
    check "zoo $case matches PyTorch" "$tmp/zoo_$case.onnx" "$zc/expected.npz"
  fi
done
# CUDA graphs (--cuda-graphs): each zoo model's run replayed from graphs
# saves bitwise the model of its eager run (dropout's draws included).
for zc in "$dir"/zoo/*/; do
  case=$(basename "$zc")
  "$zc/train" --data "$zc/data" $(cat "$zc/train_flags") --cuda-graphs \
    --save "$tmp/graphs_$case.onnx" 2> "$tmp/graphs_$case.err" || echo "train failed: graphs $case"
  if cmp -s "$tmp/zoo_$case.onnx" "$tmp/graphs_$case.onnx"; then
    pass=$((pass + 1)); echo "PASS zoo $case with CUDA graphs is bitwise the eager run"
  else fail=$((fail + 1)); echo "FAIL zoo $case with CUDA graphs"; cat "$tmp/graphs_$case.err"; fi
done
# Convolution as one op (--conv-op): float32 on the direct kernels against
# PyTorch; bf16 on cuDNN departing from float32 at most twice as far as the
# im2col build in bf16 (check_departure.py), with no note that cuDNN was
# missing or declined a shape.
for zc in "$dir"/zoo/*/; do
  case=$(basename "$zc")
  [ -x "$zc/train_conv" ] || continue
  "$zc/train_conv" --data "$zc/data" $(cat "$zc/train_flags") --save "$tmp/conv_$case.onnx" ||
    echo "train failed: conv $case"
  check "zoo $case with --conv-op matches PyTorch" "$tmp/conv_$case.onnx" "$zc/expected.npz"
  [ -x "$zc/train_bf16_conv" ] || continue
  "$zc/train_bf16" --data "$zc/data" $(cat "$zc/train_flags") --save "$tmp/bf16_$case.onnx" ||
    echo "train failed: bf16 $case"
  "$zc/train_bf16_conv" --data "$zc/data" $(cat "$zc/train_flags") --save "$tmp/bf16c_$case.onnx" \
    2> "$tmp/bf16c_$case.err" || echo "train failed: bf16 conv $case"
  if ! grep -q "cuDNN" "$tmp/bf16c_$case.err" &&
     "$py" "$dir/check_departure.py" "$tmp/bf16c_$case.onnx" "$tmp/bf16_$case.onnx" "$zc/expected.npz"; then
    pass=$((pass + 1)); echo "PASS zoo $case bf16 on cuDNN departs as im2col's"
  else fail=$((fail + 1)); echo "FAIL zoo $case bf16 on cuDNN"; cat "$tmp/bf16c_$case.err"; fi
done
# A finite loss with an overflowing gradient stops at the gradient, saving nothing.
mkdir -p "$tmp/x" && cp "$dir/data/x.npy" "$tmp/x/"
if ! "$dir/train_grad_overflow" --data "$tmp/x" --steps 2 --accum-steps 2 --save "$tmp/grad.onnx" \
     2> "$tmp/grad.err" && grep -q "step 1: the gradient of 'w' is not finite" "$tmp/grad.err" &&
   [ ! -e "$tmp/grad.onnx" ]; then
  pass=$((pass + 1)); echo "PASS non-finite gradient stops the run"
else
  fail=$((fail + 1)); echo "FAIL non-finite gradient stops the run"; cat "$tmp/grad.err"
fi
# Schedules, clipping, token-weighted windows and --no-decay against PyTorch;
# resume after SIGKILL bitwise (the CUDA sum of squares is deterministic).
r=$dir/run
"$r/gpt/train" --data "$r/gpt/data" $(cat "$r/gpt/train_flags") --log "$tmp/gpt.jsonl" \
  --save "$tmp/gpt_run.onnx" || echo "train failed: gpt run"
check "schedule and clipping match PyTorch" "$tmp/gpt_run.onnx" "$r/gpt/expected.npz"
if "$py" "$r/schedule_reference.py" logs "$tmp/gpt.jsonl" "$r/gpt/logs.npz"; then
  pass=$((pass + 1)); echo "PASS logged lr and grad_norm"
else fail=$((fail + 1)); echo "FAIL logged lr and grad_norm"; fi
if "$py" "$r/resume_check.py" "$tmp/resume" 4 7 "$r/mlp16" --data "$r/mlp_data" --steps 300 \
     --accum-steps 2 --lr 0.01 --shuffle --seed 5 | tee "$tmp/resume.txt" | grep -q "bitwise identical"; then
  pass=$((pass + 1)); echo "PASS resume after SIGKILL is bitwise identical"
else fail=$((fail + 1)); echo "FAIL resume after SIGKILL"; cat "$tmp/resume.txt"; fi
"$r/lenet_adafactor" --data "$r/lenet_data" --steps 10 --lr 0.01 --save "$tmp/af_fixed.onnx" ||
  echo "train failed: adafactor"
check "Adafactor matches transformers" "$tmp/af_fixed.onnx" "$r/lenet_fixed.npz"
"$r/lenet_adafactor" --data "$r/lenet_data" --steps 10 --scale-parameter --relative-step \
  --save "$tmp/af_rel.onnx" || echo "train failed: adafactor relative"
check "Adafactor (relative step) matches transformers" "$tmp/af_rel.onnx" "$r/lenet_relative.npz"
"$r/lenet_adafactor" --data "$r/lenet_data" --steps 10 --lr 0.01 --beta1 0.9 --save "$tmp/af_b1.onnx" ||
  echo "train failed: adafactor beta1"
check "Adafactor (first moment) matches transformers" "$tmp/af_b1.onnx" "$r/lenet_beta1.npz"
# 8-bit AdamW: the curve inside float32 AdamW's envelope, and bitwise resume.
"$r/gpt_q8" --data "$r/gpt_zoo_data" --steps 200 --lr 0.003 --log "$tmp/q8.jsonl" 2> /dev/null ||
  echo "train failed: adamw8bit"
if "$py" "$r/check_adamw8bit.py" "$tmp/q8.jsonl" "$r/q8_a32.jsonl" "$r/q8_low.jsonl" "$r/q8_high.jsonl"; then
  pass=$((pass + 1)); echo "PASS 8-bit AdamW within the quantisation envelope"
else fail=$((fail + 1)); echo "FAIL 8-bit AdamW curve"; fi
if "$py" "$r/resume_check.py" "$tmp/resume8" 2 9 "$r/gpt_q8" --data "$r/gpt_zoo_data" --steps 200 \
     --lr 0.003 | grep -q "bitwise identical"; then
  pass=$((pass + 1)); echo "PASS 8-bit AdamW resume is bitwise identical"
else fail=$((fail + 1)); echo "FAIL 8-bit AdamW resume"; fi
# LoRA, and its frozen base stored only in fp16.
for p in 32 16; do
  "$r/lora$p" --data "$r/llama_data" --steps 3 --accum-steps 2 --lr 0.01 --weight-decay 0.1 \
    --save "$tmp/lora$p.onnx" || echo "train failed: lora$p"
  check "LoRA ($p-bit base) matches PyTorch" "$tmp/lora$p.onnx" "$r/lora$p.npz"
done
# NCCL as a group of one (OTC_RENDEZVOUS, no mpirun): every collective runs,
# with ZeRO-1 and three buckets, and the saved model is the plain run's.
# NCCL comes from PyTorch's wheel when the system has none.
nccl=$("$py" -c "import nvidia.nccl, os; print(os.path.join(os.path.dirname(nvidia.nccl.__file__), 'lib'))" 2>/dev/null || true)
dp=(--data "$r/gpt_data" --steps 3 --accum-steps 2 --lr 0.01 --weight-decay 0.1)
LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$nccl" "$r/gpt_dp" "${dp[@]}" --save "$tmp/dp_plain.onnx" ||
  echo "train failed: gpt_dp alone"
OTC_RANK=0 OTC_WORLD_SIZE=1 OTC_RENDEZVOUS="$tmp/rv" LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$nccl" \
  "$r/gpt_dp" "${dp[@]}" --shard-optimizer --bucket-mb 0.01 --trace "$tmp/dp.json" \
  --save "$tmp/dp_group.onnx" || echo "train failed: gpt_dp as a group of one"
if cmp -s "$tmp/dp_plain.onnx" "$tmp/dp_group.onnx"; then
  pass=$((pass + 1)); echo "PASS NCCL group of one equals the plain run"
else fail=$((fail + 1)); echo "FAIL NCCL group of one"; fi
"$py" "$r/check_trace.py" "$tmp/dp.json" || echo "check_trace.py failed"
# f16 and bf16 storage on the GPU, against float64 within the rounding bound.
for k in chain rows gemm; do
  for t in f16 bf16; do
    if "$py" "$dir/check_kernel.py" "$dir/kernel_${k}_$t" $k $t; then
      pass=$((pass + 1)); echo "PASS $k $t"
    else fail=$((fail + 1)); echo "FAIL $k $t"; fi
  done
done
# GEMM epilogues on cuBLASLt (or its fallback), the same bounds.
for t in f32 f16 bf16; do
  for path in fused unfused; do
    if OTC_GEMM_EPILOGUE=$path "$py" "$dir/check_kernel.py" "$dir/kernel_epilogue_$t" epilogue $t; then
      pass=$((pass + 1)); echo "PASS epilogue $t $path"
    else fail=$((fail + 1)); echo "FAIL epilogue $t $path"; fi
  done
done
# Convolutions: 16-bit on cuDNN (no note that it was missing or declined
# them) and on the direct kernels (OTC_CONV=kernel), float32 on the latter.
for t in f32 f16 bf16; do
  for path in cudnn kernel; do
    [ $t = f32 ] && [ $path = cudnn ] && continue
    if OTC_CONV=$([ $path = kernel ] && echo kernel) "$py" "$dir/check_kernel.py" \
         "$dir/kernel_conv_$t" conv $t 2> "$tmp/conv_$t.err" && ! grep -q "cuDNN" "$tmp/conv_$t.err"; then
      pass=$((pass + 1)); echo "PASS conv $t $path"
    else fail=$((fail + 1)); echo "FAIL conv $t $path"; cat "$tmp/conv_$t.err"; fi
  done
done
for k in unary softmax normalize gather logic slice steps rotary columns cross_entropy batch_norm; do
  if "$py" "$dir/check_kernel.py" "$dir/kernel_${k}_f32" $k f32; then
    pass=$((pass + 1)); echo "PASS $k f32"
  else fail=$((fail + 1)); echo "FAIL $k f32"; fi
done
# Fused attention against float64 within check_attention.py's bounds.
for d in "$dir"/attention/*/; do
  if "$py" "$dir/check_attention.py" - "$d" --run-only $(cat "$d/flags"); then
    pass=$((pass + 1)); echo "PASS attention $(basename "$d")"
  else fail=$((fail + 1)); echo "FAIL attention $(basename "$d")"; fi
done
# Recurrent cells against PyTorch autograd in float64 (check_recurrent.py's bounds).
for d in "$dir"/recurrent/*/; do
  if "$py" "$dir/check_recurrent.py" - "$d" --run-only $(cat "$d/flags"); then
    pass=$((pass + 1)); echo "PASS recurrent $(basename "$d")"
  else fail=$((fail + 1)); echo "FAIL recurrent $(basename "$d")"; fi
done
# The same dropout mask on the GPU as numpy's Philox draws.
if "$py" "$dir/check_dropout.py" "$dir/kernel_dropout"; then
  pass=$((pass + 1)); echo "PASS dropout mask"
else fail=$((fail + 1)); echo "FAIL dropout mask"; fi
# Padded rows: the padded logits' GEMMs (ld 104) train as the dense ones.
# Not bitwise: cuBLAS may choose another kernel for another leading
# dimension and sum in another order, which flips a bf16 rounding of a
# logit or its gradient now and then: about lr 2^-8 |g| per weight and
# step (|g| < 0.5 here, lr 0.1: 2e-4), where wrong rows would move the
# weights by lr |g| itself. Two SGD steps of two micro-batches.
for v in plain bias; do
  for mode in padded dense; do
    "$dir/pad/${v}_$mode" --data "$dir/pad/${v}_data" --steps 2 --accum-steps 2 --lr 0.1 \
      --save "$tmp/pad_${v}_$mode.onnx" 2> /dev/null || echo "train failed: pad $v $mode"
  done
  if "$py" "$dir/check_weights.py" "$tmp/pad_${v}_padded.onnx" "$tmp/pad_${v}_dense.onnx" \
    --rtol 0 --atol 2e-3; then
    pass=$((pass + 1)); echo "PASS padded rows ($v) train as dense ones"
  else fail=$((fail + 1)); echo "FAIL padded rows ($v)"; fi
done
# Bandwidth against the device's copy (done-means point 6); record it in bench/RESULTS.md.
"$py" "$dir/gpu_kernels.py" "$dir" || echo "gpu_kernels.py failed"
# Attention's TFLOP/s against PyTorch's SDPA (cuDNN); record it in bench/RESULTS.md.
(cd "$dir" && "$py" attention_gpu.py "$dir") || echo "attention_gpu.py failed"
# GPT-2 124M, BERT-large and ResNet-50: otc against PyTorch eager and
# torch.compile, three runs each (GPT-2 with its loss curve against
# float32's); record them in bench/RESULTS.md. OTC_BENCH picks some.
for model in ${OTC_BENCH-gpt2 bert resnet50}; do
  b="$dir/bench_$model"
  [ -d "$b" ] || continue
  steps=100; [ "$model" = gpt2 ] || steps=30
  "$py" "$b/run.py" "$b" --steps $steps --systems otc,otc_graphs,eager,compile \
    --out "$tmp/bench_$model" || echo "bench $model failed"
  cp "$tmp/bench_$model/results.json" "${OUT:-$dir}/bench_$model.json" 2>/dev/null || true
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
