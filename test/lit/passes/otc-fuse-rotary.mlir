// RUN: otc-opt %s --otc-fuse-rotary --split-input-file | FileCheck %s

// LLaMA's export: x * cos + cat(-x2, x1) * sin, cos and sin broadcast.
// CHECK-LABEL: func.func @llama
// CHECK-NEXT: %[[Y:.*]] = otc.rotary %arg0, %arg1, %arg2 : tensor<2x4x6x8xf32>, tensor<1x1x6x8xf32>, tensor<1x1x6x8xf32> -> tensor<2x4x6x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @llama(%x: tensor<2x4x6x8xf32>, %cos: tensor<1x1x6x8xf32>, %sin: tensor<1x1x6x8xf32>) -> tensor<2x4x6x8xf32> {
  %a = otc.mul %x, %cos : tensor<2x4x6x8xf32>, tensor<1x1x6x8xf32> -> tensor<2x4x6x8xf32>
  %x1 = otc.slice %x [0, 0, 0, 0] [1, 1, 1, 1] : tensor<2x4x6x8xf32> -> tensor<2x4x6x4xf32>
  %x2 = otc.slice %x [0, 0, 0, 4] [1, 1, 1, 1] : tensor<2x4x6x8xf32> -> tensor<2x4x6x4xf32>
  %n = otc.neg %x2 : tensor<2x4x6x4xf32>
  %r = otc.concat %n, %x1 {axis = 3 : i64} : tensor<2x4x6x4xf32>, tensor<2x4x6x4xf32> -> tensor<2x4x6x8xf32>
  %b = otc.mul %r, %sin : tensor<2x4x6x8xf32>, tensor<1x1x6x8xf32> -> tensor<2x4x6x8xf32>
  %y = otc.add %a, %b : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  return %y : tensor<2x4x6x8xf32>
}

// -----

// Operands in the other orders: cos * x, sin * rotated, rotated term first.
// CHECK-LABEL: func.func @swapped
// CHECK-NEXT: otc.rotary %arg0, %arg1, %arg2
// CHECK-NEXT: return
func.func @swapped(%x: tensor<6x8xf32>, %cos: tensor<6x8xf32>, %sin: tensor<8xf32>) -> tensor<6x8xf32> {
  %x1 = otc.slice %x [0, 0] [1, 1] : tensor<6x8xf32> -> tensor<6x4xf32>
  %x2 = otc.slice %x [0, 4] [1, 1] : tensor<6x8xf32> -> tensor<6x4xf32>
  %n = otc.neg %x2 : tensor<6x4xf32>
  %r = otc.concat %n, %x1 {axis = 1 : i64} : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x8xf32>
  %a = otc.mul %cos, %x : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  %b = otc.mul %sin, %r : tensor<8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  %y = otc.add %b, %a : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  return %y : tensor<6x8xf32>
}

// -----

// Not rotate_half: the halves the other way round (the inverse rotation),
// halves of another tensor, and a slice that is not a half.
// CHECK-LABEL: func.func @not_rotary
// CHECK-NOT: otc.rotary
func.func @not_rotary(%x: tensor<6x8xf32>, %z: tensor<6x8xf32>, %cos: tensor<6x8xf32>, %sin: tensor<6x8xf32>)
    -> (tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) {
  %a = otc.mul %x, %cos : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  %x1 = otc.slice %x [0, 0] [1, 1] : tensor<6x8xf32> -> tensor<6x4xf32>
  %x2 = otc.slice %x [0, 4] [1, 1] : tensor<6x8xf32> -> tensor<6x4xf32>
  %n1 = otc.neg %x1 : tensor<6x4xf32>
  %r1 = otc.concat %x2, %n1 {axis = 1 : i64} : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x8xf32>
  %b1 = otc.mul %r1, %sin : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  %y1 = otc.add %a, %b1 : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  %z1 = otc.slice %z [0, 0] [1, 1] : tensor<6x8xf32> -> tensor<6x4xf32>
  %n2 = otc.neg %x2 : tensor<6x4xf32>
  %r2 = otc.concat %n2, %z1 {axis = 1 : i64} : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x8xf32>
  %b2 = otc.mul %r2, %sin : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  %y2 = otc.add %a, %b2 : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  %x3 = otc.slice %x [0, 2] [1, 1] : tensor<6x8xf32> -> tensor<6x4xf32>
  %n3 = otc.neg %x3 : tensor<6x4xf32>
  %r3 = otc.concat %n3, %x1 {axis = 1 : i64} : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x8xf32>
  %b3 = otc.mul %r3, %sin : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  %y3 = otc.add %a, %b3 : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
  return %y1, %y2, %y3 : tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>
}
