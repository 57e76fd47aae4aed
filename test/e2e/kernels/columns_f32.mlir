// Column reductions long enough to be split into partial sums and their
// sum (ReduceSteps.cpp): sums over [32, 128] rows of 24 outputs, as
// LayerNorm's scale and bias gradients over B x T rows; a product inside
// the sum, a maximum, and a mean (the division after the sum). The [9, 24]
// sum stays one step. Then BatchNorm's kind: sums over the batch and the
// pixels of [16, 6, 4096] per channel, split into partial sums over 16 x 6
// rows of 4096 and their sums over 16.
func.func @columns(%x: tensor<32x128x24xf32>, %y: tensor<32x128x24xf32>, %z: tensor<9x24xf32>,
                   %w: tensor<16x6x4096xf32>)
    -> (tensor<24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<1x1x24xf32>, tensor<24xf32>,
        tensor<6xf32>, tensor<1x6x1xf32>) {
  %s = otc.reduce_sum %x [0, 1] : tensor<32x128x24xf32> -> tensor<24xf32>
  %p = otc.mul %x, %y : tensor<32x128x24xf32>, tensor<32x128x24xf32> -> tensor<32x128x24xf32>
  %ps = otc.reduce_sum %p [0, 1] : tensor<32x128x24xf32> -> tensor<24xf32>
  %m = otc.reduce_max %y [0, 1] : tensor<32x128x24xf32> -> tensor<24xf32>
  %a = otc.reduce_mean %y [0, 1] {keepdims = true} : tensor<32x128x24xf32> -> tensor<1x1x24xf32>
  %zs = otc.reduce_sum %z [0] : tensor<9x24xf32> -> tensor<24xf32>
  %ws = otc.reduce_sum %w [0, 2] : tensor<16x6x4096xf32> -> tensor<6xf32>
  %w2 = otc.mul %w, %w : tensor<16x6x4096xf32>, tensor<16x6x4096xf32> -> tensor<16x6x4096xf32>
  %wm = otc.reduce_mean %w2 [0, 2] {keepdims = true} : tensor<16x6x4096xf32> -> tensor<1x6x1xf32>
  return %s, %ps, %m, %a, %zs, %ws, %wm : tensor<24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<1x1x24xf32>, tensor<24xf32>, tensor<6xf32>, tensor<1x6x1xf32>
}
