// RUN: otc-opt %s --otc-autodiff --otc-recompute=policy=selective | FileCheck %s
// RUN: otc-opt %s --otc-autodiff --otc-recompute=policy=none | FileCheck %s --check-prefix=NONE

// A small transformer-style block: LayerNorm, a GEMM, GELU (as PyTorch
// exports it), a GEMM, a residual add. Under `selective` the backward
// recomputes the cheap ops (normalize, GELU's chain) just before their first
// backward reader, from what it keeps anyway (the input, the first GEMM's
// result); the GEMMs are never recomputed.
// CHECK-LABEL: func.func @block
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32> {otc.input = "x"}
// CHECK-SAME: %[[SEED:[^:]*]]: tensor<f32> {otc.loss_seed}
// Forward, as imported:
// CHECK: %[[N:.*]] = otc.normalize %[[X]]
// CHECK: %[[H:.*]] = otc.gemm %[[N]], %{{.*}} {trans_b = true}
// CHECK: %[[D:.*]] = otc.div %[[H]]
// CHECK: %[[E:.*]] = otc.erf %[[D]]
// CHECK: otc.gemm %{{.*}}, %{{.*}} {trans_b = true}
// CHECK: otc.reduce_mean
// Backward: the first reader of GELU's output (the second GEMM's weight
// gradient) gets the chain recomputed from %H just before it ...
// CHECK: otc.mul %[[SEED]]
// CHECK: %[[D2:.*]] = otc.div %[[H]], %{{.*}} {otc.recomputed}
// CHECK-NEXT: %[[E2:.*]] = otc.erf %[[D2]] {otc.recomputed}
// CHECK-NEXT: %[[A2:.*]] = otc.add %[[E2]], %{{.*}} {otc.recomputed}
// CHECK-NEXT: %[[M2:.*]] = otc.mul %[[H]], %[[A2]] {otc.recomputed}
// CHECK-NEXT: %[[G2:.*]] = otc.mul %[[M2]], %{{.*}} {otc.recomputed}
// CHECK-NEXT: otc.gemm %{{.*}}, %[[G2]] {trans_a = true}
// ... and erf's gradient reads the recomputed %D2, never %D.
// CHECK-NOT: %[[D]]{{[^0-9]}}
// CHECK-NOT: %[[E]]{{[^0-9]}}
// The normalize is recomputed from %X where the first GEMM's weight
// gradient reads it.
// CHECK: %[[N2:.*]] = otc.normalize %[[X]] {{.*}}otc.recomputed
// CHECK: otc.gemm %{{.*}}, %[[N2]] {trans_a = true}
// CHECK: return
// NONE-LABEL: func.func @block
// NONE-NOT: otc.recomputed
func.func @block(%x: tensor<4x8xf32> {otc.input = "x"},
                 %w1: tensor<16x8xf32> {otc.param = "w1", otc.trainable},
                 %w2: tensor<8x16xf32> {otc.param = "w2", otc.trainable}) -> (tensor<f32> {otc.loss}) {
  %n = otc.normalize %x {axis = 1 : i64, center = true, epsilon = 1.0e-5 : f64} : tensor<4x8xf32>
  %h = otc.gemm %n, %w1 {trans_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %sqrt2 = otc.constant dense<1.41421354> : tensor<f32>
  %one = otc.constant dense<1.0> : tensor<f32>
  %half = otc.constant dense<0.5> : tensor<f32>
  %d = otc.div %h, %sqrt2 : tensor<4x16xf32>, tensor<f32> -> tensor<4x16xf32>
  %e = otc.erf %d : tensor<4x16xf32>
  %a = otc.add %e, %one : tensor<4x16xf32>, tensor<f32> -> tensor<4x16xf32>
  %m = otc.mul %h, %a : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %g = otc.mul %m, %half : tensor<4x16xf32>, tensor<f32> -> tensor<4x16xf32>
  %y = otc.gemm %g, %w2 {trans_b = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r = otc.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %l = otc.reduce_mean %r [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
