// RUN: otc-opt %s --otc-insert-lora="rank=2 alpha=4 targets=^q" --split-input-file --verify-diagnostics | FileCheck %s
// RUN: otc-opt %s --otc-insert-lora="rank=2 alpha=4 targets=^q dropout=0.1" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=DROP

// A Linear as PyTorch exports it (x · Wᵀ, W stored [out, in]) matched by
// name gets A [2, 8] and B [16, 2] and the term ((x·Aᵀ)·Bᵀ)·(4/2); every
// other parameter, adapted or not, is frozen (no otc.trainable).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %arg1: tensor<16x8xf32> {otc.param = "q.weight"}
// CHECK-SAME: %arg2: tensor<16xf32> {otc.param = "bias"}
// CHECK-SAME: %arg3: tensor<2x8xf32> {otc.lora_base = "q.weight", otc.lora_init = "kaiming_uniform", otc.lora_scale = 2.000000e+00 : f64, otc.lora_transposed = true, otc.param = "q.weight.lora_A", otc.trainable}
// CHECK-SAME: %arg4: tensor<16x2xf32> {otc.lora_base = "q.weight", otc.lora_init = "zeros", otc.lora_scale = 2.000000e+00 : f64, otc.lora_transposed = true, otc.param = "q.weight.lora_B", otc.trainable}
// CHECK: %[[Y:.*]] = otc.matmul %arg0, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK: %[[AT:.*]] = otc.transpose %arg3 [1, 0] : tensor<2x8xf32> -> tensor<8x2xf32>
// CHECK: %[[XA:.*]] = otc.matmul %arg0, %[[AT]] : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
// CHECK: %[[BT:.*]] = otc.transpose %arg4 [1, 0] : tensor<16x2xf32> -> tensor<2x16xf32>
// CHECK: %[[XAB:.*]] = otc.matmul %[[XA]], %[[BT]] : tensor<4x2xf32>, tensor<2x16xf32> -> tensor<4x16xf32>
// CHECK: %[[S:.*]] = otc.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[T:.*]] = otc.mul %[[XAB]], %[[S]]
// CHECK: %[[Y2:.*]] = otc.add %[[Y]], %[[T]]
// CHECK: otc.add %[[Y2]], %arg2
// With dropout (PEFT's lora_dropout) the adapter reads dropped x and the
// base product x itself; the stream is FNV-1a("q.weight.lora_dropout").
// DROP-LABEL: func.func @train_step
// DROP: otc.matmul %arg0, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>
// DROP: %[[D:.*]], %{{.*}} = otc.dropout %arg0 {ratio = 1.000000e-01 : f64, stream = 223267152 : i64}
// DROP: otc.matmul %[[D]], %{{.*}} : tensor<4x8xf32>, tensor<8x2xf32>
func.func @train_step(%x: tensor<4x8xf32> {otc.input = "x"},
                      %w: tensor<16x8xf32> {otc.param = "q.weight", otc.trainable},
                      %b: tensor<16xf32> {otc.param = "bias", otc.trainable}) -> (tensor<f32> {otc.loss}) {
  %wt = otc.transpose %w [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = otc.matmul %x, %wt : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %z = otc.add %y, %b : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %l = otc.reduce_mean %z [0, 1] : tensor<4x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A weight used as stored ([in, out]) is adapted too, its merge transposed.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: otc.lora_transposed = false, otc.param = "qw.lora_A"
// CHECK: otc.matmul %arg0, %arg1 : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
func.func @train_step(%x: tensor<4x8xf32> {otc.input = "x"},
                      %w: tensor<8x16xf32> {otc.param = "qw", otc.trainable}) -> (tensor<f32> {otc.loss}) {
  %y = otc.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %l = otc.reduce_mean %y [0, 1] : tensor<4x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A pattern that matches no weight of a product is an error.
// expected-error @+1 {{--lora-targets '^q' matches no trained weight of a matrix product}}
func.func @train_step(%x: tensor<4x8xf32> {otc.input = "x"},
                      %w: tensor<8x16xf32> {otc.param = "k", otc.trainable}) -> (tensor<f32> {otc.loss}) {
  %y = otc.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %l = otc.reduce_mean %y [0, 1] : tensor<4x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}
