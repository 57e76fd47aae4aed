// The piecewise-constant ops: %x holds halves (round's ties), -0.0, NaN
// and infinities.
func.func @steps(%x: tensor<16xf32>)
    -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %f = otc.floor %x : tensor<16xf32>
  %c = otc.ceil %x : tensor<16xf32>
  %r = otc.round %x : tensor<16xf32>
  %s = otc.sign %x : tensor<16xf32>
  return %f, %c, %r, %s : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
