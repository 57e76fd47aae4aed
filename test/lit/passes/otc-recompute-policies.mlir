// RUN: otc-opt %s --otc-autodiff --otc-recompute=policy=blocks | FileCheck %s --check-prefixes=CHECK,BLOCKS
// RUN: otc-opt %s --otc-autodiff '--otc-recompute=policy=blocks boundary=^/blocks\.1/' | FileCheck %s --check-prefixes=CHECK,ONE
// RUN: otc-opt %s --otc-autodiff --otc-recompute=policy=sqrt | FileCheck %s --check-prefixes=CHECK,SQRT
// RUN: otc-opt %s --otc-autodiff '--otc-recompute=policy=budget layers=1' | FileCheck %s --check-prefixes=CHECK,BUDGET
// RUN: otc-opt %s --otc-autodiff '--otc-recompute=policy=budget layers=0' | FileCheck %s --check-prefixes=CHECK,BUDGET0

// Two transformer-style blocks named as PyTorch exports them (LayerNorm,
// GEMM, tanh, GEMM, residual add), each policy's IR after otc-recompute:
// which values the backward keeps, which ops it clones (otc.recomputed),
// and where.
// CHECK-LABEL: func.func @two_blocks
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32> {otc.input = "x"}
// BLOCKS-SAME: otc.recompute = "blocks: /blocks.N/ (2 blocks)"
// ONE-SAME: otc.recompute = "blocks: 1 blocks matching '^/blocks\\.1/'"
// SQRT-SAME: otc.recompute = "sqrt: 7 layers, 2 recomputed segments and a selective last one"
// BUDGET-SAME: otc.recompute = "budget: selective and 1 of 1 layers recomputed whole", otc.recompute_layers = 1
// BUDGET0-SAME: otc.recompute = "budget: selective", otc.recompute_layers = 1
// The forward is unchanged:
// CHECK: %[[N0:[0-9]+]] = otc.normalize %[[X]]
// CHECK-NEXT: %[[H0:[0-9]+]] = otc.gemm %[[N0]]
// CHECK-NEXT: %[[A0:[0-9]+]] = otc.tanh %[[H0]]
// CHECK-NEXT: %[[Y0:[0-9]+]] = otc.gemm %[[A0]]
// CHECK-NEXT: %[[R0:[0-9]+]] = otc.add %[[X]], %[[Y0]]
// CHECK-NEXT: %[[N1:[0-9]+]] = otc.normalize %[[R0]]
// CHECK-NEXT: %[[H1:[0-9]+]] = otc.gemm %[[N1]]
// CHECK-NEXT: otc.tanh %[[H1]]
//
// blocks: each block's forward, GEMM included, is re-run from the value
// that enters it (block 1 from %R0, block 0 from %X) just before its
// backward; only %R0, which leaves block 0, is kept.
// BLOCKS: %[[N1B:[0-9]+]] = otc.normalize %[[R0]] {{{.*}}otc.recomputed}
// BLOCKS-NEXT: %[[H1B:[0-9]+]] = otc.gemm %[[N1B]], %{{.*}} {otc.recomputed, trans_b = true}
// BLOCKS-NEXT: otc.tanh %[[H1B]] {otc.recomputed}
// BLOCKS: otc.normalize_grad %{{.*}}, %[[R0]]
// BLOCKS: %[[N0B:[0-9]+]] = otc.normalize %[[X]] {{{.*}}otc.recomputed}
// BLOCKS-NEXT: %[[H0B:[0-9]+]] = otc.gemm %[[N0B]], %{{.*}} {otc.recomputed, trans_b = true}
// BLOCKS-NEXT: otc.tanh %[[H0B]] {otc.recomputed}
// BLOCKS-NOT: %[[H0]]{{[^0-9]}}
// BLOCKS-NOT: %[[H1]]{{[^0-9]}}
// BLOCKS: return
//
// A boundary regex that names only block 1: block 1 as above; block 0
// falls back to selective (tanh from the kept %H0, the normalize from %X).
// ONE: %[[N1B:[0-9]+]] = otc.normalize %[[R0]] {{{.*}}otc.recomputed}
// ONE-NEXT: %[[H1B:[0-9]+]] = otc.gemm %[[N1B]], %{{.*}} {otc.recomputed, trans_b = true}
// ONE-NEXT: otc.tanh %[[H1B]] {otc.recomputed}
// ONE: otc.tanh %[[H0]] {otc.recomputed}
// ONE: otc.normalize %[[X]] {{{.*}}otc.recomputed}
// ONE-NOT: otc.gemm {{.*}}otc.recomputed
//
// sqrt: 7 layers (single ops up to %R0, after which %R0 stays live to the
// last add), so ceil(sqrt(7)) = 3 segments: block 0 is recomputed whole
// from %X; the last segment (block 1) is selective, keeping %H1.
// SQRT: otc.tanh %[[H1]] {otc.recomputed}
// SQRT: otc.normalize %[[R0]] {{{.*}}otc.recomputed}
// SQRT: %[[N0B:[0-9]+]] = otc.normalize %[[X]] {{{.*}}otc.recomputed}
// SQRT-NEXT: %[[H0B:[0-9]+]] = otc.gemm %[[N0B]], %{{.*}} {otc.recomputed, trans_b = true}
// SQRT-NEXT: otc.tanh %[[H0B]] {otc.recomputed}
// SQRT-NOT: %[[H0]]{{[^0-9]}}
//
// budget with one layer: the layer that frees the most bytes per FLOP
// (block 1, whose %H1 selective would keep) is recomputed whole from %R0;
// the rest is selective.
// BUDGET: %[[N1B:[0-9]+]] = otc.normalize %[[R0]] {{{.*}}otc.recomputed}
// BUDGET-NEXT: %[[H1B:[0-9]+]] = otc.gemm %[[N1B]], %{{.*}} {otc.recomputed, trans_b = true}
// BUDGET-NEXT: otc.tanh %[[H1B]] {otc.recomputed}
// BUDGET: otc.tanh %[[H0]] {otc.recomputed}
// BUDGET: otc.normalize %[[X]] {{{.*}}otc.recomputed}
// BUDGET-NOT: otc.gemm {{.*}}otc.recomputed
//
// budget with no layers is selective: no GEMM is recomputed.
// BUDGET0: otc.tanh %[[H1]] {otc.recomputed}
// BUDGET0: otc.tanh %[[H0]] {otc.recomputed}
// BUDGET0-NOT: otc.gemm {{.*}}otc.recomputed
func.func @two_blocks(%x: tensor<4x8xf32> {otc.input = "x"},
                      %w1: tensor<16x8xf32> {otc.param = "blocks.0.fc.weight", otc.trainable},
                      %w2: tensor<8x16xf32> {otc.param = "blocks.0.out.weight", otc.trainable},
                      %w3: tensor<16x8xf32> {otc.param = "blocks.1.fc.weight", otc.trainable},
                      %w4: tensor<8x16xf32> {otc.param = "blocks.1.out.weight", otc.trainable}) -> (tensor<f32> {otc.loss}) {
  %n0 = otc.normalize %x {axis = 1 : i64, center = true, epsilon = 1.0e-5 : f64} : tensor<4x8xf32> loc("/blocks.0/ln/LayerNormalization")
  %h0 = otc.gemm %n0, %w1 {trans_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> loc("/blocks.0/fc/Gemm")
  %a0 = otc.tanh %h0 : tensor<4x16xf32> loc("/blocks.0/Tanh")
  %y0 = otc.gemm %a0, %w2 {trans_b = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32> loc("/blocks.0/out/Gemm")
  %r0 = otc.add %x, %y0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("/blocks.0/Add")
  %n1 = otc.normalize %r0 {axis = 1 : i64, center = true, epsilon = 1.0e-5 : f64} : tensor<4x8xf32> loc("/blocks.1/ln/LayerNormalization")
  %h1 = otc.gemm %n1, %w3 {trans_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> loc("/blocks.1/fc/Gemm")
  %a1 = otc.tanh %h1 : tensor<4x16xf32> loc("/blocks.1/Tanh")
  %y1 = otc.gemm %a1, %w4 {trans_b = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32> loc("/blocks.1/out/Gemm")
  %r1 = otc.add %r0, %y1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("/blocks.1/Add")
  %l = otc.reduce_mean %r1 [0, 1] : tensor<4x8xf32> -> tensor<f32> loc("/ReduceMean")
  return %l : tensor<f32>
}
