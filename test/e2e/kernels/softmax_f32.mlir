// Softmax along the last axis and log-softmax along a middle one, in f32.
func.func @softmax(%x: tensor<6x37xf32>, %z: tensor<3x5x7xf32>) -> (tensor<6x37xf32>, tensor<3x5x7xf32>) {
  %s = otc.softmax %x {axis = 1 : i64} : tensor<6x37xf32>
  %l = otc.log_softmax %z {axis = 1 : i64} : tensor<3x5x7xf32>
  return %s, %l : tensor<6x37xf32>, tensor<3x5x7xf32>
}
