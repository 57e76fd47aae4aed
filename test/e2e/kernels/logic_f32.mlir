// Comparisons, logic, where and casts. %x holds a NaN, 1e20 and values that
// f16 rounds; the f16 cast is used inside a fused expression, so it must
// round there.
func.func @logic(%x: tensor<16xf32>, %y: tensor<16xf32>, %i: tensor<16xi64>)
    -> (tensor<16xi1>, tensor<16xi1>, tensor<16xf32>, tensor<16xi64>, tensor<16xf32>, tensor<16xf32>) {
  %lt = otc.compare lt, %x, %y : tensor<16xf32>, tensor<16xf32> -> tensor<16xi1>
  %z = otc.constant dense<0> : tensor<i64>
  %eq = otc.compare eq, %i, %z : tensor<16xi64>, tensor<i64> -> tensor<16xi1>
  %n = otc.not %eq : tensor<16xi1>
  %a = otc.and %lt, %n : tensor<16xi1>, tensor<16xi1> -> tensor<16xi1>
  %o = otc.or %a, %eq : tensor<16xi1>, tensor<16xi1> -> tensor<16xi1>
  %w = otc.where %o, %x, %y : tensor<16xi1>, tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  %xi = otc.cast %x : tensor<16xf32> -> tensor<16xi64>
  %h = otc.cast %x : tensor<16xf32> -> tensor<16xf16>
  %hb = otc.cast %h : tensor<16xf16> -> tensor<16xf32>
  %if = otc.cast %i : tensor<16xi64> -> tensor<16xf32>
  %bf = otc.cast %lt : tensor<16xi1> -> tensor<16xf32>
  %s = otc.add %if, %bf : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  return %a, %o, %w, %xi, %hb, %s : tensor<16xi1>, tensor<16xi1>, tensor<16xf32>, tensor<16xi64>, tensor<16xf32>, tensor<16xf32>
}
