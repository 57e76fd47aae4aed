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
