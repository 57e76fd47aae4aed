// RUN: otc-opt %s --otc-fuse-attention --split-input-file | FileCheck %s

// GPT-2's export: k transposed from its [B, T, H, D] view, the scale as
// sqrt(d) built from constants, a causal i1 constant with finfo.min.
// CHECK-LABEL: func.func @gpt2
// CHECK-DAG: %[[Q:.*]] = otc.transpose %arg0 [0, 2, 1, 3]
// CHECK-DAG: %[[K:.*]] = otc.transpose %arg1 [0, 2, 1, 3]
// CHECK-DAG: %[[V:.*]] = otc.transpose %arg2 [0, 2, 1, 3]
// CHECK: %[[O:.*]], %{{.*}} = otc.attention %[[Q]], %[[K]], %[[V]] {causal = true, scale = 5.000000e-01 : f64}
// CHECK-SAME: -> tensor<2x2x3x4xf32>, tensor<2x2x3x2xf32>
// CHECK-NOT: otc.softmax
// CHECK: return %[[O]]
func.func @gpt2(%q: tensor<2x3x2x4xf32>, %k: tensor<2x3x2x4xf32>, %v: tensor<2x3x2x4xf32>) -> tensor<2x2x3x4xf32> {
  %qt = otc.transpose %q [0, 2, 1, 3] : tensor<2x3x2x4xf32> -> tensor<2x2x3x4xf32>
  %kt = otc.transpose %k [0, 2, 3, 1] : tensor<2x3x2x4xf32> -> tensor<2x2x4x3xf32>
  %vt = otc.transpose %v [0, 2, 1, 3] : tensor<2x3x2x4xf32> -> tensor<2x2x3x4xf32>
  %s = otc.matmul %qt, %kt : tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32> -> tensor<2x2x3x3xf32>
  %d = otc.constant dense<4.0> : tensor<f32>
  %r = otc.pow %d {exponent = 5.000000e-01 : f64} : tensor<f32>
  %z = otc.constant dense<0.0> : tensor<f32>
  %c = otc.add %z, %r : tensor<f32>, tensor<f32> -> tensor<f32>
  %x = otc.div %s, %c : tensor<2x2x3x3xf32>, tensor<f32> -> tensor<2x2x3x3xf32>
  %m = otc.constant dense<[[[[true, false, false], [true, true, false], [true, true, true]]]]> : tensor<1x1x3x3xi1>
  %f = otc.constant dense<-3.40282347E+38> : tensor<f32>
  %w = otc.where %m, %x, %f : tensor<1x1x3x3xi1>, tensor<2x2x3x3xf32>, tensor<f32> -> tensor<2x2x3x3xf32>
  %p = otc.softmax %w {axis = 3 : i64} : tensor<2x2x3x3xf32>
  %o = otc.matmul %p, %vt : tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32> -> tensor<2x2x3x4xf32>
  return %o : tensor<2x2x3x4xf32>
}

// -----

// BERT's padding mask, added: it stays an operand, in its own shape.
// CHECK-LABEL: func.func @bert
// CHECK: %[[K:.*]] = otc.transpose %arg1 [0, 1, 3, 2]
// CHECK: otc.attention %arg0, %[[K]], %arg2 mask %arg3 {scale = 2.500000e-01 : f64}
// CHECK-SAME: tensor<2x1x1x3xf32> -> tensor<2x2x3x4xf32>, tensor<2x2x3x2xf32>
func.func @bert(%q: tensor<2x2x3x4xf32>, %kt: tensor<2x2x4x3xf32>, %v: tensor<2x2x3x4xf32>,
                %mask: tensor<2x1x1x3xf32> {otc.input = "mask"}) -> tensor<2x2x3x4xf32> {
  %s = otc.matmul %q, %kt : tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32> -> tensor<2x2x3x3xf32>
  %c = otc.constant dense<0.25> : tensor<f32>
  %x = otc.mul %c, %s : tensor<f32>, tensor<2x2x3x3xf32> -> tensor<2x2x3x3xf32>
  %a = otc.add %x, %mask : tensor<2x2x3x3xf32>, tensor<2x1x1x3xf32> -> tensor<2x2x3x3xf32>
  %p = otc.softmax %a {axis = 3 : i64} : tensor<2x2x3x3xf32>
  %o = otc.matmul %p, %v : tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32> -> tensor<2x2x3x4xf32>
  return %o : tensor<2x2x3x4xf32>
}

// -----

