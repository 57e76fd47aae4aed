// Row reductions in f16 storage: a sum over the last axis, and softmax
// cross-entropy (max, sum of exponentials, the labelled logit, the mean).
// On CUDA the sum over 8 rows of 100 (a block each) reads four elements per 8-byte load;
// a sum and a softmax over 128 rows of 64 (a warp each) read (and write) eight per 16-byte
// access; rows of 37 are read an element at a time.
func.func @rows(%x: tensor<8x100xf16>, %logits: tensor<6x37xf16>, %labels: tensor<6xi64>,
                %y: tensor<128x64xf16>)
    -> (tensor<8xf16>, tensor<f16>, tensor<128xf16>, tensor<128x64xf16>) {
  %s = otc.reduce_sum %x [1] : tensor<8x100xf16> -> tensor<8xf16>
  %l = otc.softmax_cross_entropy %logits, %labels : tensor<6x37xf16>, tensor<6xi64> -> tensor<f16>
  %s8 = otc.reduce_sum %y [1] : tensor<128x64xf16> -> tensor<128xf16>
  %sm = otc.softmax %y {axis = 1 : i64} : tensor<128x64xf16>
  return %s, %l, %s8, %sm : tensor<8xf16>, tensor<f16>, tensor<128xf16>, tensor<128x64xf16>
}
