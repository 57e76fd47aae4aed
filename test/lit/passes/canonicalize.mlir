// RUN: otc-opt %s --canonicalize | FileCheck %s

// Identity, same-shape reshape and broadcast, and the identity transpose fold
// away; chained reshapes become one.
// CHECK-LABEL: func.func @folds
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT: %[[R:.*]] = otc.reshape %[[X]] : tensor<2x3xf32> -> tensor<6xf32>
// CHECK-NEXT: return %[[X]], %[[R]]
func.func @folds(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<6xf32>) {
  %a = otc.identity %x : tensor<2x3xf32>
  %b = otc.reshape %a : tensor<2x3xf32> -> tensor<2x3xf32>
  %c = otc.broadcast_to %b : tensor<2x3xf32> -> tensor<2x3xf32>
  %d = otc.transpose %c [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  %e = otc.reshape %d : tensor<2x3xf32> -> tensor<3x2xf32>
  %f = otc.reshape %e : tensor<3x2xf32> -> tensor<6xf32>
  return %d, %f : tensor<2x3xf32>, tensor<6xf32>
}

// A matmul with a transposed 2-D right operand (PyTorch's Linear on 3-D
// inputs) is a gemm with trans_b over the flattened rows: no transposed copy.
// CHECK-LABEL: func.func @matmul_of_transpose
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x8xf32>, %[[W:[^:]*]]: tensor<3x8xf32>
// CHECK-NEXT: %[[R:.*]] = otc.reshape %[[X]] : tensor<2x4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[G:.*]] = otc.gemm %[[R]], %[[W]] {trans_b = true} : (tensor<8x8xf32>, tensor<3x8xf32>) -> tensor<8x3xf32>
// CHECK-NEXT: %[[Y:.*]] = otc.reshape %[[G]] : tensor<8x3xf32> -> tensor<2x4x3xf32>
// CHECK-NEXT: return %[[Y]]
func.func @matmul_of_transpose(%x: tensor<2x4x8xf32>, %w: tensor<3x8xf32>) -> tensor<2x4x3xf32> {
  %t = otc.transpose %w [1, 0] : tensor<3x8xf32> -> tensor<8x3xf32>
  %y = otc.matmul %x, %t : tensor<2x4x8xf32>, tensor<8x3xf32> -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}