// LLaMA's grouped-query attention: keys and values repeated by repeat_kv
// (unsqueeze, expand, reshape) are read unrepeated; the additive causal
// constant (0 on and below the diagonal, finfo.min above) is the flag.
// CHECK-LABEL: func.func @llama_gqa
// CHECK: otc.attention %arg0, %arg1, %arg2 {causal = true, scale = 5.000000e-01 : f64}
// CHECK-SAME: : tensor<1x4x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x4x3x4xf32>
func.func @llama_gqa(%q: tensor<1x4x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x4x3x4xf32> {
  %k1 = otc.reshape %k : tensor<1x2x3x4xf32> -> tensor<1x2x1x3x4xf32>
  %k2 = otc.broadcast_to %k1 : tensor<1x2x1x3x4xf32> -> tensor<1x2x2x3x4xf32>
  %k3 = otc.reshape %k2 : tensor<1x2x2x3x4xf32> -> tensor<1x4x3x4xf32>
  %v1 = otc.reshape %v : tensor<1x2x3x4xf32> -> tensor<1x2x1x3x4xf32>
  %v2 = otc.broadcast_to %v1 : tensor<1x2x1x3x4xf32> -> tensor<1x2x2x3x4xf32>
  %v3 = otc.reshape %v2 : tensor<1x2x2x3x4xf32> -> tensor<1x4x3x4xf32>
  %kt = otc.transpose %k3 [0, 1, 3, 2] : tensor<1x4x3x4xf32> -> tensor<1x4x4x3xf32>
  %s = otc.matmul %q, %kt : tensor<1x4x3x4xf32>, tensor<1x4x4x3xf32> -> tensor<1x4x3x3xf32>
  %c = otc.constant dense<2.0> : tensor<f32>
  %x = otc.div %s, %c : tensor<1x4x3x3xf32>, tensor<f32> -> tensor<1x4x3x3xf32>
  %m = otc.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0]]]]> : tensor<1x1x3x3xf32>
  %a = otc.add %x, %m : tensor<1x4x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x4x3x3xf32>
  %p = otc.softmax %a {axis = 3 : i64} : tensor<1x4x3x3xf32>
  %o = otc.matmul %p, %v3 : tensor<1x4x3x3xf32>, tensor<1x4x3x4xf32> -> tensor<1x4x3x4xf32>
  return %o : tensor<1x4x3x4xf32>
}

// -----

// BART's and Whisper's: [B H, T, S] products, the mask added in the
// [B, H, T, S] view between reshapes; q and k both scaled first (Whisper).
// CHECK-LABEL: func.func @bart
// CHECK-DAG: %[[Q:.*]] = otc.reshape %arg0 : tensor<4x3x4xf32> -> tensor<2x2x3x4xf32>
// CHECK-DAG: %[[K:.*]] = otc.reshape %arg1 : tensor<4x3x4xf32> -> tensor<2x2x3x4xf32>
// CHECK-DAG: %[[V:.*]] = otc.reshape %arg2 : tensor<4x3x4xf32> -> tensor<2x2x3x4xf32>
// CHECK: %[[O:.*]], %{{.*}} = otc.attention %[[Q]], %[[K]], %[[V]] mask %arg3 {scale = 2.500000e-01 : f64}
// CHECK: %[[R:.*]] = otc.reshape %[[O]] : tensor<2x2x3x4xf32> -> tensor<4x3x4xf32>
// CHECK: return %[[R]]
func.func @bart(%q: tensor<4x3x4xf32>, %k: tensor<4x3x4xf32>, %v: tensor<4x3x4xf32>,
                %mask: tensor<2x1x3x3xf32> {otc.input = "mask"}) -> tensor<4x3x4xf32> {
  %c = otc.constant dense<0.5> : tensor<f32>
  %qs = otc.mul %q, %c : tensor<4x3x4xf32>, tensor<f32> -> tensor<4x3x4xf32>
  %ks = otc.mul %k, %c : tensor<4x3x4xf32>, tensor<f32> -> tensor<4x3x4xf32>
  %kt = otc.transpose %ks [0, 2, 1] : tensor<4x3x4xf32> -> tensor<4x4x3xf32>
  %s = otc.matmul %qs, %kt : tensor<4x3x4xf32>, tensor<4x4x3xf32> -> tensor<4x3x3xf32>
  %s4 = otc.reshape %s : tensor<4x3x3xf32> -> tensor<2x2x3x3xf32>
  %a = otc.add %s4, %mask : tensor<2x2x3x3xf32>, tensor<2x1x3x3xf32> -> tensor<2x2x3x3xf32>
  %a3 = otc.reshape %a : tensor<2x2x3x3xf32> -> tensor<4x3x3xf32>
  %p = otc.softmax %a3 {axis = 2 : i64} : tensor<4x3x3xf32>
  %o = otc.matmul %p, %v : tensor<4x3x3xf32>, tensor<4x3x4xf32> -> tensor<4x3x4xf32>
  return %o : tensor<4x3x4xf32>
}

