// A batched matrix product with bf16 operands and result, summed in f32.
func.func @gemm(%a: tensor<3x5x40xbf16>, %b: tensor<3x40x7xbf16>) -> tensor<3x5x7xbf16> {
  %c = otc.matmul %a, %b : tensor<3x5x40xbf16>, tensor<3x40x7xbf16> -> tensor<3x5x7xbf16>
  return %c : tensor<3x5x7xbf16>
}
