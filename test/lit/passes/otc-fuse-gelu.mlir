// RUN: otc-opt %s --otc-fuse-gelu --split-input-file | FileCheck %s

// The exact form as torch 1.13 exports nn.GELU(): x / √2 through erf.
// (The constants stay for the canonicalizer.)
// CHECK-LABEL: func.func @exact
// CHECK-NOT: otc.erf
// CHECK: %[[Y:.*]] = otc.gelu %arg0 {approximate = 0 : i32} : tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @exact(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r2 = otc.constant dense<1.41421354> : tensor<f32>
  %one = otc.constant dense<1.0> : tensor<f32>
  %half = otc.constant dense<0.5> : tensor<f32>
  %a = otc.div %x, %r2 : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %e = otc.erf %a : tensor<4x8xf32>
  %p = otc.add %e, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %m = otc.mul %x, %p : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %y = otc.mul %m, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Hugging Face's gelu_new: 0.5 first, pow(x, 3), the constants on the left;
// x itself is a sum (the expression stops at the value read twice).
// CHECK-LABEL: func.func @gelu_new
// CHECK: %[[X:.*]] = otc.add %arg0, %arg1
// CHECK-NEXT: %[[Y:.*]] = otc.gelu %[[X]] {approximate = 1 : i32} : tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_new(%u: tensor<4x8xf32>, %v: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = otc.constant dense<0.5> : tensor<f32>
  %one = otc.constant dense<1.0> : tensor<f32>
  %k = otc.constant dense<0.797884583> : tensor<f32>
  %c = otc.constant dense<4.471500e-02> : tensor<f32>
  %x = otc.add %u, %v : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %h = otc.mul %half, %x : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %cube = otc.pow %x {exponent = 3.0 : f64} : tensor<4x8xf32>
  %s = otc.mul %c, %cube : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %i = otc.add %x, %s : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %z = otc.mul %k, %i : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %t = otc.tanh %z : tensor<4x8xf32>
  %p = otc.add %one, %t : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %y = otc.mul %h, %p : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Not GELU, though shaped like it: the tanh form with another constant
// (0.05 for 0.044715), which only the probes reject, and x tanh(x), too
// small an expression to be one.
// CHECK-LABEL: func.func @near_misses
// CHECK-NOT: otc.gelu
// CHECK-COUNT-2: otc.tanh
func.func @near_misses(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %half = otc.constant dense<0.5> : tensor<f32>
  %one = otc.constant dense<1.0> : tensor<f32>
  %k = otc.constant dense<0.797884583> : tensor<f32>
  %c = otc.constant dense<5.0e-02> : tensor<f32>
  %sq = otc.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %cube = otc.mul %sq, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s = otc.mul %cube, %c : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %i = otc.add %x, %s : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %z = otc.mul %i, %k : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %t = otc.tanh %z : tensor<4x8xf32>
  %p = otc.add %t, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %h = otc.mul %x, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %y = otc.mul %h, %p : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %t2 = otc.tanh %x : tensor<4x8xf32>
  %y2 = otc.mul %x, %t2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y, %y2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// An inner value used elsewhere stays for that use.
// CHECK-LABEL: func.func @shared_inner
// CHECK: %[[E:.*]] = otc.erf
// CHECK: %[[Y:.*]] = otc.gelu %arg0 {approximate = 0 : i32}
// CHECK: return %[[Y]], %[[E]]
func.func @shared_inner(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %r = otc.constant dense<0.707106769> : tensor<f32>
  %one = otc.constant dense<1.0> : tensor<f32>
  %half = otc.constant dense<0.5> : tensor<f32>
  %a = otc.mul %x, %r : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %e = otc.erf %a : tensor<4x8xf32>
  %p = otc.add %e, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %h = otc.mul %x, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %y = otc.mul %h, %p : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y, %e : tensor<4x8xf32>, tensor<4x8xf32>
}
