// RUN: otc-opt %s --otc-fuse-gemm-epilogues="after-autodiff=true" --split-input-file | FileCheck %s
// Before autodiff (the default) only the bias add fuses: otc.gemm_bias_grad
// has no gradient rule, and a forward graph may hold the same pattern.
// RUN: otc-opt %s --otc-fuse-gemm-epilogues --split-input-file | FileCheck %s --check-prefix=BEFORE
// BEFORE-LABEL: func.func @matmul_bias
// BEFORE: otc.gemm %{{.*}}, %arg1, %arg2
// BEFORE-LABEL: func.func @bias_grad_b
// BEFORE-NOT: otc.gemm_bias_grad
// BEFORE: otc.reduce_sum
// BEFORE-LABEL: func.func @bias_grad_a_widened
// BEFORE-NOT: otc.gemm_bias_grad
// BEFORE: otc.reduce_sum

// PyTorch's Linear on 3-D input: MatMul with the transposed weight stored,
// then Add of the bias (either side). The rows flatten into one gemm.
// CHECK-LABEL: func.func @matmul_bias
// CHECK-NEXT: %[[X:.*]] = otc.reshape %arg0 : tensor<2x3x8xf32> -> tensor<6x8xf32>
// CHECK-NEXT: %[[G:.*]] = otc.gemm %[[X]], %arg1, %arg2 : (tensor<6x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<6x16xf32>
// CHECK-NEXT: %[[Y:.*]] = otc.reshape %[[G]] : tensor<6x16xf32> -> tensor<2x3x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @matmul_bias(%x: tensor<2x3x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<2x3x16xf32> {
  %p = otc.matmul %x, %w : tensor<2x3x8xf32>, tensor<8x16xf32> -> tensor<2x3x16xf32>
  %y = otc.add %b, %p : tensor<16xf32>, tensor<2x3x16xf32> -> tensor<2x3x16xf32>
  return %y : tensor<2x3x16xf32>
}

// -----

// A gemm without C (trans_b: the weight as stored, [N, K]) takes a [1, N]
// bias, reshaped to [N]; its alpha stays.
// CHECK-LABEL: func.func @gemm_bias
// CHECK-NEXT: %[[B:.*]] = otc.reshape %arg2 : tensor<1x16xf32> -> tensor<16xf32>
// CHECK-NEXT: %[[G:.*]] = otc.gemm %arg0, %arg1, %[[B]] {alpha = 5.000000e-01 : f64, trans_b = true}
// CHECK-NEXT: return %[[G]]
func.func @gemm_bias(%x: tensor<6x8xf32>, %w: tensor<16x8xf32>, %b: tensor<1x16xf32>) -> tensor<6x16xf32> {
  %p = otc.gemm %x, %w {trans_b = true, alpha = 0.5 : f64} : (tensor<6x8xf32>, tensor<16x8xf32>) -> tensor<6x16xf32>
  %y = otc.add %p, %b : tensor<6x16xf32>, tensor<1x16xf32> -> tensor<6x16xf32>
  return %y : tensor<6x16xf32>
}

// -----

// Left alone: a product used twice (its value without the bias is needed),
// a per-row [M, 1] addend, a full [M, N] one, a gemm that has C, and a
// batched matmul (its right operand is 3-D).
// CHECK-LABEL: func.func @unfused
// CHECK-COUNT-4: otc.add
// CHECK-NOT: otc.gemm
func.func @unfused(%x: tensor<6x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>,
                   %r: tensor<6x1xf32>, %f: tensor<6x16xf32>,
                   %x3: tensor<2x3x8xf32>, %w3: tensor<2x8x16xf32>)
    -> (tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>, tensor<2x3x16xf32>) {
  %p = otc.matmul %x, %w : tensor<6x8xf32>, tensor<8x16xf32> -> tensor<6x16xf32>
  %y = otc.add %p, %b : tensor<6x16xf32>, tensor<16xf32> -> tensor<6x16xf32>
  %p2 = otc.matmul %x, %w : tensor<6x8xf32>, tensor<8x16xf32> -> tensor<6x16xf32>
  %y2 = otc.add %p2, %r : tensor<6x16xf32>, tensor<6x1xf32> -> tensor<6x16xf32>
  %p3 = otc.matmul %x, %w : tensor<6x8xf32>, tensor<8x16xf32> -> tensor<6x16xf32>
  %y3 = otc.add %p3, %f : tensor<6x16xf32>, tensor<6x16xf32> -> tensor<6x16xf32>
  %p4 = otc.matmul %x3, %w3 : tensor<2x3x8xf32>, tensor<2x8x16xf32> -> tensor<2x3x16xf32>
  %y4 = otc.add %p4, %b : tensor<2x3x16xf32>, tensor<16xf32> -> tensor<2x3x16xf32>
  return %y, %p, %y2, %y3, %y4 : tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>, tensor<2x3x16xf32>
}

