// The unary math ops in f32: %p is positive (log, sqrt), %s is signed and
// away from zero (reciprocal).
func.func @unary(%p: tensor<64xf32>, %s: tensor<64xf32>)
    -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %e = otc.exp %s : tensor<64xf32>
  %l = otc.log %p : tensor<64xf32>
  %q = otc.sqrt %p : tensor<64xf32>
  %r = otc.reciprocal %s : tensor<64xf32>
  %a = otc.abs %s : tensor<64xf32>
  %f = otc.erf %s : tensor<64xf32>
  return %e, %l, %q, %r, %a, %f : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}
