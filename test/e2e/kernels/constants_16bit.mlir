// Non-uniform f16 and bf16 constant tensors (stored as bit patterns) in
// elementwise products.
func.func @constants(%x: tensor<2x3xf16>, %y: tensor<2x3xbf16>) -> (tensor<2x3xf16>, tensor<2x3xbf16>) {
  %c = otc.constant dense<[1.0, -2.5, 0.33325195]> : tensor<3xf16>
  %d = otc.constant dense<[[0.5, 3.0, -1.0], [65504.0, 1.0e-7, 2.0]]> : tensor<2x3xbf16>
  %a = otc.mul %x, %c : tensor<2x3xf16>, tensor<3xf16> -> tensor<2x3xf16>
  %b = otc.mul %y, %d : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
  return %a, %b : tensor<2x3xf16>, tensor<2x3xbf16>
}
