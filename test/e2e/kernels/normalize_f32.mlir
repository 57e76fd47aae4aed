// Layer normalization's normalize over the last two dims, and its gradient;
// then the same without centering (RMS normalization); then both with their
// affine as one op (otc.layer_norm), with and without a bias.
func.func @normalize(%x: tensor<4x6x10xf32>, %g: tensor<4x6x10xf32>, %w: tensor<6x10xf32>,
                     %b: tensor<6x10xf32>)
    -> (tensor<4x6x10xf32>, tensor<4x6x10xf32>, tensor<4x6x10xf32>, tensor<4x6x10xf32>,
        tensor<4x6x10xf32>, tensor<4x6x10xf32>) {
  %y = otc.normalize %x {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x6x10xf32>
  %d = otc.normalize_grad %g, %x {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x6x10xf32>
  %r = otc.normalize %x {axis = 1 : i64, epsilon = 1.0e-05 : f64, center = false} : tensor<4x6x10xf32>
  %rd = otc.normalize_grad %g, %x {axis = 1 : i64, epsilon = 1.0e-05 : f64, center = false} : tensor<4x6x10xf32>
  %l, %lm, %ls = otc.layer_norm %x, %w, %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x6x10xf32>, tensor<6x10xf32>, tensor<6x10xf32> -> tensor<4x1x1xf32>
  %lr, %lrm, %lrs = otc.layer_norm %x, %w {axis = 1 : i64, epsilon = 1.0e-05 : f64, center = false} : tensor<4x6x10xf32>, tensor<6x10xf32> -> tensor<4x1x1xf32>
  return %y, %d, %r, %rd, %l, %lr : tensor<4x6x10xf32>, tensor<4x6x10xf32>, tensor<4x6x10xf32>,
      tensor<4x6x10xf32>, tensor<4x6x10xf32>, tensor<4x6x10xf32>
}
