// Dropout of 3,200 elements with ratio 0.3 on random stream 5 (seed 0 and
// micro-batch 0 in a kernel run).
func.func @dropout(%x: tensor<64x50xf32>) -> (tensor<64x50xf32>, tensor<64x50xi1>) {
  %y, %m = otc.dropout %x {ratio = 0.3 : f64, stream = 5 : i64} : tensor<64x50xf32> -> tensor<64x50xf32>, tensor<64x50xi1>
  return %y, %m : tensor<64x50xf32>, tensor<64x50xi1>
}
