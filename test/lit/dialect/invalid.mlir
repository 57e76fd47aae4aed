// RUN: otc-opt %s --split-input-file --verify-diagnostics

// The verifiers reject ill-shaped operations: ops whose result type is
// inferred give the specific shape error, then the inference failure.

func.func @add_no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = otc.add %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @add_wrong_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3x3xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = otc.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<3x3xf32>
  return %y : tensor<3x3xf32>
}

// -----

func.func @gemm_contraction(%a: tensor<2x4xf32>, %b: tensor<5x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{gemm contraction sizes differ: 4 vs 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = otc.gemm %a, %b : (tensor<2x4xf32>, tensor<5x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @matmul_rank(%a: tensor<4xf32>, %b: tensor<4x3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{matmul operands must have rank >= 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = otc.matmul %a, %b : tensor<4xf32>, tensor<4x3xf32> -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{cannot reshape 'tensor<2x3xf32>' (6 elements) to 'tensor<7xf32>'}}
  %y = otc.reshape %a : tensor<2x3xf32> -> tensor<7xf32>
  return %y : tensor<7xf32>
}

// -----

func.func @broadcast_bad(%a: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{cannot broadcast 'tensor<2xf32>' to 'tensor<2x3xf32>'}}
  %y = otc.broadcast_to %a : tensor<2xf32> -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @transpose_perm(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{transpose perm is not a permutation}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = otc.transpose %a [1, 1] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @reduce_axes(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{reduction axes must be sorted, unique and within the rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = otc.reduce_sum %a [2] : tensor<2x3xf32> -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @sce_shapes(%x: tensor<2x3xf32>, %l: tensor<3xi64>) -> tensor<f32> {
  // expected-error @+2 {{softmax cross-entropy needs [N, C] logits and [N] labels}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = otc.softmax_cross_entropy %x, %l : tensor<2x3xf32>, tensor<3xi64> -> tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @dynamic_shape(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{must be statically shaped tensor}}
  %y = otc.relu %a : tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

func.func @accumulate_types(%acc: tensor<3xf32>, %g: tensor<4xf32>, %first: i1) -> tensor<3xf32> {
  // expected-error @+1 {{failed to verify that all of {acc, grad, result} have same type}}
  %y = "otc.accumulate"(%acc, %g, %first) : (tensor<3xf32>, tensor<4xf32>, i1) -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis 2 is outside [0, 2)}}
  %y = otc.softmax %x {axis = 2 : i64} : tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// The predicate is an enum: a misspelt one does not parse.
func.func @compare_predicate(%a: tensor<2xf32>) -> tensor<2xi1> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'predicate' [eq, ne, lt, le, gt, ge]}}
  %c = otc.compare gte, %a, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xi1>
  return %c : tensor<2xi1>
}

// -----

// rotate_half needs an even last dim.
func.func @rotary_odd(%x: tensor<2x5xf32>, %c: tensor<5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{'otc.rotary' op the last dim of 'tensor<2x5xf32>' must be even and positive}}
  %y = otc.rotary %x, %c, %c : tensor<2x5xf32>, tensor<5xf32>, tensor<5xf32> -> tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

// cos and sin broadcast to x, not the other way.
func.func @rotary_broadcast(%x: tensor<2x4xf32>, %c: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'otc.rotary' op cos and sin must broadcast to 'tensor<2x4xf32>', not 'tensor<3x4xf32>'}}
  %y = otc.rotary %x, %c, %c : tensor<2x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Grouped queries: the query heads are a whole number of key heads.
func.func @attention_heads(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x4x8xf32>) -> tensor<1x3x4x8xf32> {
  // expected-error @+2 {{the query's 3 heads are not a multiple of the key's 2}}
  // expected-error @+1 {{'otc.attention' op failed to infer returned types}}
  %o, %s = otc.attention %q, %k, %k {scale = 1.0 : f64} : tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x3x4x8xf32>, tensor<1x3x4x2xf32>
  return %o : tensor<1x3x4x8xf32>
}

// -----

// In the [B, T, H, D] layout the heads are dim 2: a [1, 4, 3, 8] query has
// 3 heads, which 2 key heads do not divide.
func.func @attention_heads_bthd(%q: tensor<1x4x3x8xf32>, %k: tensor<1x4x2x8xf32>) -> tensor<1x4x3x8xf32> {
  // expected-error @+2 {{the query's 3 heads are not a multiple of the key's 2}}
  // expected-error @+1 {{'otc.attention' op failed to infer returned types}}
  %o, %s = otc.attention %q, %k, %k {scale = 1.0 : f64, layout = 1 : i32} : tensor<1x4x3x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32> -> tensor<1x4x3x8xf32>, tensor<1x3x4x2xf32>
  return %o : tensor<1x4x3x8xf32>
}

// -----

// A gradient whose row statistics are not [B, H, T, 2] of the bthd layout.
func.func @attention_grad_stats_bthd(%q: tensor<1x4x2x8xf32>, %st: tensor<1x4x2x2xf32>) -> tensor<1x4x2x8xf32> {
  // expected-error @+1 {{the row statistics must be 'tensor<1x2x4x2xf32>'}}
  %dq, %dk, %dv = otc.attention_grad %q, %q, %q, %q, %q, %st {scale = 1.0 : f64, layout = 1 : i32} : tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x2xf32> -> tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>
  return %dq : tensor<1x4x2x8xf32>
}

// -----

// Causal attention is over a square of queries and keys.
func.func @attention_causal(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x4x8xf32>) -> tensor<1x2x3x8xf32> {
  // expected-error @+2 {{causal attention needs as many queries as keys, not 3 and 4}}
  // expected-error @+1 {{'otc.attention' op failed to infer returned types}}
  %o, %s = otc.attention %q, %k, %k {scale = 1.0 : f64, causal = true} : tensor<1x2x3x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x3x8xf32>, tensor<1x2x3x2xf32>
  return %o : tensor<1x2x3x8xf32>
}

// -----

// An i1 mask says what masked scores become.
func.func @attention_fill(%q: tensor<1x2x4x8xf32>, %m: tensor<4x4xi1>) -> tensor<1x2x4x8xf32> {
  // expected-error @+2 {{an i1 mask needs a fill value}}
  // expected-error @+1 {{'otc.attention' op failed to infer returned types}}
  %o, %s = otc.attention %q, %q, %q mask %m {scale = 1.0 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xi1> -> tensor<1x2x4x8xf32>, tensor<1x2x4x2xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// The mask broadcasts to the scores.
func.func @attention_mask_shape(%q: tensor<1x2x4x8xf32>, %m: tensor<3x4xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+2 {{the mask 'tensor<3x4xf32>' does not broadcast to the scores [1, 2, 4, 4]}}
  // expected-error @+1 {{'otc.attention' op failed to infer returned types}}
  %o, %s = otc.attention %q, %q, %q mask %m {scale = 1.0 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<3x4xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x2xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// The gradient reads the forward's row statistics, two per row.
func.func @attention_grad_stats(%q: tensor<1x2x4x8xf32>, %st: tensor<1x2x4xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{'otc.attention_grad' op the row statistics must be 'tensor<1x2x4x2xf32>'}}
  %dq, %dk, %dv = otc.attention_grad %q, %q, %q, %q, %q, %st {scale = 1.0 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return %dq : tensor<1x2x4x8xf32>
}

// -----

// An LSTM's input holds four gates per hidden unit of the recurrence.
func.func @lstm_gates(%x: tensor<5x2x12xf32>, %r: tensor<16x4xf32>, %h: tensor<2x4xf32>) -> tensor<5x2x4xf32> {
  // expected-error @+2 {{the input 'tensor<5x2x12xf32>' and the recurrence 'tensor<16x4xf32>' must be [T, B, 4H] and [4H, H]}}
  // expected-error @+1 {{'otc.lstm' op failed to infer returned types}}
  %y, %c, %g = otc.lstm %x, %r, %h, %h : tensor<5x2x12xf32>, tensor<16x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<5x2x4xf32>, tensor<5x2x4xf32>, tensor<5x2x16xf32>
  return %y : tensor<5x2x4xf32>
}

// -----

// Under 16-bit storage the cell state stays float32.
func.func @lstm_cell_type(%x: tensor<5x2x16xbf16>, %r: tensor<16x4xbf16>, %h: tensor<2x4xbf16>) -> tensor<5x2x4xbf16> {
  // expected-error @+1 {{'otc.lstm' op the initial cell state must be 'tensor<2x4xf32>', not 'tensor<2x4xbf16>'}}
  %y, %c, %g = otc.lstm %x, %r, %h, %h : tensor<5x2x16xbf16>, tensor<16x4xbf16>, tensor<2x4xbf16>, tensor<2x4xbf16> -> tensor<5x2x4xbf16>, tensor<5x2x4xf32>, tensor<5x2x16xf32>
  return %y : tensor<5x2x4xbf16>
}

// -----

// Without linear_before_reset, the candidate's recurrent bias adds to the input.
func.func @gru_rbias(%x: tensor<5x2x12xf32>, %r: tensor<12x4xf32>, %h: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<5x2x4xf32> {
  // expected-error @+1 {{'otc.gru' op takes rbias only with linear_before_reset}}
  %y, %g = otc.gru %x, %r, %h rbias %b : tensor<5x2x12xf32>, tensor<12x4xf32>, tensor<2x4xf32>, tensor<4xf32> -> tensor<5x2x4xf32>, tensor<5x2x16xf32>
  return %y : tensor<5x2x4xf32>
}

// -----

// The gradient reads the gates the forward kept.
func.func @gru_grad_gates(%d: tensor<5x2x4xf32>, %r: tensor<12x4xf32>, %g: tensor<5x2x12xf32>, %h: tensor<2x4xf32>) -> tensor<5x2x12xf32> {
  // expected-error @+1 {{'otc.gru_grad' op the gates must be 'tensor<5x2x16xf32>', not 'tensor<5x2x12xf32>'}}
  %dx, %dh = otc.gru_grad %d, %r, %d, %g, %h : tensor<5x2x4xf32>, tensor<12x4xf32>, tensor<5x2x4xf32>, tensor<5x2x12xf32>, tensor<2x4xf32> -> tensor<5x2x12xf32>, tensor<2x4xf32>
  return %dx : tensor<5x2x12xf32>
}

// -----

// The Elman cell's recurrence is [H, H].
func.func @rnn_recurrence(%x: tensor<5x2x4xf32>, %r: tensor<8x4xf32>, %h: tensor<2x4xf32>) -> tensor<5x2x4xf32> {
  // expected-error @+2 {{the input 'tensor<5x2x4xf32>' and the recurrence 'tensor<8x4xf32>' must be [T, B, H] and [H, H]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %s = otc.rnn %x, %r, %h {activation = 0 : i32} : tensor<5x2x4xf32>, tensor<8x4xf32>, tensor<2x4xf32> -> tensor<5x2x4xf32>, tensor<5x2x4xf32>
  return %y : tensor<5x2x4xf32>
}

// -----

// In bf16 the gradient reads the float32 states the forward kept.
func.func @rnn_grad_states(%d: tensor<5x2x4xbf16>, %r: tensor<4x4xbf16>) -> tensor<5x2x4xbf16> {
  // expected-error @+1 {{'otc.rnn_grad' op the states must be 'tensor<5x2x4xf32>', not 'tensor<5x2x4xbf16>'}}
  %dx, %dh = otc.rnn_grad %d, %r, %d {activation = 1 : i32} : tensor<5x2x4xbf16>, tensor<4x4xbf16>, tensor<5x2x4xbf16> -> tensor<5x2x4xbf16>, tensor<2x4xbf16>
  return %dx : tensor<5x2x4xbf16>
}

// -----

// A bias gradient is as long as op(A)'s rows (bias_of = a) or op(B)'s columns.
func.func @gemm_bias_grad_length(%x: tensor<6x8xf32>, %g: tensor<6x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'otc.gemm_bias_grad' op bias gradient must be 1-D of 8, got 'tensor<16xf32>'}}
  %dw, %db = otc.gemm_bias_grad %x, %g {bias_of = 0 : i32, trans_a = true} : (tensor<6x8xf32>, tensor<6x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>)
  return %dw : tensor<8x16xf32>
}

// -----

// Its results have the operands' type or f32, one type for both.
func.func @gemm_bias_grad_types(%x: tensor<6x8xbf16>, %g: tensor<6x16xbf16>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'otc.gemm_bias_grad' op the bias gradient's type 'bf16' differs from the weight gradient's 'f32'}}
  %dw, %db = otc.gemm_bias_grad %x, %g {bias_of = 1 : i32, trans_a = true} : (tensor<6x8xbf16>, tensor<6x16xbf16>) -> (tensor<8x16xf32>, tensor<16xbf16>)
  return %dw : tensor<8x16xf32>
}

// -----

func.func @gemm_bias_grad_contraction(%x: tensor<6x8xf32>, %g: tensor<5x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'otc.gemm_bias_grad' op contraction sizes differ: 6 vs 5}}
  %dw, %db = otc.gemm_bias_grad %x, %g {bias_of = 1 : i32, trans_a = true} : (tensor<6x8xf32>, tensor<5x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>)
  return %dw : tensor<8x16xf32>
}

// -----

func.func @gemm_gelu_bias(%x: tensor<6x8xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) -> tensor<6x16xf32> {
  // expected-error @+1 {{'otc.gemm_gelu' op bias must be 'tensor<16xf32>', got 'tensor<8xf32>'}}
  %y, %p = otc.gemm_gelu %x, %w, %b : (tensor<6x8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> (tensor<6x16xf32>, tensor<6x16xf32>)
  return %y : tensor<6x16xf32>
}

// -----

func.func @gemm_dgelu_pre(%x: tensor<6x8xf32>, %w: tensor<8x16xf32>, %p: tensor<6x8xf32>) -> tensor<6x16xf32> {
  // expected-error @+1 {{'otc.gemm_dgelu' op the result and the preactivation must both be 'tensor<6x16xf32>'}}
  %d = otc.gemm_dgelu %x, %w, %p : (tensor<6x8xf32>, tensor<8x16xf32>, tensor<6x8xf32>) -> tensor<6x16xf32>
  return %d : tensor<6x16xf32>
}

// -----

func.func @layer_norm_scale_shape(%x: tensor<2x8xf32>, %w: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{scale and bias must be 'tensor<8xf32>', the input's dims from axis 1 on, not 'tensor<2x8xf32>'}}
  %y, %m, %r = otc.layer_norm %x, %w {axis = 1 : i64, epsilon = 1.0e-5 : f64} : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x1xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @layer_norm_bias_type(%x: tensor<2x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf16>) -> tensor<2x8xf32> {
  // expected-error @+1 {{scale and bias must be 'tensor<8xf32>', the input's dims from axis 1 on, not 'tensor<8xf16>'}}
  %y, %m, %r = otc.layer_norm %x, %w, %b {axis = 1 : i64, epsilon = 1.0e-5 : f64} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf16> -> tensor<2x1xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @layer_norm_axis(%x: tensor<2x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{axis 2 is outside [0, 2)}}
  %y, %m, %r = otc.layer_norm %x, %w {axis = 2 : i64, epsilon = 1.0e-5 : f64} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x1xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @layer_norm_stats(%x: tensor<2x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{the row statistics must be 'tensor<2x1xf32>', not 'tensor<2x8xf32>'}}
  %y, %m, %r = otc.layer_norm %x, %w {axis = 1 : i64, epsilon = 1.0e-5 : f64} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @conv_groups(%x: tensor<2x6x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{groups 2 do not split 6 input channels and 4 filters of 4 channels}}
  %y = otc.conv %x, %w {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : tensor<2x6x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}

// -----

func.func @conv_kernel(%x: tensor<2x6x8x8xf32>, %w: tensor<4x6x3x3xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{kernel does not match the weight's KH x KW}}
  %y = otc.conv %x, %w {kernel = array<i64: 3, 2>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<2x6x8x8xf32>, tensor<4x6x3x3xf32> -> tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}

// -----

func.func @conv_output_size(%x: tensor<2x6x8x8xf32>, %w: tensor<4x6x3x3xf32>) -> tensor<2x4x7x8xf32> {
  // expected-error @+1 {{output size 7 does not follow from the geometry (8)}}
  %y = otc.conv %x, %w {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<2x6x8x8xf32>, tensor<4x6x3x3xf32> -> tensor<2x4x7x8xf32>
  return %y : tensor<2x4x7x8xf32>
}

// -----

func.func @conv_filters(%x: tensor<2x6x8x8xf32>, %w: tensor<4x6x3x3xf32>) -> tensor<2x5x8x8xf32> {
  // expected-error @+1 {{output 'tensor<2x5x8x8xf32>' does not match the input 'tensor<2x6x8x8xf32>' and weight 'tensor<4x6x3x3xf32>'}}
  %y = otc.conv %x, %w {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<2x6x8x8xf32>, tensor<4x6x3x3xf32> -> tensor<2x5x8x8xf32>
  return %y : tensor<2x5x8x8xf32>
}

// -----

func.func @conv_types(%dy: tensor<2x4x8x8xbf16>, %w: tensor<4x6x3x3xf32>) -> tensor<2x6x8x8xbf16> {
  // expected-error @+1 {{input, weight and output element types differ}}
  %dx = otc.conv_data_grad %dy, %w {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<2x4x8x8xbf16>, tensor<4x6x3x3xf32> -> tensor<2x6x8x8xbf16>
  return %dx : tensor<2x6x8x8xbf16>
}

// -----

func.func @conv_filter_rank(%dy: tensor<2x4x8x8xf32>, %x: tensor<2x6x8x8xf32>) -> tensor<4x54xf32> {
  // expected-error @+1 {{needs an N x C x H x W image, an M x C/G x KH x KW weight and an N x M x OH x OW output}}
  %dw = otc.conv_filter_grad %dy, %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<2x4x8x8xf32>, tensor<2x6x8x8xf32> -> tensor<4x54xf32>
  return %dw : tensor<4x54xf32>
}

// -----

func.func @cross_entropy_with_grad_types(%s: tensor<f32>, %x: tensor<4x8xbf16>, %y: tensor<4xi64>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{seed, loss and logits element types differ}}
  %l, %g = otc.softmax_cross_entropy_with_grad %s, %x, %y : tensor<f32>, tensor<4x8xbf16>, tensor<4xi64> -> tensor<bf16>, tensor<4x8xbf16>
  return %g : tensor<4x8xbf16>
}

// -----

func.func @cross_entropy_with_grad_rows(%s: tensor<f32>, %x: tensor<4x8xf32>, %y: tensor<3xi64>) -> tensor<4x8xf32> {
  // expected-error @+1 {{softmax cross-entropy needs [N, C] logits and [N] labels, got 'tensor<4x8xf32>' and 'tensor<3xi64>'}}
  %l, %g = otc.softmax_cross_entropy_with_grad %s, %x, %y : tensor<f32>, tensor<4x8xf32>, tensor<3xi64> -> tensor<f32>, tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}

// -----

func.func @batch_norm_stats(%x: tensor<4x3x2xf32>, %w: tensor<3xf32>) -> tensor<4x3x2xf32> {
  // expected-error @+1 {{the channel statistics must be 'tensor<1x3x1xf32>', not 'tensor<1x3xf32>'}}
  %y, %m, %v = otc.batch_norm %x, %w, %w {epsilon = 1.0e-5 : f64} : tensor<4x3x2xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<1x3xf32>
  return %y : tensor<4x3x2xf32>
}

// -----

func.func @batch_norm_scale(%x: tensor<4x3x2xf32>, %w: tensor<2xf32>) -> tensor<4x3x2xf32> {
  // expected-error @+1 {{scale and bias must be 'tensor<3xf32>', one per channel}}
  %y, %m, %v = otc.batch_norm %x, %w, %w {epsilon = 1.0e-5 : f64} : tensor<4x3x2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x3x1xf32>
  return %y : tensor<4x3x2xf32>
}

// -----

func.func @batch_norm_low_stats(%x: tensor<4x3x2xbf16>, %w: tensor<3xf32>) -> tensor<4x3x2xbf16> {
  // expected-error @+1 {{the channel statistics must be 'tensor<1x3x1xf32>', not 'tensor<1x3x1xbf16>'}}
  %y, %m, %v = otc.batch_norm %x, %w, %w {epsilon = 1.0e-5 : f64} : tensor<4x3x2xbf16>, tensor<3xf32>, tensor<3xf32> -> tensor<1x3x1xbf16>
  return %y : tensor<4x3x2xbf16>
}

// -----

func.func @batch_norm_grad_shape(%g: tensor<4x2xf32>, %x: tensor<4x3xbf16>, %m: tensor<1x3xf32>) -> tensor<4x3xbf16> {
  // expected-error @+1 {{the gradient must have the input's shape 'tensor<4x3xbf16>'}}
  %dx = otc.batch_norm_grad %g, %x, %m, %m {epsilon = 1.0e-5 : f64} : tensor<4x2xf32>, tensor<4x3xbf16>, tensor<1x3xf32>
  return %dx : tensor<4x3xbf16>
}

// -----

func.func @batch_norm_epsilon(%g: tensor<4x3xf32>, %m: tensor<1x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{epsilon must not be negative}}
  %dx = otc.batch_norm_grad %g, %g, %m, %m {epsilon = -1.0 : f64} : tensor<4x3xf32>, tensor<4x3xf32>, tensor<1x3xf32>
  return %dx : tensor<4x3xf32>
}
