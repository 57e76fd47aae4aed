// Elementwise chains in f16 storage. The first: x used twice, a broadcast
// operand. The vectorised ones (CUDA): 512 elements at eight per 16-byte
// load, with a float32 operand (two 16-byte loads per eight); 12 elements
// at four per 8-byte load.
func.func @chain(%x: tensor<4x33xf16>, %y: tensor<33xf16>, %z: tensor<8x64xf16>, %w: tensor<8x64xf32>,
                 %u: tensor<2x6xf16>) -> (tensor<4x33xf16>, tensor<8x64xf16>, tensor<2x6xf16>) {
  %a = otc.mul %x, %y : tensor<4x33xf16>, tensor<33xf16> -> tensor<4x33xf16>
  %b = otc.tanh %a : tensor<4x33xf16>
  %c = otc.add %b, %x : tensor<4x33xf16>, tensor<4x33xf16> -> tensor<4x33xf16>
  %d = otc.sigmoid %c : tensor<4x33xf16>
  %wl = otc.cast %w : tensor<8x64xf32> -> tensor<8x64xf16>
  %tz = otc.tanh %z : tensor<8x64xf16>
  %e = otc.mul %tz, %wl : tensor<8x64xf16>, tensor<8x64xf16> -> tensor<8x64xf16>
  %tu = otc.tanh %u : tensor<2x6xf16>
  %f = otc.mul %tu, %u : tensor<2x6xf16>, tensor<2x6xf16> -> tensor<2x6xf16>
  return %d, %e, %f : tensor<4x33xf16>, tensor<8x64xf16>, tensor<2x6xf16>
}
