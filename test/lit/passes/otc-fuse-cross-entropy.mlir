// RUN: otc-opt %s --otc-fuse-cross-entropy --split-input-file | FileCheck %s

// As autodiff leaves it: the seed is an argument, so the fused op takes the
// forward's place, with its ignore_index and marks.
// CHECK-LABEL: func.func @fused
// CHECK-NEXT: %[[L:.*]], %[[G:.*]] = otc.softmax_cross_entropy_with_grad %arg2, %arg0, %arg1 {ignore_index = -100 : i64, otc.precision = "f32"} : tensor<f32>, tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>, tensor<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = otc.sqrt
// CHECK-NEXT: return %[[L]], %[[G]], %[[S]]
func.func @fused(%logits: tensor<4x8xf32>, %labels: tensor<4xi64>, %seed: tensor<f32>)
    -> (tensor<f32>, tensor<4x8xf32>, tensor<f32>) {
  %loss = otc.softmax_cross_entropy %logits, %labels {ignore_index = -100 : i64, otc.precision = "f32"}
      : tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>
  %s = otc.sqrt %loss : tensor<f32>
  %g = otc.softmax_cross_entropy_grad %seed, %logits, %labels {ignore_index = -100 : i64}
      : tensor<f32>, tensor<4x8xf32>, tensor<4xi64>
  return %loss, %g, %s : tensor<f32>, tensor<4x8xf32>, tensor<f32>
}

// -----

// A seed computed after the loss: the fused op goes where the gradient was,
// every reader of the loss coming after it.
// CHECK-LABEL: func.func @at_the_gradient
// CHECK-NEXT: %[[SEED:.*]] = otc.mul %arg2, %arg2
// CHECK-NEXT: %[[L:.*]], %[[G:.*]] = otc.softmax_cross_entropy_with_grad %[[SEED]], %arg0, %arg1
// CHECK-NEXT: return %[[L]], %[[G]]
func.func @at_the_gradient(%logits: tensor<4x8xf32>, %labels: tensor<4xi64>, %s: tensor<f32>)
    -> (tensor<f32>, tensor<4x8xf32>) {
  %loss = otc.softmax_cross_entropy %logits, %labels : tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>
  %seed = otc.mul %s, %s : tensor<f32>, tensor<f32> -> tensor<f32>
  %g = otc.softmax_cross_entropy_grad %seed, %logits, %labels : tensor<f32>, tensor<4x8xf32>, tensor<4xi64>
  return %loss, %g : tensor<f32>, tensor<4x8xf32>
}

// -----

// The loss read between the two, with a seed made after it: neither place
// serves, and both ops stay.
// CHECK-LABEL: func.func @read_between
// CHECK: otc.softmax_cross_entropy %arg0
// CHECK: otc.softmax_cross_entropy_grad
// CHECK-NOT: with_grad
func.func @read_between(%logits: tensor<4x8xf32>, %labels: tensor<4xi64>)
    -> (tensor<f32>, tensor<4x8xf32>) {
  %loss = otc.softmax_cross_entropy %logits, %labels : tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>
  %seed = otc.sqrt %loss : tensor<f32>
  %g = otc.softmax_cross_entropy_grad %seed, %logits, %labels : tensor<f32>, tensor<4x8xf32>, tensor<4xi64>
  return %loss, %g : tensor<f32>, tensor<4x8xf32>
}

// -----

// Other logits (recomputed for the backward), other labels or another
// ignore_index: apart.
// CHECK-LABEL: func.func @apart
// CHECK-NOT: with_grad
func.func @apart(%logits: tensor<4x8xf32>, %again: tensor<4x8xf32>, %labels: tensor<4xi64>,
                 %other: tensor<4xi64>, %seed: tensor<f32>)
    -> (tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %loss = otc.softmax_cross_entropy %logits, %labels {ignore_index = 0 : i64}
      : tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>
  %g1 = otc.softmax_cross_entropy_grad %seed, %again, %labels {ignore_index = 0 : i64}
      : tensor<f32>, tensor<4x8xf32>, tensor<4xi64>
  %g2 = otc.softmax_cross_entropy_grad %seed, %logits, %other {ignore_index = 0 : i64}
      : tensor<f32>, tensor<4x8xf32>, tensor<4xi64>
  %g3 = otc.softmax_cross_entropy_grad %seed, %logits, %labels
      : tensor<f32>, tensor<4x8xf32>, tensor<4xi64>
  return %loss, %g1, %g2, %g3 : tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
