// RUN: otc-opt %s --otc-grad-accumulation | FileCheck %s

// Each gradient result is accumulated into a new buffer argument tied to it;
// one i1 argument says whether this is the first micro-batch of the window.
// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[G:[^:]*]]: tensor<3x4xf32> {otc.grad_of = 0 : i64}
// CHECK-SAME: %[[BUF:[^:]*]]: tensor<3x4xf32> {otc.grad_buffer = 0 : i64}
// CHECK-SAME: %[[FIRST:[^:]*]]: i1 {otc.first_micro_batch}
// CHECK-SAME: -> (tensor<f32> {otc.loss}, tensor<3x4xf32> {otc.grad_of = 0 : i64, otc.tied_arg = 2 : i64})
// CHECK: %[[ACC:.*]] = otc.accumulate %[[BUF]], %[[G]], %[[FIRST]] : tensor<3x4xf32>
// CHECK: return %{{.*}}, %[[ACC]]
func.func @step(%l: tensor<f32>, %g: tensor<3x4xf32> {otc.grad_of = 0 : i64})
    -> (tensor<f32> {otc.loss}, tensor<3x4xf32> {otc.grad_of = 0 : i64}) {
  return %l, %g : tensor<f32>, tensor<3x4xf32>
}
