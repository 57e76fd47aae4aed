// BatchNorm's training-mode statistics and output over [6, 3, 8, 8]: per
// image and channel a mean and centred sum of squares, then Chan's
// combination per channel (Normalization.cpp: statisticsPerImage). The
// channels are chosen against it: a zero mean, a mean of 1000 with a
// spread of 1 (a sum of squares would lose it), and one image far from
// the others (the shift the combination takes is that image's mean).
func.func @batch_norm(%x: tensor<6x3x8x8xf32>, %w: tensor<3xf32>, %b: tensor<3xf32>)
    -> (tensor<6x3x8x8xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) {
  %y, %m, %v = otc.batch_norm %x, %w, %b {epsilon = 1.0e-05 : f64} : tensor<6x3x8x8xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<1x3x1x1xf32>
  return %y, %m, %v : tensor<6x3x8x8xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>
}
