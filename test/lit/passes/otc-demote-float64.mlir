// RUN: otc-opt %s --otc-demote-float64 --canonicalize --split-input-file | FileCheck %s

// LongT5's local attention mask as torch 1.13 exports it: a Where of two
// float64 constants on a run-time mask, added to a value cast to float64,
// cast back. Everything runs in float32; the casts fold away.
// CHECK-LABEL: func.func @mask
// CHECK-NOT: f64
// CHECK-DAG: otc.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: otc.constant dense<-1.000000e+10> : tensor<f32>
// CHECK: %[[W:.*]] = otc.where %{{.*}} : tensor<2x4xi1>, tensor<f32>, tensor<f32> -> tensor<2x4xf32>
// CHECK: %[[T:.*]] = otc.transpose %[[W]] [1, 0] : tensor<2x4xf32> -> tensor<4x2xf32>
// CHECK: %[[S:.*]] = otc.add %[[T]], %arg1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
// CHECK: return %[[S]]
func.func @mask(%m: tensor<2x4xi1>, %x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %zero = otc.constant dense<0.0> : tensor<f64>
  %big = otc.constant dense<-1.0e+10> : tensor<f64>
  %w = otc.where %m, %zero, %big : tensor<2x4xi1>, tensor<f64>, tensor<f64> -> tensor<2x4xf64>
  %t = otc.transpose %w [1, 0] : tensor<2x4xf64> -> tensor<4x2xf64>
  %xd = otc.cast %x : tensor<4x2xf32> -> tensor<4x2xf64>
  %s = otc.add %t, %xd : tensor<4x2xf64>, tensor<4x2xf64> -> tensor<4x2xf64>
  %y = otc.cast %s : tensor<4x2xf64> -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// A float64 model (its arguments float64) is left alone.
// CHECK-LABEL: func.func @float64_model
// CHECK: otc.add %arg0, %{{.*}} : tensor<3xf64>, tensor<f64> -> tensor<3xf64>
func.func @float64_model(%x: tensor<3xf64>) -> tensor<3xf64> {
  %c = otc.constant dense<0.5> : tensor<f64>
  %y = otc.add %x, %c : tensor<3xf64>, tensor<f64> -> tensor<3xf64>
  return %y : tensor<3xf64>
}

// -----

// A float64 value past float32's range becomes the largest float32 of its
// sign, not an infinity (a mask's product with 0 would then be NaN); a
// splat stays a splat.
// CHECK-LABEL: func.func @beyond_float32
// CHECK: otc.constant dense<-3.40282347E+38> : tensor<2x2xf32>
func.func @beyond_float32(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %fill = otc.constant dense<-1.0e+40> : tensor<2x2xf64>
  %xd = otc.cast %x : tensor<2x2xf32> -> tensor<2x2xf64>
  %s = otc.add %xd, %fill : tensor<2x2xf64>, tensor<2x2xf64> -> tensor<2x2xf64>
  %y = otc.cast %s : tensor<2x2xf64> -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}