// -----

// A Linear's backward (weight [K, N]): the bias gradient sums g over its
// rows, and the weight gradient reads g's rows as op(B). One op reads g once.
// CHECK-LABEL: func.func @bias_grad_b
// CHECK-NEXT: %[[G:.*]] = otc.reshape %arg1 : tensor<2x3x16xf32> -> tensor<6x16xf32>
// CHECK-NEXT: %[[W:.*]], %[[B:.*]] = otc.gemm_bias_grad %arg0, %[[G]] {bias_of = 1 : i32, trans_a = true} : (tensor<6x8xf32>, tensor<6x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>)
// CHECK-NEXT: return %[[B]], %[[W]]
func.func @bias_grad_b(%x: tensor<6x8xf32>, %g: tensor<2x3x16xf32>) -> (tensor<16xf32>, tensor<8x16xf32>) {
  %s = otc.reduce_sum %g [0, 1] {keepdims = true} : tensor<2x3x16xf32> -> tensor<1x1x16xf32>
  %db = otc.reshape %s : tensor<1x1x16xf32> -> tensor<16xf32>
  %g2 = otc.reshape %g : tensor<2x3x16xf32> -> tensor<6x16xf32>
  %dw = otc.gemm %x, %g2 {trans_a = true} : (tensor<6x8xf32>, tensor<6x16xf32>) -> tensor<8x16xf32>
  return %db, %dw : tensor<16xf32>, tensor<8x16xf32>
}

// -----

// Weight [N, K] (Gemm's trans_b): dW = gᵀ x, g as op(A). Under bf16 both
// results were widened to f32: the op makes f32 and the casts go.
// CHECK-LABEL: func.func @bias_grad_a_widened
// CHECK-NEXT: %[[W:.*]], %[[B:.*]] = otc.gemm_bias_grad %arg0, %arg1 {bias_of = 0 : i32, trans_a = true} : (tensor<6x16xbf16>, tensor<6x8xbf16>) -> (tensor<16x8xf32>, tensor<16xf32>)
// CHECK-NOT: otc.cast
// CHECK: return %[[W]], %[[B]]
func.func @bias_grad_a_widened(%g: tensor<6x16xbf16>, %x: tensor<6x8xbf16>) -> (tensor<16x8xf32>, tensor<16xf32>) {
  %dw = otc.gemm %g, %x {trans_a = true} : (tensor<6x16xbf16>, tensor<6x8xbf16>) -> tensor<16x8xbf16>
  %dwf = otc.cast %dw : tensor<16x8xbf16> -> tensor<16x8xf32>
  %s = otc.reduce_sum %g [0] : tensor<6x16xbf16> -> tensor<16xbf16>
  %dbf = otc.cast %s : tensor<16xbf16> -> tensor<16xf32>
  return %dwf, %dbf : tensor<16x8xf32>, tensor<16xf32>
}

// -----

// Left alone: a sum over other axes than the rows, a gemm with alpha, and
// one that contracts over g's columns (an input gradient, g Wᵀ).
// CHECK-LABEL: func.func @bias_grad_unfused
// CHECK-NOT: otc.gemm_bias_grad
// CHECK-COUNT-3: otc.reduce_sum
func.func @bias_grad_unfused(%x: tensor<6x8xf32>, %g: tensor<6x16xf32>, %w: tensor<8x16xf32>)
    -> (tensor<6xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<6x8xf32>, tensor<16xf32>) {
  %s = otc.reduce_sum %g [1] : tensor<6x16xf32> -> tensor<6xf32>
  %dw = otc.gemm %x, %g {trans_a = true, alpha = 2.0 : f64} : (tensor<6x8xf32>, tensor<6x16xf32>) -> tensor<8x16xf32>
  %s2 = otc.reduce_sum %g [0] : tensor<6x16xf32> -> tensor<16xf32>
  %dx = otc.gemm %g, %w {trans_b = true} : (tensor<6x16xf32>, tensor<8x16xf32>) -> tensor<6x8xf32>
  %s3 = otc.reduce_sum %g [0] : tensor<6x16xf32> -> tensor<16xf32>
  return %s, %dw, %s2, %dx, %s3 : tensor<6xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<6x8xf32>, tensor<16xf32>
}
