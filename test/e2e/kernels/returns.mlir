// Results that code generation once got wrong (found in review):
//   0, 1: one value returned twice (only the first was written);
//   2, 3: a matmul returned and also used (its result was never copied);
//   4: a NaN constant beside relu_grad's 0.0 (hash-consing merged them);
//   5: g / -0.0 beside relu_grad's 0.0 (-0.0 merged with 0.0: +inf);
//   6: relu of NaN (was 0; PyTorch gives NaN).
func.func @returns(%x: tensor<8xf32>, %g: tensor<8xf32>, %a: tensor<4x8xf32>, %b: tensor<8x5xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %r = otc.relu %x : tensor<8xf32>
  %c = otc.matmul %a, %b : tensor<4x8xf32>, tensor<8x5xf32> -> tensor<4x5xf32>
  %d = otc.relu %c : tensor<4x5xf32>
  %nan = otc.constant dense<0x7FC00000> : tensor<f32>
  %rg = otc.relu_grad %g, %x : tensor<8xf32>
  %n = otc.add %nan, %rg : tensor<f32>, tensor<8xf32> -> tensor<8xf32>
  %negzero = otc.constant dense<-0.0> : tensor<f32>
  %rg2 = otc.relu_grad %g, %x : tensor<8xf32>
  %q = otc.div %rg2, %negzero : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %xn = otc.add %x, %nan : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %rn = otc.relu %xn : tensor<8xf32>
  return %r, %r, %c, %d, %n, %q, %rn : tensor<8xf32>, tensor<8xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
