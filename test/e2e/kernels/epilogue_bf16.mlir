// GEMM epilogues (bf16 operands): a Linear's forward with its bias inside
// (x Wᵀ + b, rounded once), and both forms of its backward, the weight
// gradient with the bias gradient beside it: xᵀ g (weight [K, N]) into
// float32 results, and gᵀ x (weight [N, K]) in the operands' type; then
// the tanh GELU of x Wᵀ + b and of x Wᵀ, each with its preactivation; and
// x Wᵀ times the GELU's derivative at the first preactivation.
func.func @epilogue(%x: tensor<64x40xbf16>, %w: tensor<24x40xbf16>, %b: tensor<24xbf16>, %g: tensor<64x24xbf16>)
    -> (tensor<64x24xbf16>, tensor<40x24xf32>, tensor<24xf32>, tensor<24x40xbf16>, tensor<24xbf16>,
        tensor<64x24xbf16>, tensor<64x24xbf16>, tensor<64x24xbf16>, tensor<64x24xbf16>,
        tensor<64x24xbf16>) {
  %y = otc.gemm %x, %w, %b {trans_b = true} : (tensor<64x40xbf16>, tensor<24x40xbf16>, tensor<24xbf16>) -> tensor<64x24xbf16>
  %dw, %db = otc.gemm_bias_grad %x, %g {bias_of = 1 : i32, trans_a = true} : (tensor<64x40xbf16>, tensor<64x24xbf16>) -> (tensor<40x24xf32>, tensor<24xf32>)
  %dw2, %db2 = otc.gemm_bias_grad %g, %x {bias_of = 0 : i32, trans_a = true} : (tensor<64x24xbf16>, tensor<64x40xbf16>) -> (tensor<24x40xbf16>, tensor<24xbf16>)
  %g1, %p1 = otc.gemm_gelu %x, %w, %b {trans_b = true} : (tensor<64x40xbf16>, tensor<24x40xbf16>, tensor<24xbf16>) -> (tensor<64x24xbf16>, tensor<64x24xbf16>)
  %g2, %p2 = otc.gemm_gelu %x, %w {trans_b = true} : (tensor<64x40xbf16>, tensor<24x40xbf16>) -> (tensor<64x24xbf16>, tensor<64x24xbf16>)
  %dg = otc.gemm_dgelu %x, %w, %p1 {trans_b = true} : (tensor<64x40xbf16>, tensor<24x40xbf16>, tensor<64x24xbf16>) -> tensor<64x24xbf16>
  return %y, %dw, %db, %dw2, %db2, %g1, %p1, %g2, %p2, %dg : tensor<64x24xbf16>, tensor<40x24xf32>, tensor<24xf32>, tensor<24x40xbf16>, tensor<24xbf16>, tensor<64x24xbf16>, tensor<64x24xbf16>, tensor<64x24xbf16>, tensor<64x24xbf16>, tensor<64x24xbf16>
}
