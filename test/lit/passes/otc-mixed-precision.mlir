// RUN: otc-opt %s --otc-mixed-precision="precision=fp16" | FileCheck %s
// RUN: otc-opt %s --otc-mixed-precision="precision=fp16" --split-input-file | FileCheck %s --check-prefix=BIAS
// RUN: otc-opt %s --otc-mixed-precision="precision=fp16 keep-fp32=matmul" | FileCheck %s --check-prefix=KEEP
// RUN: otc-opt %s --otc-mixed-precision | FileCheck %s --check-prefix=FP32
// RUN: not otc-opt %s --otc-mixed-precision="precision=fp8" 2>&1 | FileCheck %s --check-prefix=BAD

// A transformer-style block: the matmuls in fp16 on cast float32 operands,
// the residual add in float32 (the widest operand), the mean in float32,
// and the loss stays float32. The softmax (float32 by the table) reads an
// fp16 value and only feeds an fp16 matmul, so it stores fp16 ("low_users"):
// its kernel still sums in float32, and no float32 copy is kept.
// CHECK: module attributes {otc.precision_policy = {{{.*}}precision = 1 : i32
// CHECK-LABEL: func.func @block
// CHECK: %[[X16:.*]] = otc.cast %arg0 : tensor<4x8xf32> -> tensor<4x8xf16>
// CHECK: %[[W16:.*]] = otc.cast %arg1 : tensor<8x8xf32> -> tensor<8x8xf16>
// CHECK: %[[Q:.*]] = otc.matmul %[[X16]], %[[W16]] {otc.precision = "low"} : tensor<4x8xf16>, tensor<8x8xf16> -> tensor<4x8xf16>
// CHECK: %[[S:.*]] = otc.softmax %[[Q]] {axis = 1 : i64, otc.precision = "low_users"} : tensor<4x8xf16>
// CHECK: %[[A:.*]] = otc.matmul %[[S]], {{.*}} -> tensor<4x8xf16>
// CHECK: %[[A32:.*]] = otc.cast %[[A]] : tensor<4x8xf16> -> tensor<4x8xf32>
// CHECK: otc.add %arg0, %[[A32]] {otc.precision = "widest"} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: otc.reduce_mean {{.*}} : tensor<4x8xf32> -> tensor<f32>
// KEEP-NOT: xf16>
// FP32-NOT: otc.cast
// BAD: for the --precision option: Cannot find option named 'fp8'!
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

// -----
// GELU as PyTorch exports it: the scalars (float32 splat constants) are
// weak, as autocast's Python scalars, so the chain stays in fp16, erf
// included (autocast keeps only erfinv in float32); the constants are
// rounded in the pass. A full-shape constant still widens.
// BIAS-LABEL: func.func @gelu
// BIAS: %[[Y:.*]] = otc.matmul {{.*}} -> tensor<2x8xf16>
// BIAS: %[[ROOT2:.*]] = otc.constant dense<1.414060e+00> : tensor<f16>
// BIAS: %[[D:.*]] = otc.div %[[Y]], %[[ROOT2]] {otc.precision = "widest"} : tensor<2x8xf16>, tensor<f16> -> tensor<2x8xf16>
// BIAS: otc.erf %[[D]] {otc.precision = "widest"} : tensor<2x8xf16>
// BIAS: %[[HALF:.*]] = otc.constant dense<5.000000e-01> : tensor<f16>
// BIAS: otc.mul %{{.*}}, %[[HALF]] {otc.precision = "widest"} : tensor<2x8xf16>, tensor<f16> -> tensor<2x8xf16>
// BIAS: otc.add %{{.*}}, %{{.*}} {otc.precision = "widest"} : tensor<2x8xf32>, tensor<1x8xf32> -> tensor<2x8xf32>
func.func @gelu(%x: tensor<2x8xf32>, %w: tensor<8x8xf32> {otc.param = "w", otc.trainable})
    -> (tensor<f32> {otc.loss}) {
  %root2 = otc.constant dense<1.41421354> : tensor<f32>
  %one = otc.constant dense<1.0> : tensor<f32>
  %half = otc.constant dense<0.5> : tensor<f32>
  %ramp = otc.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]> : tensor<1x8xf32>
  %y = otc.matmul %x, %w : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
  %d = otc.div %y, %root2 : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %e = otc.erf %d : tensor<2x8xf32>
  %p = otc.add %e, %one : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %m = otc.mul %y, %p : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %g = otc.mul %m, %half : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %r = otc.add %g, %ramp : tensor<2x8xf32>, tensor<1x8xf32> -> tensor<2x8xf32>
  %l = otc.reduce_mean %r [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----
// A LayerNorm before a GEMM: the statistics run in float32 on the float32
// input, and the affine, whose only use is the fp16 GEMM, runs in fp16
// ("low_users") on the rounded x̂.
// BIAS-LABEL: func.func @layer_norm
// BIAS: %[[N:.*]] = otc.normalize %arg0 {{.*}}otc.precision = "f32"{{.*}} : tensor<4x8xf32>
// BIAS: %[[N16:.*]] = otc.cast %[[N]] : tensor<4x8xf32> -> tensor<4x8xf16>
// BIAS: %[[S:.*]] = otc.mul %[[N16]], %{{.*}} {otc.precision = "low_users"} : tensor<4x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
// BIAS: %[[A:.*]] = otc.add %[[S]], %{{.*}} {otc.precision = "low_users"} : tensor<4x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
// BIAS: otc.matmul %[[A]], {{.*}} -> tensor<4x8xf16>
func.func @layer_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32> {otc.param = "g", otc.trainable},
                      %b: tensor<8xf32> {otc.param = "b", otc.trainable},
                      %w: tensor<8x8xf32> {otc.param = "w", otc.trainable}) -> (tensor<f32> {otc.loss}) {
  %n = otc.normalize %x {axis = 1 : i64, epsilon = 1.0e-5 : f64} : tensor<4x8xf32>
  %s = otc.mul %n, %g : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %a = otc.add %s, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %y = otc.matmul %a, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %l = otc.reduce_mean %y [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
