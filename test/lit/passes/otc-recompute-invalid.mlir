// RUN: otc-opt %s --otc-autodiff --otc-recompute=policy=blocks -verify-diagnostics

// No repeated scopes in the names: blocks needs a boundary regex.
// expected-error @+1 {{recompute blocks: no repeated blocks in the node names}}
func.func @unnamed(%x: tensor<4x8xf32> {otc.input = "x"},
                   %w: tensor<8x8xf32> {otc.param = "w", otc.trainable}) -> (tensor<f32> {otc.loss}) {
  %h = otc.gemm %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a = otc.tanh %h : tensor<4x8xf32>
  %l = otc.reduce_mean %a [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