// -----

// DistilBERT's: q divided before the product, where(is_pad, fill, scores):
// kept where the condition is false. A fill above -1e30 keeps the causal
// i1 pattern a mask, since its probabilities need not be 0.
// CHECK-LABEL: func.func @distilbert
// CHECK: %[[N:.*]] = otc.not %arg3 : tensor<2x1x1x3xi1>
// CHECK: otc.attention %arg0, %{{.*}}, %arg2 mask %[[N]] {fill = -1.000000e+04 : f64, scale = 5.000000e-01 : f64}
// CHECK-LABEL: func.func @small_fill
// CHECK: otc.attention %arg0, %{{.*}}, %arg2 mask %{{.*}} {fill = -1.000000e+04 : f64, scale = 1.000000e+00 : f64}
// CHECK-SAME: tensor<1x1x3x3xi1>
func.func @distilbert(%q: tensor<2x2x3x4xf32>, %kt: tensor<2x2x4x3xf32>, %v: tensor<2x2x3x4xf32>,
                      %pad: tensor<2x1x1x3xi1> {otc.input = "pad"}) -> tensor<2x2x3x4xf32> {
  %c = otc.constant dense<2.0> : tensor<f32>
  %qs = otc.div %q, %c : tensor<2x2x3x4xf32>, tensor<f32> -> tensor<2x2x3x4xf32>
  %s = otc.matmul %qs, %kt : tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32> -> tensor<2x2x3x3xf32>
  %f = otc.constant dense<-1.0e4> : tensor<f32>
  %w = otc.where %pad, %f, %s : tensor<2x1x1x3xi1>, tensor<f32>, tensor<2x2x3x3xf32> -> tensor<2x2x3x3xf32>
  %p = otc.softmax %w {axis = 3 : i64} : tensor<2x2x3x3xf32>
  %o = otc.matmul %p, %v : tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32> -> tensor<2x2x3x4xf32>
  return %o : tensor<2x2x3x4xf32>
}
func.func @small_fill(%q: tensor<1x1x3x4xf32>, %kt: tensor<1x1x4x3xf32>, %v: tensor<1x1x3x4xf32>) -> tensor<1x1x3x4xf32> {
  %s = otc.matmul %q, %kt : tensor<1x1x3x4xf32>, tensor<1x1x4x3xf32> -> tensor<1x1x3x3xf32>
  %m = otc.constant dense<[[[[true, false, false], [true, true, false], [true, true, true]]]]> : tensor<1x1x3x3xi1>
  %f = otc.constant dense<-1.0e4> : tensor<f32>
  %w = otc.where %m, %s, %f : tensor<1x1x3x3xi1>, tensor<1x1x3x3xf32>, tensor<f32> -> tensor<1x1x3x3xf32>
  %p = otc.softmax %w {axis = 3 : i64} : tensor<1x1x3x3xf32>
  %o = otc.matmul %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x4xf32> -> tensor<1x1x3x4xf32>
  return %o : tensor<1x1x3x4xf32>
}

// -----

