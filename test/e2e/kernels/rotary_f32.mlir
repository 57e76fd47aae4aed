// The rotary embedding and its transpose (x's gradient): cos broadcast over
// the leading dim, sin over both leading dims.
func.func @rotary(%x: tensor<2x3x8xf32>, %c: tensor<3x8xf32>, %s: tensor<1x8xf32>)
    -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  %y = otc.rotary %x, %c, %s : tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<1x8xf32> -> tensor<2x3x8xf32>
  %t = otc.rotary %x, %c, %s {transposed = true} : tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<1x8xf32> -> tensor<2x3x8xf32>
  return %y, %t : tensor<2x3x8xf32>, tensor<2x3x8xf32>
}
