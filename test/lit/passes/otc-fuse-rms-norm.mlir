// RUN: otc-opt %s --otc-fuse-rms-norm --split-input-file | FileCheck %s

// LLaMA's export: pow, mean over the last dim, + eps, sqrt, 1 / s, x * r.
// CHECK-LABEL: func.func @llama
// CHECK-NEXT: %[[Y:.*]] = otc.normalize %arg0 {axis = 2 : i64, center = false, epsilon = 9.9999999747524271E-7 : f64} : tensor<2x4x8xf32>
// CHECK-NEXT: %[[W:.*]] = otc.mul %[[Y]], %arg1
// CHECK-NEXT: return %[[W]]
func.func @llama(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %two = otc.constant dense<2.0> : tensor<f32>
  %eps = otc.constant dense<1.0e-6> : tensor<f32>
  %one = otc.constant dense<1.0> : tensor<f32>
  %sq = otc.pow %x {exponent = 2.0 : f64} : tensor<2x4x8xf32>
  %m = otc.reduce_mean %sq [2] {keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %a = otc.add %m, %eps : tensor<2x4x1xf32>, tensor<f32> -> tensor<2x4x1xf32>
  %s = otc.sqrt %a : tensor<2x4x1xf32>
  %r = otc.div %one, %s : tensor<f32>, tensor<2x4x1xf32> -> tensor<2x4x1xf32>
  %n = otc.mul %x, %r : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %y = otc.mul %n, %w : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// The other spellings: x * x, eps on the left, reciprocal, r * x; and
// x / s over the two trailing dims.
// CHECK-LABEL: func.func @spellings
// CHECK: otc.normalize %arg0 {axis = 1 : i64, center = false, epsilon = 5.000000e-01 : f64}
// CHECK: otc.normalize %arg0 {axis = 0 : i64, center = false, epsilon = 0.000000e+00 : f64}
// CHECK-NOT: otc.sqrt
func.func @spellings(%x: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %eps = otc.constant dense<0.5> : tensor<f32>
  %zero = otc.constant dense<0.0> : tensor<f32>
  %sq = otc.mul %x, %x : tensor<3x5xf32>, tensor<3x5xf32> -> tensor<3x5xf32>
  %m = otc.reduce_mean %sq [1] {keepdims = true} : tensor<3x5xf32> -> tensor<3x1xf32>
  %a = otc.add %eps, %m : tensor<f32>, tensor<3x1xf32> -> tensor<3x1xf32>
  %s = otc.sqrt %a : tensor<3x1xf32>
  %r = otc.reciprocal %s : tensor<3x1xf32>
  %y = otc.mul %r, %x : tensor<3x1xf32>, tensor<3x5xf32> -> tensor<3x5xf32>
  %m2 = otc.reduce_mean %sq [0, 1] {keepdims = true} : tensor<3x5xf32> -> tensor<1x1xf32>
  %a2 = otc.add %m2, %zero : tensor<1x1xf32>, tensor<f32> -> tensor<1x1xf32>
  %s2 = otc.sqrt %a2 : tensor<1x1xf32>
  %y2 = otc.div %x, %s2 : tensor<3x5xf32>, tensor<1x1xf32> -> tensor<3x5xf32>
  return %y, %y2 : tensor<3x5xf32>, tensor<3x5xf32>
}

// -----

// Left alone: a mean over a leading dim, a square of another value, a
// run-time epsilon.
// CHECK-LABEL: func.func @not_rms
// CHECK-NOT: otc.normalize
func.func @not_rms(%x: tensor<3x5xf32>, %z: tensor<3x5xf32>, %e: tensor<3x1xf32>)
    -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>) {
  %eps = otc.constant dense<0.5> : tensor<f32>
  %sq = otc.mul %x, %x : tensor<3x5xf32>, tensor<3x5xf32> -> tensor<3x5xf32>
  %lead = otc.reduce_mean %sq [0] {keepdims = true} : tensor<3x5xf32> -> tensor<1x5xf32>
  %la = otc.add %lead, %eps : tensor<1x5xf32>, tensor<f32> -> tensor<1x5xf32>
  %ls = otc.sqrt %la : tensor<1x5xf32>
  %y1 = otc.div %x, %ls : tensor<3x5xf32>, tensor<1x5xf32> -> tensor<3x5xf32>
  %m = otc.reduce_mean %sq [1] {keepdims = true} : tensor<3x5xf32> -> tensor<3x1xf32>
  %a = otc.add %m, %eps : tensor<3x1xf32>, tensor<f32> -> tensor<3x1xf32>
  %s = otc.sqrt %a : tensor<3x1xf32>
  %y2 = otc.div %z, %s : tensor<3x5xf32>, tensor<3x1xf32> -> tensor<3x5xf32>
  %ae = otc.add %m, %e : tensor<3x1xf32>, tensor<3x1xf32> -> tensor<3x1xf32>
  %se = otc.sqrt %ae : tensor<3x1xf32>
  %y3 = otc.div %x, %se : tensor<3x5xf32>, tensor<3x1xf32> -> tensor<3x5xf32>
  return %y1, %y2, %y3 : tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>
}