// nanoGPT's: the mask a buffer (a parameter as imported) read through a
// comparison, which passes it no gradient, filled with -inf.
// CHECK-LABEL: func.func @nanogpt
// CHECK: %[[C:.*]] = otc.compare eq, %arg3
// CHECK: %[[N:.*]] = otc.not %[[C]]
// CHECK: otc.attention %arg0, %{{.*}}, %arg2 mask %[[N]] {fill = 0xFFF0000000000000 : f64
func.func @nanogpt(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>,
                   %bias: tensor<1x1x3x3xf32> {otc.param = "bias", otc.trainable}) -> tensor<1x2x3x4xf32> {
  %s = otc.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %z = otc.constant dense<0.0> : tensor<f32>
  %c = otc.compare eq, %bias, %z : tensor<1x1x3x3xf32>, tensor<f32> -> tensor<1x1x3x3xi1>
  %f = otc.constant dense<0xFF800000> : tensor<f32>
  %w = otc.where %c, %f, %s : tensor<1x1x3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %p = otc.softmax %w {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = otc.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// Left as they are: a trained bias (T5's, Swin's relative positions),
// dropout on the probabilities, probabilities returned too, two masks (the
// op has one; a causal constant beside a padding mask is not the flag, since
// a row padded up to t is uniform over every score at the fill), and a
// softmax over another axis.
// CHECK-LABEL: func.func @trained_bias
// CHECK-NOT: otc.attention
// CHECK-LABEL: func.func @dropout
// CHECK-NOT: otc.attention
// CHECK-LABEL: func.func @probabilities_returned
// CHECK-NOT: otc.attention
// CHECK-LABEL: func.func @where_inside_add
// CHECK-NOT: otc.attention
// CHECK-LABEL: func.func @other_axis
// CHECK-NOT: otc.attention
// CHECK-LABEL: func.func @where_outside_add
// CHECK-NOT: otc.attention
// CHECK-LABEL: func.func @causal_and_padding
// CHECK-NOT: otc.attention
func.func @trained_bias(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>,
                        %b: tensor<1x2x3x3xf32> {otc.param = "bias", otc.trainable}) -> tensor<1x2x3x4xf32> {
  %s = otc.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %r = otc.reshape %b : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %a = otc.add %s, %r : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %p = otc.softmax %a {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = otc.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}
func.func @dropout(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %s = otc.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %p = otc.softmax %s {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %d, %m = otc.dropout %p {ratio = 0.1 : f64, stream = 1 : i64} : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>, tensor<1x2x3x3xi1>
  %o = otc.matmul %d, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}
func.func @probabilities_returned(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>)
    -> (tensor<1x2x3x4xf32>, tensor<1x2x3x3xf32>) {
  %s = otc.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %p = otc.softmax %s {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = otc.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o, %p : tensor<1x2x3x4xf32>, tensor<1x2x3x3xf32>
}
func.func @where_inside_add(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>,
                            %keep: tensor<1x1x3x3xi1> {otc.input = "keep"},
                            %bias: tensor<1x1x1x3xf32> {otc.input = "bias"}) -> tensor<1x2x3x4xf32> {
  %s = otc.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %f = otc.constant dense<-3.40282347E+38> : tensor<f32>
  %w = otc.where %keep, %s, %f : tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
  %a = otc.add %w, %bias : tensor<1x2x3x3xf32>, tensor<1x1x1x3xf32> -> tensor<1x2x3x3xf32>
  %p = otc.softmax %a {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = otc.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}
func.func @other_axis(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %s = otc.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %p = otc.softmax %s {axis = 2 : i64} : tensor<1x2x3x3xf32>
  %o = otc.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}
func.func @where_outside_add(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>,
                             %keep: tensor<1x1x3x3xi1> {otc.input = "keep"},
                             %bias: tensor<1x1x1x3xf32> {otc.input = "bias"}) -> tensor<1x2x3x4xf32> {
  %s = otc.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %a = otc.add %s, %bias : tensor<1x2x3x3xf32>, tensor<1x1x1x3xf32> -> tensor<1x2x3x3xf32>
  %f = otc.constant dense<-3.40282347E+38> : tensor<f32>
  %w = otc.where %keep, %a, %f : tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
  %p = otc.softmax %w {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = otc.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}
func.func @causal_and_padding(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>,
                              %pad: tensor<1x1x1x3xf32> {otc.input = "pad"}) -> tensor<1x2x3x4xf32> {
  %s = otc.matmul %q, %kt : tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32> -> tensor<1x2x3x3xf32>
  %m = otc.constant dense<[[[[true, false, false], [true, true, false], [true, true, true]]]]> : tensor<1x1x3x3xi1>
  %f = otc.constant dense<-3.40282347E+38> : tensor<f32>
  %w = otc.where %m, %s, %f : tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
  %a = otc.add %w, %pad : tensor<1x2x3x3xf32>, tensor<1x1x1x3xf32> -> tensor<1x2x3x3xf32>
  %p = otc.softmax %a {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = otc.matmul %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// masked_fill(tril == 0, -inf) of a constant tril (a bool or integer
// buffer, folded at import): where(masked, fill, scores) of the inverted
// causal pattern is the causal flag too.
// CHECK-LABEL: func.func @inverted_causal
// CHECK: otc.attention %arg0, %{{.*}}, %arg2 {causal = true, scale = 1.000000e+00 : f64}
// CHECK-NOT: otc.not
func.func @inverted_causal(%q: tensor<1x1x3x4xf32>, %kt: tensor<1x1x4x3xf32>, %v: tensor<1x1x3x4xf32>) -> tensor<1x1x3x4xf32> {
  %s = otc.matmul %q, %kt : tensor<1x1x3x4xf32>, tensor<1x1x4x3xf32> -> tensor<1x1x3x3xf32>
  %m = otc.constant dense<[[[[false, true, true], [false, false, true], [false, false, false]]]]> : tensor<1x1x3x3xi1>
  %f = otc.constant dense<0xFF800000> : tensor<f32>
  %w = otc.where %m, %f, %s : tensor<1x1x3x3xi1>, tensor<f32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %p = otc.softmax %w {axis = 3 : i64} : tensor<1x1x3x3xf32>
  %o = otc.matmul %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x4xf32> -> tensor<1x1x3x4xf32>
  return %o : tensor<1x1x3x4xf32>
}
