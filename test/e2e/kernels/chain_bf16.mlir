// An elementwise chain in bf16 storage: x used twice, a broadcast operand.
func.func @chain(%x: tensor<4x33xbf16>, %y: tensor<33xbf16>) -> tensor<4x33xbf16> {
  %a = otc.mul %x, %y : tensor<4x33xbf16>, tensor<33xbf16> -> tensor<4x33xbf16>
  %b = otc.tanh %a : tensor<4x33xbf16>
  %c = otc.add %b, %x : tensor<4x33xbf16>, tensor<4x33xbf16> -> tensor<4x33xbf16>
  %d = otc.sigmoid %c : tensor<4x33xbf16>
  return %d : tensor<4x33xbf16>
}
