// RUN: otc-opt %s --otc-autodiff --split-input-file | FileCheck %s

// The seed is a new argument; each trainable parameter gets a gradient
// result. Gemm's weight gradient is one gemm with flipped transposes and the
// bias gradient sums the rows.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4xf32> {otc.input = "x"}
// CHECK-SAME: %[[W:[^:]*]]: tensor<3x4xf32> {otc.param = "w", otc.trainable}
// CHECK-SAME: %[[B:[^:]*]]: tensor<3xf32> {otc.param = "b", otc.trainable}
// CHECK-SAME: %[[SEED:[^:]*]]: tensor<f32> {otc.loss_seed}
// CHECK-SAME: -> (tensor<f32> {otc.loss}, tensor<3x4xf32> {otc.grad_of = 1 : i64}, tensor<3xf32> {otc.grad_of = 2 : i64})
// CHECK: %[[Y:.*]] = otc.gemm %[[X]], %[[W]], %[[B]]
// CHECK: %[[L:.*]] = otc.reduce_mean %[[Y]]
// CHECK: %[[S:.*]] = otc.mul %[[SEED]], %{{.*}} : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK: %[[DY:.*]] = otc.broadcast_to %{{.*}} : tensor<1x1xf32> -> tensor<2x3xf32>
// CHECK: %[[DW:.*]] = otc.gemm %[[DY]], %[[X]] {trans_a = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK: %[[DB:.*]] = otc.reduce_sum %[[DY]] [0] {keepdims = true}
// CHECK: %[[DB2:.*]] = otc.reshape %[[DB]] : tensor<1x3xf32> -> tensor<3xf32>
// CHECK: return %[[L]], %[[DW]], %[[DB2]]
func.func @linear(%x: tensor<2x4xf32> {otc.input = "x"},
                  %w: tensor<3x4xf32> {otc.param = "w", otc.trainable},
                  %b: tensor<3xf32> {otc.param = "b", otc.trainable}) -> (tensor<f32> {otc.loss}) {
  %y = otc.gemm %x, %w, %b {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %l = otc.reduce_mean %y [0, 1] : tensor<2x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A value used twice gets the sum of both gradients; a frozen parameter and
// the integer labels get none.
// CHECK-LABEL: func.func @fanout
// CHECK-SAME: -> (tensor<f32> {otc.loss}, tensor<2x3xf32> {otc.grad_of = 0 : i64})
// CHECK: %[[G:.*]] = otc.softmax_cross_entropy_grad
// CHECK: %[[M1:.*]] = otc.mul %[[G]], %{{.*}}
// CHECK: %[[M2:.*]] = otc.mul %[[G]], %{{.*}}
// CHECK: %[[SUM:.*]] = otc.add %[[M1]], %[[M2]]
// CHECK: return %{{.*}}, %[[SUM]]
func.func @fanout(%a: tensor<2x3xf32> {otc.param = "a", otc.trainable},
                  %frozen: tensor<2x3xf32> {otc.param = "frozen"},
                  %labels: tensor<2xi64> {otc.input = "labels"}) -> (tensor<f32> {otc.loss}) {
  %sq = otc.mul %a, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %z = otc.add %sq, %frozen : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %l = otc.softmax_cross_entropy %z, %labels : tensor<2x3xf32>, tensor<2xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// relu's gradient reads the ReLU's output, not its input (positive exactly
// where the input is, NaN included, as PyTorch's threshold_backward reads
// it): the output is kept for the next layer anyway, so the input need not
// be kept for the backward.
// CHECK-LABEL: func.func @relu_reads_output
// CHECK: %[[H:.*]] = otc.mul
// CHECK: %[[R:.*]] = otc.relu %[[H]]
// CHECK: otc.relu_grad %{{.*}}, %[[R]]
// CHECK-NOT: otc.relu_grad %{{.*}}, %[[H]]
func.func @relu_reads_output(%w: tensor<4xf32> {otc.param = "w", otc.trainable},
                             %x: tensor<4xf32> {otc.input = "x"}) -> (tensor<f32> {otc.loss}) {
  %h = otc.mul %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %r = otc.relu %h : tensor<4xf32>
  %l = otc.reduce_sum %r [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
