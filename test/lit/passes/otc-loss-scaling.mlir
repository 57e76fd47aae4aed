// RUN: otc-opt %s --otc-loss-scaling="mode=dynamic window=500 hysteresis=2 min-scale=1.0" | FileCheck %s --check-prefix=DYN
// RUN: otc-opt %s --otc-loss-scaling="mode=static init-scale=1024" | FileCheck %s --check-prefix=STATIC
// RUN: otc-opt %s --otc-loss-scaling | FileCheck %s --check-prefix=NONE
// RUN: not otc-opt %s --otc-loss-scaling="mode=sometimes" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not otc-opt %s --otc-loss-scaling="mode=dynamic min-scale=1.0e6" 2>&1 | FileCheck %s --check-prefix=RANGE

// The policy is recorded on the step that returns the loss (the mode as
// LossScaleModeAttr: 0 none, 1 static, 2 dynamic); the runtime
// multiplies it into the loss seed (scale / k) and unscales in the update.
// DYN-LABEL: func.func @step
// DYN-SAME: otc.loss_scale = {hysteresis = 2 : i64, init_scale = 6.553600e+04 : f64, min_scale = 1.000000e+00 : f64, mode = 2 : i32, window = 500 : i64}
// STATIC: otc.loss_scale = {hysteresis = 1 : i64, init_scale = 1.024000e+03 : f64, min_scale = 0.000000e+00 : f64, mode = 1 : i32, window = 2000 : i64}
// NONE: otc.loss_scale = {{{.*}}init_scale = 1.000000e+00 : f64{{.*}}mode = 0 : i32
// A function without a loss is left alone.
// DYN-LABEL: func.func @helper
// DYN-NOT: otc.loss_scale
// The mode is an enum: an unknown one is refused as the option is parsed.
// BAD: for the --mode option: Cannot find option named 'sometimes'!
// RANGE: error: otc-loss-scaling: the scale must be positive and normal in float32, min-scale within [0, scale]
func.func @step(%l: tensor<f32>, %seed: tensor<f32> {otc.loss_seed}) -> (tensor<f32> {otc.loss}) {
  return %l : tensor<f32>
}
func.func @helper(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
