// An embedding lookup and its gradient, with indices that repeat, count
// from the end, and fall outside the table (read as 0, add nothing).
func.func @gather(%table: tensor<5x3xf32>, %ids: tensor<2x4xi64>, %dy: tensor<2x4x3xf32>)
    -> (tensor<2x4x3xf32>, tensor<5x3xf32>) {
  %e = otc.gather %table, %ids {axis = 0 : i64} : tensor<5x3xf32>, tensor<2x4xi64> -> tensor<2x4x3xf32>
  %g = otc.gather_grad %dy, %ids {axis = 0 : i64} : tensor<2x4x3xf32>, tensor<2x4xi64> -> tensor<5x3xf32>
  return %e, %g : tensor<2x4x3xf32>, tensor<5x3xf32>
}
