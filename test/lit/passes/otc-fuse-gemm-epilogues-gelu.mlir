// RUN: otc-opt %s --otc-fuse-gemm-epilogues="after-autodiff=true" --split-input-file | FileCheck %s
// RUN: otc-opt %s --otc-fuse-gemm-epilogues --split-input-file | FileCheck %s --check-prefix=OFF

// The tanh GELU of a biased gemm, through the reshape back to 3-D: one
// gemm_gelu; the preactivation takes the gemm's other use (gelu_grad).
// CHECK-LABEL: func.func @gelu_bias
// CHECK: %[[Y:.*]], %[[P:.*]] = otc.gemm_gelu %arg0, %arg1, %arg2 {trans_b = true} : (tensor<6x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> (tensor<6x16xf32>, tensor<6x16xf32>)
// CHECK-NEXT: %[[R:.*]] = otc.reshape %[[P]] : tensor<6x16xf32> -> tensor<2x3x16xf32>
// CHECK-NEXT: %[[Y3:.*]] = otc.reshape %[[Y]] : tensor<6x16xf32> -> tensor<2x3x16xf32>
// CHECK-NEXT: %[[D:.*]] = otc.gelu_grad %arg3, %[[R]] {approximate = 1 : i32}
// CHECK-NEXT: return %[[Y3]], %[[D]]
// OFF-LABEL: func.func @gelu_bias
// OFF-NOT: otc.gemm_gelu
func.func @gelu_bias(%x: tensor<6x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %dy: tensor<2x3x16xf32>)
    -> (tensor<2x3x16xf32>, tensor<2x3x16xf32>) {
  %g = otc.gemm %x, %w, %b {trans_b = true} : (tensor<6x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<6x16xf32>
  %r = otc.reshape %g : tensor<6x16xf32> -> tensor<2x3x16xf32>
  %y = otc.gelu %r {approximate = 1 : i32} : tensor<2x3x16xf32>
  %d = otc.gelu_grad %dy, %r {approximate = 1 : i32} : tensor<2x3x16xf32>
  return %y, %d : tensor<2x3x16xf32>, tensor<2x3x16xf32>
}

// -----

// Without a bias, and a recomputed copy of the GELU: the first is fused,
// the copy reads the preactivation.
// CHECK-LABEL: func.func @gelu_copy
// CHECK: %[[Y:.*]], %[[P:.*]] = otc.gemm_gelu %arg0, %arg1 : (tensor<6x8xbf16>, tensor<8x16xbf16>) -> (tensor<6x16xbf16>, tensor<6x16xbf16>)
// CHECK-NEXT: %[[C:.*]] = otc.gelu %[[P]] {approximate = 1 : i32}
// CHECK-NEXT: return %[[Y]], %[[C]]
func.func @gelu_copy(%x: tensor<6x8xbf16>, %w: tensor<8x16xbf16>) -> (tensor<6x16xbf16>, tensor<6x16xbf16>) {
  %g = otc.gemm %x, %w : (tensor<6x8xbf16>, tensor<8x16xbf16>) -> tensor<6x16xbf16>
  %y = otc.gelu %g {approximate = 1 : i32} : tensor<6x16xbf16>
  %c = otc.gelu %g {approximate = 1 : i32} : tensor<6x16xbf16>
  return %y, %c : tensor<6x16xbf16>, tensor<6x16xbf16>
}

// -----

// Left alone: the exact GELU (no cuBLASLt form), and a gemm with a full C.
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: otc.gemm_gelu
// CHECK-COUNT-2: otc.gelu
func.func @unfused(%x: tensor<6x8xf32>, %w: tensor<8x16xf32>, %c: tensor<6x16xf32>) -> (tensor<6x16xf32>, tensor<6x16xf32>) {
  %g = otc.gemm %x, %w : (tensor<6x8xf32>, tensor<8x16xf32>) -> tensor<6x16xf32>
  %y = otc.gelu %g {approximate = 0 : i32} : tensor<6x16xf32>
  %g2 = otc.gemm %x, %w, %c : (tensor<6x8xf32>, tensor<8x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  %y2 = otc.gelu %g2 {approximate = 1 : i32} : tensor<6x16xf32>
  return %y, %y2 : tensor<6x16xf32>, tensor<6x16xf32>
}

// -----

// The backward: the tanh GELU's gradient of a gemm's result (the next
// Linear's input gradient, through reshapes) is that gemm's DGELU epilogue,
// reading the preactivation reshaped to the rows.
// CHECK-LABEL: func.func @dgelu
// CHECK: %[[P:.*]] = otc.reshape %arg2 : tensor<2x3x16xf32> -> tensor<6x16xf32>
// CHECK-NEXT: %[[D:.*]] = otc.gemm_dgelu %arg0, %arg1, %[[P]] {trans_b = true} : (tensor<6x4xf32>, tensor<16x4xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
// CHECK-NEXT: %[[R:.*]] = otc.reshape %[[D]] : tensor<6x16xf32> -> tensor<2x3x16xf32>
// CHECK-NEXT: return %[[R]]
// OFF-LABEL: func.func @dgelu
// OFF-NOT: otc.gemm_dgelu
func.func @dgelu(%dy: tensor<6x4xf32>, %w: tensor<16x4xf32>, %pre: tensor<2x3x16xf32>, %y: tensor<2x3x16xf32>) -> tensor<2x3x16xf32> {
  %g = otc.gemm %dy, %w {trans_b = true} : (tensor<6x4xf32>, tensor<16x4xf32>) -> tensor<6x16xf32>
  %r = otc.reshape %g : tensor<6x16xf32> -> tensor<2x3x16xf32>
  %d = otc.gelu_grad %r, %pre output %y {approximate = 1 : i32} : tensor<2x3x16xf32>
  return %d : tensor<2x3x16xf32>
}

// -----

// Left alone: the exact form's gradient, and a gemm result used twice.
// CHECK-LABEL: func.func @dgelu_unfused
// CHECK-NOT: otc.gemm_dgelu
// CHECK-COUNT-2: otc.gelu_grad
func.func @dgelu_unfused(%dy: tensor<6x4xf32>, %w: tensor<4x16xf32>, %pre: tensor<6x16xf32>)
    -> (tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>) {
  %g = otc.gemm %dy, %w : (tensor<6x4xf32>, tensor<4x16xf32>) -> tensor<6x16xf32>
  %d = otc.gelu_grad %g, %pre {approximate = 0 : i32} : tensor<6x16xf32>
  %g2 = otc.gemm %dy, %w : (tensor<6x4xf32>, tensor<4x16xf32>) -> tensor<6x16xf32>
  %d2 = otc.gelu_grad %g2, %pre {approximate = 1 : i32} : tensor<6x16xf32>
  return %d, %d2, %g2 : tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>
}
