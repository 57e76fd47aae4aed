// A batched matrix product with f16 operands and result, summed in f32.
func.func @gemm(%a: tensor<3x5x40xf16>, %b: tensor<3x40x7xf16>) -> tensor<3x5x7xf16> {
  %c = otc.matmul %a, %b : tensor<3x5x40xf16>, tensor<3x40x7xf16> -> tensor<3x5x7xf16>
  return %c : tensor<3x5x7xf16>
}
