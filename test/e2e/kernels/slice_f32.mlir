// A strided slice at an offset, its gradient (zeros around the slice), and
// a concat whose first input is an elementwise expression fused into its
// copy.
func.func @slices(%x: tensor<4x6xf32>, %g: tensor<2x3xf32>, %y: tensor<4x2xf32>)
    -> (tensor<2x3xf32>, tensor<4x6xf32>, tensor<4x8xf32>) {
  %s = otc.slice %x [1, 1] [2, 2] : tensor<4x6xf32> -> tensor<2x3xf32>
  %d = otc.slice_grad %g [1, 1] [2, 2] : tensor<2x3xf32> -> tensor<4x6xf32>
  %n = otc.neg %x : tensor<4x6xf32>
  %c = otc.concat %n, %y {axis = 1 : i64} : tensor<4x6xf32>, tensor<4x2xf32> -> tensor<4x8xf32>
  return %s, %d, %c : tensor<2x3xf32>, tensor<4x6xf32>, tensor<4x8xf32>
}
