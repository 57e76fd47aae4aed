// An elementwise chain in f16 storage: x used twice, a broadcast operand.
func.func @chain(%x: tensor<4x33xf16>, %y: tensor<33xf16>) -> tensor<4x33xf16> {
  %a = otc.mul %x, %y : tensor<4x33xf16>, tensor<33xf16> -> tensor<4x33xf16>
  %b = otc.tanh %a : tensor<4x33xf16>
  %c = otc.add %b, %x : tensor<4x33xf16>, tensor<4x33xf16> -> tensor<4x33xf16>
  %d = otc.sigmoid %c : tensor<4x33xf16>
  return %d : tensor<4x33xf16>
}
