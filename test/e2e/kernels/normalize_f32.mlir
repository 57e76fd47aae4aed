// Layer normalization's normalize over the last two dims, and its gradient.
func.func @normalize(%x: tensor<4x6x10xf32>, %g: tensor<4x6x10xf32>) -> (tensor<4x6x10xf32>, tensor<4x6x10xf32>) {
  %y = otc.normalize %x {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x6x10xf32>
  %d = otc.normalize_grad %g, %x {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x6x10xf32>
  return %y, %d : tensor<4x6x10xf32>, tensor<4x6x10xf32>
}
