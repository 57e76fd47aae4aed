// RUN: otc-opt %s --otc-merge-slice-grads --split-input-file | FileCheck %s

// GPT-2's q, k and v: three pieces tiling the last axis, summed in any
// order, become one concat in order of their starts.
// CHECK-LABEL: func.func @qkv
// CHECK-NEXT: %[[C:.*]] = otc.concat %arg0, %arg1, %arg2 {axis = 2 : i64} : tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16> -> tensor<2x4x24xbf16>
// CHECK-NEXT: return %[[C]]
func.func @qkv(%dq: tensor<2x4x8xbf16>, %dk: tensor<2x4x8xbf16>, %dv: tensor<2x4x8xbf16>) -> tensor<2x4x24xbf16> {
  %v = otc.slice_grad %dv [0, 0, 16] [1, 1, 1] : tensor<2x4x8xbf16> -> tensor<2x4x24xbf16>
  %k = otc.slice_grad %dk [0, 0, 8] [1, 1, 1] : tensor<2x4x8xbf16> -> tensor<2x4x24xbf16>
  %s = otc.add %v, %k : tensor<2x4x24xbf16>, tensor<2x4x24xbf16> -> tensor<2x4x24xbf16>
  %q = otc.slice_grad %dq [0, 0, 0] [1, 1, 1] : tensor<2x4x8xbf16> -> tensor<2x4x24xbf16>
  %t = otc.add %s, %q : tensor<2x4x24xbf16>, tensor<2x4x24xbf16> -> tensor<2x4x24xbf16>
  return %t : tensor<2x4x24xbf16>
}

// -----

// Gaps get zeros; pieces of unequal sizes along the first axis.
// CHECK-LABEL: func.func @gaps
// CHECK-DAG: %[[Z1:.*]] = otc.constant dense<0.000000e+00> : tensor<1x6xf32>
// CHECK-DAG: %[[Z3:.*]] = otc.constant dense<0.000000e+00> : tensor<3x6xf32>
// CHECK: %[[C:.*]] = otc.concat %[[Z1]], %arg0, %[[Z3]], %arg1 {axis = 0 : i64} : tensor<1x6xf32>, tensor<2x6xf32>, tensor<3x6xf32>, tensor<1x6xf32> -> tensor<7x6xf32>
// CHECK-NEXT: return %[[C]]
func.func @gaps(%a: tensor<2x6xf32>, %b: tensor<1x6xf32>) -> tensor<7x6xf32> {
  %pa = otc.slice_grad %a [1, 0] [1, 1] : tensor<2x6xf32> -> tensor<7x6xf32>
  %pb = otc.slice_grad %b [6, 0] [1, 1] : tensor<1x6xf32> -> tensor<7x6xf32>
  %t = otc.add %pb, %pa : tensor<7x6xf32>, tensor<7x6xf32> -> tensor<7x6xf32>
  return %t : tensor<7x6xf32>
}

// -----

// Left alone: a sum with a term that is no piece (the concat would change
// the order of its additions), and overlapping pieces.
// CHECK-LABEL: func.func @others_and_overlap
// CHECK-NOT: otc.concat
func.func @others_and_overlap(%a: tensor<2x6xf32>, %b: tensor<1x6xf32>, %o: tensor<7x6xf32>,
                              %c: tensor<3x2xf32>, %d: tensor<2x2xf32>)
    -> (tensor<7x6xf32>, tensor<4x2xf32>) {
  %pa = otc.slice_grad %a [1, 0] [1, 1] : tensor<2x6xf32> -> tensor<7x6xf32>
  %s = otc.add %pa, %o : tensor<7x6xf32>, tensor<7x6xf32> -> tensor<7x6xf32>
  %pb = otc.slice_grad %b [6, 0] [1, 1] : tensor<1x6xf32> -> tensor<7x6xf32>
  %t = otc.add %pb, %s : tensor<7x6xf32>, tensor<7x6xf32> -> tensor<7x6xf32>
  %pc = otc.slice_grad %c [0, 0] [1, 1] : tensor<3x2xf32> -> tensor<4x2xf32>
  %pd = otc.slice_grad %d [1, 0] [1, 1] : tensor<2x2xf32> -> tensor<4x2xf32>
  %u = otc.add %pc, %pd : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  return %t, %u : tensor<7x6xf32>, tensor<4x2xf32>
}

// -----

// Left alone: a stepped piece, pieces cut along two axes, a piece with
// another use.
// CHECK-LABEL: func.func @not_pieces
// CHECK-NOT: otc.concat
func.func @not_pieces(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>, %c: tensor<1x2xf32>)
    -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x4xf32>) {
  // Stepped.
  %s1 = otc.slice_grad %a [0, 0] [2, 1] : tensor<2x2xf32> -> tensor<4x2xf32>
  %s2 = otc.slice_grad %c [1, 0] [1, 1] : tensor<1x2xf32> -> tensor<4x2xf32>
  %t1 = otc.add %s1, %s2 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  // A piece read twice.
  %s4 = otc.slice_grad %b [0, 0] [1, 1] : tensor<2x2xf32> -> tensor<4x2xf32>
  %s5 = otc.slice_grad %c [3, 0] [1, 1] : tensor<1x2xf32> -> tensor<4x2xf32>
  %t2 = otc.add %s4, %s5 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  %t3 = otc.add %t2, %s4 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  // Cut along two axes.
  %u = otc.slice_grad %a [0, 0] [1, 1] : tensor<2x2xf32> -> tensor<4x4xf32>
  %w = otc.slice_grad %c [2, 2] [1, 1] : tensor<1x2xf32> -> tensor<4x4xf32>
  %x = otc.add %u, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %t1, %t3, %x : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x4xf32>
}
