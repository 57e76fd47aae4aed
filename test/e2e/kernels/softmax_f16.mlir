// Softmax along the last axis and log-softmax along a middle one, in f16 storage.
func.func @softmax(%x: tensor<6x37xf16>, %z: tensor<3x5x7xf16>) -> (tensor<6x37xf16>, tensor<3x5x7xf16>) {
  %s = otc.softmax %x {axis = 1 : i64} : tensor<6x37xf16>
  %l = otc.log_softmax %z {axis = 1 : i64} : tensor<3x5x7xf16>
  return %s, %l : tensor<6x37xf16>, tensor<3x5x7xf16>
}
