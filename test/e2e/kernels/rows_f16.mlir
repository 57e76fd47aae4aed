// Row reductions in f16 storage: a sum over the last axis, and softmax
// cross-entropy (max, sum of exponentials, the labelled logit, the mean).
func.func @rows(%x: tensor<8x100xf16>, %logits: tensor<6x37xf16>, %labels: tensor<6xi64>)
    -> (tensor<8xf16>, tensor<f16>) {
  %s = otc.reduce_sum %x [1] : tensor<8x100xf16> -> tensor<8xf16>
  %l = otc.softmax_cross_entropy %logits, %labels : tensor<6x37xf16>, tensor<6xi64> -> tensor<f16>
  return %s, %l : tensor<8xf16>, tensor<f16>
}
