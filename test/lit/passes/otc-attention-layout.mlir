// RUN: otc-opt %s --otc-attention-layout --split-input-file | FileCheck %s

// GPT's attention: q, k and v transposed from [B, T, H, D], the result
// transposed back. All four transposes go; the statistics stay [B, H, T, 2].
// CHECK-LABEL: func.func @gpt
// CHECK-NEXT: %[[Y:result[_0-9]*]], %[[S:stats[_0-9]*]] = otc.attention %arg0, %arg1, %arg2 {causal = true, layout = 1 : i32, scale = 2.500000e-01 : f64} : tensor<2x8x4x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16> -> tensor<2x8x4x16xbf16>, tensor<2x4x8x2xf32>
// CHECK-NEXT: return %[[Y]], %[[S]]
func.func @gpt(%x: tensor<2x8x4x16xbf16>, %xk: tensor<2x8x2x16xbf16>, %xv: tensor<2x8x2x16xbf16>)
    -> (tensor<2x8x4x16xbf16>, tensor<2x4x8x2xf32>) {
  %q = otc.transpose %x [0, 2, 1, 3] : tensor<2x8x4x16xbf16> -> tensor<2x4x8x16xbf16>
  %k = otc.transpose %xk [0, 2, 1, 3] : tensor<2x8x2x16xbf16> -> tensor<2x2x8x16xbf16>
  %v = otc.transpose %xv [0, 2, 1, 3] : tensor<2x8x2x16xbf16> -> tensor<2x2x8x16xbf16>
  %o, %s = otc.attention %q, %k, %v {scale = 0.25 : f64, causal = true}
      : tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>
      -> tensor<2x4x8x16xbf16>, tensor<2x4x8x2xf32>
  %y = otc.transpose %o [0, 2, 1, 3] : tensor<2x4x8x16xbf16> -> tensor<2x8x4x16xbf16>
  return %y, %s : tensor<2x8x4x16xbf16>, tensor<2x4x8x2xf32>
}

// -----

// A mask, and a reader of the result that wants [B, H, T, D]: it gets one
// transpose of the new result.
// CHECK-LABEL: func.func @other_reader
// CHECK-NEXT: %[[Y:result[_0-9]*]], %{{.*}} = otc.attention %arg0, %arg0, %arg0 mask %arg1 {layout = 1 : i32, scale = 1.000000e+00 : f64}
// CHECK-NEXT: %[[B:.*]] = otc.transpose %[[Y]] [0, 2, 1, 3] : tensor<1x3x2x4xf32> -> tensor<1x2x3x4xf32>
// CHECK-NEXT: %[[E:.*]] = otc.exp %[[B]]
// CHECK-NEXT: return %[[Y]], %[[E]]
func.func @other_reader(%x: tensor<1x3x2x4xf32>, %m: tensor<1x1x3x3xf32>)
    -> (tensor<1x3x2x4xf32>, tensor<1x2x3x4xf32>) {
  %q = otc.transpose %x [0, 2, 1, 3] : tensor<1x3x2x4xf32> -> tensor<1x2x3x4xf32>
  %o, %s = otc.attention %q, %q, %q mask %m {scale = 1.0 : f64}
      : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x1x3x3xf32>
      -> tensor<1x2x3x4xf32>, tensor<1x2x3x2xf32>
  %y = otc.transpose %o [0, 2, 1, 3] : tensor<1x2x3x4xf32> -> tensor<1x3x2x4xf32>
  %e = otc.exp %o : tensor<1x2x3x4xf32>
  return %y, %e : tensor<1x3x2x4xf32>, tensor<1x2x3x4xf32>
}

// -----

// Left alone: a key already [B, H, S, D], and another permutation.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: layout
func.func @left_alone(%x: tensor<1x3x2x4xf32>, %k: tensor<1x2x3x4xf32>, %w: tensor<1x2x4x3xf32>)
    -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) {
  %q = otc.transpose %x [0, 2, 1, 3] : tensor<1x3x2x4xf32> -> tensor<1x2x3x4xf32>
  %o, %s = otc.attention %q, %k, %q {scale = 1.0 : f64}
      : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
      -> tensor<1x2x3x4xf32>, tensor<1x2x3x2xf32>
  %p = otc.transpose %w [0, 1, 3, 2] : tensor<1x2x4x3xf32> -> tensor<1x2x3x4xf32>
  %o2, %s2 = otc.attention %p, %p, %p {scale = 1.0 : f64}
      : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
      -> tensor<1x2x3x4xf32>, tensor<1x2x3x2xf32>
  return %o, %o2 : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}
