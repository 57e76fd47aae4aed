// RUN: otc-opt %s --otc-fuse-layer-norm --split-input-file | FileCheck %s

// LayerNormalization as the importer writes it: normalize, * scale, + bias.
// CHECK-LABEL: func.func @layer_norm
// CHECK-NEXT: %[[Y:result[_0-9]*]], %{{.*}}, %{{.*}} = otc.layer_norm %arg0, %arg1, %arg2 {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x1xf32>
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %n = otc.normalize %x {axis = 2 : i64, epsilon = 1.0e-5 : f64} : tensor<2x4x8xf32>
  %s = otc.mul %n, %w : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %y = otc.add %s, %b : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// RMSNorm's weight on the left, no bias; and a scale and bias with leading
// ones over two normalized dims, in the other operand order, reshaped.
// CHECK-LABEL: func.func @rms_and_leading_ones
// CHECK-NEXT: %[[R:result[_0-9]*]], %{{.*}}, %{{.*}} = otc.layer_norm %arg0, %arg1 {axis = 1 : i64, center = false, epsilon = 9.9999999999999995E-7 : f64} : tensor<3x8xf32>, tensor<8xf32> -> tensor<3x1xf32>
// CHECK-NEXT: %[[W:.*]] = otc.reshape %arg3 : tensor<1x4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[B:.*]] = otc.reshape %arg4 : tensor<1x4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[Y:result[_0-9]*]], %{{.*}}, %{{.*}} = otc.layer_norm %arg2, %[[W]], %[[B]] {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<2x1x1xf32>
// CHECK-NEXT: return %[[R]], %[[Y]]
func.func @rms_and_leading_ones(%x: tensor<3x8xf32>, %g: tensor<8xf32>, %z: tensor<2x4x8xf32>,
                                %w: tensor<1x4x8xf32>, %b: tensor<1x4x8xf32>)
    -> (tensor<3x8xf32>, tensor<2x4x8xf32>) {
  %n = otc.normalize %x {axis = 1 : i64, epsilon = 1.0e-6 : f64, center = false} : tensor<3x8xf32>
  %r = otc.mul %g, %n : tensor<8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  %m = otc.normalize %z {axis = 1 : i64, epsilon = 1.0e-5 : f64} : tensor<2x4x8xf32>
  %s = otc.mul %w, %m : tensor<1x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %y = otc.add %b, %s : tensor<1x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %r, %y : tensor<3x8xf32>, tensor<2x4x8xf32>
}

// -----

// A product with another use keeps its add: the op takes the scale alone.
// CHECK-LABEL: func.func @product_used_twice
// CHECK-NEXT: %[[S:result[_0-9]*]], %{{.*}}, %{{.*}} = otc.layer_norm %arg0, %arg1 {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : tensor<3x8xf32>, tensor<8xf32> -> tensor<3x1xf32>
// CHECK-NEXT: %[[Y:.*]] = otc.add %[[S]], %arg2
// CHECK-NEXT: return %[[Y]], %[[S]]
func.func @product_used_twice(%x: tensor<3x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<3x8xf32>, tensor<3x8xf32>) {
  %n = otc.normalize %x {axis = 1 : i64, epsilon = 1.0e-5 : f64} : tensor<3x8xf32>
  %s = otc.mul %n, %w : tensor<3x8xf32>, tensor<8xf32> -> tensor<3x8xf32>
  %y = otc.add %s, %b : tensor<3x8xf32>, tensor<8xf32> -> tensor<3x8xf32>
  return %y, %s : tensor<3x8xf32>, tensor<3x8xf32>
}

// -----

// Near misses, left alone: a normalize with another use; a scale that
// varies along the rows; InstanceNorm's per-channel scale (normalized dims
// [4, 4], scale [2, 1, 1]); a scalar scale; a product that broadcasts x up;
// x * x̂.
// CHECK-LABEL: func.func @near_misses
// CHECK-NOT: otc.layer_norm
// CHECK: return
func.func @near_misses(%x: tensor<3x8xf32>, %w: tensor<8xf32>, %rows: tensor<3x8xf32>,
                       %img: tensor<1x2x4x4xf32>, %c: tensor<2x1x1xf32>, %k: tensor<f32>,
                       %up: tensor<2x3x8xf32>)
    -> (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<1x2x4x4xf32>,
        tensor<3x8xf32>, tensor<2x3x8xf32>, tensor<3x8xf32>) {
  %n = otc.normalize %x {axis = 1 : i64, epsilon = 1.0e-5 : f64} : tensor<3x8xf32>
  %a = otc.mul %n, %w : tensor<3x8xf32>, tensor<8xf32> -> tensor<3x8xf32>
  %n2 = otc.normalize %x {axis = 1 : i64, epsilon = 2.0e-5 : f64} : tensor<3x8xf32>
  %b = otc.mul %n2, %rows : tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  %m = otc.normalize %img {axis = 2 : i64, epsilon = 1.0e-5 : f64} : tensor<1x2x4x4xf32>
  %i = otc.mul %m, %c : tensor<1x2x4x4xf32>, tensor<2x1x1xf32> -> tensor<1x2x4x4xf32>
  %n3 = otc.normalize %x {axis = 1 : i64, epsilon = 3.0e-5 : f64} : tensor<3x8xf32>
  %s = otc.mul %n3, %k : tensor<3x8xf32>, tensor<f32> -> tensor<3x8xf32>
  %n4 = otc.normalize %x {axis = 1 : i64, epsilon = 4.0e-5 : f64} : tensor<3x8xf32>
  %u = otc.mul %n4, %up : tensor<3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
  %n5 = otc.normalize %x {axis = 1 : i64, epsilon = 5.0e-5 : f64} : tensor<3x8xf32>
  %xx = otc.mul %n5, %x : tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %n, %a, %b, %i, %s, %u, %xx : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>,
      tensor<1x2x4x4xf32>, tensor<3x8xf32>, tensor<2x3x8xf32>, tensor<3x8xf32>
}
