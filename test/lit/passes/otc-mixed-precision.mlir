// RUN: otc-opt %s --otc-mixed-precision="precision=fp16" | FileCheck %s
// RUN: otc-opt %s --otc-mixed-precision="precision=fp16" --split-input-file | FileCheck %s --check-prefix=BIAS
// RUN: otc-opt %s --otc-mixed-precision="precision=fp16 keep-fp32=matmul" | FileCheck %s --check-prefix=KEEP
// RUN: otc-opt %s --otc-mixed-precision | FileCheck %s --check-prefix=FP32
// RUN: not otc-opt %s --otc-mixed-precision="precision=fp8" 2>&1 | FileCheck %s --check-prefix=BAD

// A transformer-style block: the matmuls in fp16 on cast float32 operands,
// the residual add in float32 (the widest operand), softmax and the mean
// in float32, and the loss stays float32.
// CHECK: module attributes {otc.precision_policy = {{{.*}}precision = "fp16"
// CHECK-LABEL: func.func @block
// CHECK: %[[X16:.*]] = otc.cast %arg0 : tensor<4x8xf32> -> tensor<4x8xf16>
// CHECK: %[[W16:.*]] = otc.cast %arg1 : tensor<8x8xf32> -> tensor<8x8xf16>
// CHECK: %[[Q:.*]] = otc.matmul %[[X16]], %[[W16]] {otc.precision = "low"} : tensor<4x8xf16>, tensor<8x8xf16> -> tensor<4x8xf16>
// CHECK: %[[S:.*]] = otc.softmax %{{.*}} {axis = 1 : i64, otc.precision = "f32"} : tensor<4x8xf32>
// CHECK: %[[A:.*]] = otc.matmul {{.*}} -> tensor<4x8xf16>
// CHECK: %[[A32:.*]] = otc.cast %[[A]] : tensor<4x8xf16> -> tensor<4x8xf32>
// CHECK: otc.add %arg0, %[[A32]] {otc.precision = "widest"} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: otc.reduce_mean {{.*}} : tensor<4x8xf32> -> tensor<f32>
// KEEP-NOT: xf16>
// FP32-NOT: otc.cast
// BAD: error: otc-mixed-precision: unknown precision 'fp8' (expected fp32, fp16 or bf16)
func.func @block(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {otc.param = "w", otc.trainable})
    -> (tensor<f32> {otc.loss}) {
  %q = otc.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %s = otc.softmax %q {axis = 1 : i64} : tensor<4x8xf32>
  %a = otc.matmul %s, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %r = otc.add %x, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %l = otc.reduce_mean %r [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----
// A Linear on 3-D input as PyTorch exports it (MatMul, then Add of the bias
// parameter): the bias is cast and the add runs in fp16, as autocast's
// linear does; an add of two activations still takes the widest type.
// BIAS-LABEL: func.func @linear
// BIAS: %[[B16:.*]] = otc.cast %arg2 : tensor<8xf32> -> tensor<8xf16>
// BIAS: otc.add %{{.*}}, %[[B16]] {otc.precision = "widest"} : tensor<2x4x8xf16>, tensor<8xf16> -> tensor<2x4x8xf16>
// BIAS: otc.add %arg0, %{{.*}} {otc.precision = "widest"} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
func.func @linear(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32> {otc.param = "w", otc.trainable},
                  %b: tensor<8xf32> {otc.param = "b", otc.trainable}) -> (tensor<f32> {otc.loss}) {
  %y = otc.matmul %x, %w : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  %z = otc.add %y, %b : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %r = otc.add %x, %z : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %l = otc.reduce_mean %r [0, 1, 2] : tensor<2x4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
