// Softmax cross-entropy over 65536 rows of 1024 logits (256 MiB): the
// RowReduce step of a language model's loss, for bench/gpu_kernels.py.
func.func @ce(%logits: tensor<65536x1024xf32>, %labels: tensor<65536xi64>) -> tensor<f32> {
  %l = otc.softmax_cross_entropy %logits, %labels : tensor<65536x1024xf32>, tensor<65536xi64> -> tensor<f32>
  return %l : tensor<f32>
}
