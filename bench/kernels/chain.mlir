// An elementwise chain over 2^26 floats (256 MiB in, 256 MiB out): 8
// links of tanh(x) + x fused into one kernel, for bench/gpu_kernels.py.
func.func @chain(%x0: tensor<67108864xf32>) -> tensor<67108864xf32> {
  %t0 = otc.tanh %x0 : tensor<67108864xf32>
  %x1 = otc.add %t0, %x0 : tensor<67108864xf32>, tensor<67108864xf32> -> tensor<67108864xf32>
  %t1 = otc.tanh %x1 : tensor<67108864xf32>
  %x2 = otc.add %t1, %x1 : tensor<67108864xf32>, tensor<67108864xf32> -> tensor<67108864xf32>
  %t2 = otc.tanh %x2 : tensor<67108864xf32>
  %x3 = otc.add %t2, %x2 : tensor<67108864xf32>, tensor<67108864xf32> -> tensor<67108864xf32>
  %t3 = otc.tanh %x3 : tensor<67108864xf32>
  %x4 = otc.add %t3, %x3 : tensor<67108864xf32>, tensor<67108864xf32> -> tensor<67108864xf32>
  %t4 = otc.tanh %x4 : tensor<67108864xf32>
  %x5 = otc.add %t4, %x4 : tensor<67108864xf32>, tensor<67108864xf32> -> tensor<67108864xf32>
  %t5 = otc.tanh %x5 : tensor<67108864xf32>
  %x6 = otc.add %t5, %x5 : tensor<67108864xf32>, tensor<67108864xf32> -> tensor<67108864xf32>
  %t6 = otc.tanh %x6 : tensor<67108864xf32>
  %x7 = otc.add %t6, %x6 : tensor<67108864xf32>, tensor<67108864xf32> -> tensor<67108864xf32>
  %t7 = otc.tanh %x7 : tensor<67108864xf32>
  %x8 = otc.add %t7, %x7 : tensor<67108864xf32>, tensor<67108864xf32> -> tensor<67108864xf32>
  return %x8 : tensor<67108864xf32>
}
