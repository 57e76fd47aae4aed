#ifndef OTC_PASSES
#define OTC_PASSES

include "mlir/Pass/PassBase.td"

def Autodiff : Pass<"otc-autodiff", "mlir::ModuleOp"> {
  let summary = "Appends the backward pass to each function that returns a loss";
  let description = [{
    For each `func.func` with a result marked `otc.loss`, differentiates the
    loss with respect to every argument marked `otc.trainable`, walking the
    body in reverse and asking each operation's `GradientOpInterface` for its
    vector-Jacobian product. Gradients of values used more than once are
    summed.

    The gradient seeded at the loss is a new scalar argument marked
    `otc.loss_seed` rather than the constant 1, so the runtime can fold the
    1/K accumulation factor (and later a loss scale) into it. Each parameter
    gradient becomes a new result marked `otc.grad_of = N`, N being the
    parameter's argument index (a binding, not a name to match).

    ```mlir
    func.func @step(%x: tensor<2x4xf32> {otc.input = "x"},
                    %w: tensor<4x1xf32> {otc.param = "w", otc.trainable})
        -> (tensor<f32> {otc.loss})
    // becomes
    func.func @step(%x: ..., %w: ..., %seed: tensor<f32> {otc.loss_seed})
        -> (tensor<f32> {otc.loss}, tensor<4x1xf32> {otc.grad_of = 1 : i64})
    ```
  }];
  let dependentDialects = ["otc::OtcDialect"];
}

def InsertLora : Pass<"otc-insert-lora", "mlir::ModuleOp"> {
  let summary = "Inserts LoRA adapters at matched matrix products and freezes their weights";
  let description = [{
    At each `otc.matmul` whose right operand is a trained 2-D parameter W
    (or `otc.transpose` of one, as PyTorch's Linear exports) whose name
    matches `targets`, adds two trained parameters A [rank, in] and B
    [out, rank] and the term ((x·Aᵀ)·Bᵀ)·(alpha/rank) to the product; every
    other parameter loses `otc.trainable` (PEFT freezes the whole base). A and B carry `otc.lora_init` (the runtime
    initialises them: A Kaiming-uniform, B zero, as PEFT), and their base,
    scale and orientation for merging at save. With `dropout` > 0 the
    adapter reads `otc.dropout` of x (PEFT's lora_dropout: the base product
    sees x itself), its stream named after the weight. Run before autodiff.

    ```mlir
    %wt = otc.transpose %w [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
    %y = otc.matmul %x, %wt : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    // with rank 2 becomes, with %a: tensor<2x8xf32> and %b: tensor<16x2xf32>
    %xa = otc.matmul %x, %at : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
    %xab = otc.matmul %xa, %bt : tensor<4x2xf32>, tensor<2x16xf32> -> tensor<4x16xf32>
    %s = otc.mul %xab, %scale : tensor<4x16xf32>, tensor<f32> -> tensor<4x16xf32>
    %y2 = otc.add %y, %s : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
    ```
  }];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"0", "Adapter rank (0: no adapters)">,
    Option<"alpha", "alpha", "double", /*default=*/"1.0", "Scale numerator: alpha / rank">,
    Option<"targets", "targets", "std::string", /*default=*/"\".*\"",
           "Regex over parameter names of the adapted weights">,
    Option<"dropout", "dropout", "double", /*default=*/"0.0",
           "Dropout probability on each adapter's input (PEFT's lora_dropout)">,
  ];
  let dependentDialects = ["otc::OtcDialect", "mlir::func::FuncDialect"];
}

def FuseRotary : Pass<"otc-fuse-rotary", "mlir::ModuleOp"> {
  let summary = "Forms otc.rotary from the exported rotary position embedding";
  let description = [{
    LLaMA-style models apply rotary embeddings as `x * cos + rotate_half(x)
    * sin`, with `rotate_half(x) = cat(-x[..., h:], x[..., :h])`, which
    exports as two Slices, a Neg, a Concat, two Muls and an Add. This pass
    matches that pattern (operands of the Muls and the Add in either order;
    cos and sin broadcasting to x) and replaces it with one `otc.rotary`,
    whose gradient is the same op transposed. Run before autodiff, so the
    backward sees the fused op.

    ```mlir
    %x1 = otc.slice %x [0, 0] [1, 1] : tensor<6x8xf32> -> tensor<6x4xf32>
    %x2 = otc.slice %x [0, 4] [1, 1] : tensor<6x8xf32> -> tensor<6x4xf32>
    %n = otc.neg %x2 : tensor<6x4xf32>
    %r = otc.concat %n, %x1 {axis = 1 : i64} : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<6x8xf32>
    %a = otc.mul %x, %cos : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
    %b = otc.mul %r, %sin : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
    %y = otc.add %a, %b : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
    // becomes
    %y = otc.rotary %x, %cos, %sin : tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>
        -> tensor<6x8xf32>
    ```
  }];
  let dependentDialects = ["otc::OtcDialect"];
}

def FuseAttention : Pass<"otc-fuse-attention", "mlir::ModuleOp"> {
  let summary = "Forms otc.attention from exported scaled dot-product attention";
  let description = [{
    Exported attention is `MatMul(q, kᵀ)`, an optional scale (a Mul or Div
    by a constant scalar, sqrt(d) built from constants included), an
    optional additive mask or `Where(mask, scores, fill)` (one of them), a
    Softmax over the last dim and a `MatMul` with v, on [B, H, T, D] or
    [N, T, D] operands. This pass replaces it with one `otc.attention`,
    which keeps nothing T x S and whose gradient recomputes the
    probabilities. Keys and values repeated for grouped-query attention
    (Hugging Face's repeat_kv: Unsqueeze, Expand, Reshape) are read
    unrepeated. A constant mask that is the causal pattern (True, or 0,
    where s <= t; False, or -1e30 and below, elsewhere) becomes the
    `causal` flag when it is the only mask: beside a padding mask, a row
    padded up to t would be uniform over other scores than the unfused
    softmax's, so two masks stay unfused.

    Left unfused, and so still correct: a mask that a trained parameter
    reaches (T5's relative position bias, ALiBi learned slopes), dropout on
    the probabilities, probabilities used elsewhere (returned attentions),
    and two masks.

    ```mlir
    %s = otc.matmul %q, %kt : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x8x8xf32>
    %c = otc.constant dense<4.0> : tensor<f32>
    %d = otc.div %s, %c : tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xf32>
    %m = otc.add %d, %mask : tensor<2x4x8x8xf32>, tensor<2x1x1x8xf32> -> tensor<2x4x8x8xf32>
    %p = otc.softmax %m {axis = 3 : i64} : tensor<2x4x8x8xf32>
    %o = otc.matmul %p, %v : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
    // becomes
    %k = otc.transpose %kt [0, 1, 3, 2] : tensor<2x4x16x8xf32> -> tensor<2x4x8x16xf32>
    %o, %stats = otc.attention %q, %k, %v mask %mask {scale = 2.5e-01 : f64}
        : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>,
          tensor<2x1x1x8xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8x2xf32>
    ```
  }];
  let dependentDialects = ["otc::OtcDialect"];
}

def AttentionLayout : Pass<"otc-attention-layout", "mlir::ModuleOp"> {
  let summary = "Attention reads and writes the projections' [B, T, H, D] layout";
  let description = [{
    Exported attention splits each projection [B, T, H·D] into heads,
    [B, T, H, D], and transposes it to [B, H, T, D] for the products; the
    result is transposed back before the output projection. Each
    transpose is a pass over memory, and so is each transpose of their
    gradients. This pass gives `otc.attention` whose query, key and value
    are all such transposes `layout = bthd`: it reads the untransposed
    tensors, and a reader of its result that transposed it back reads it
    as it is (another reader gets one transpose). Its gradient inherits
    the layout. The kernels index [B, T, H, D] directly, and cuDNN is
    given the strides. Run after otc-fuse-attention, before autodiff.

    ```mlir
    %q = otc.transpose %x [0, 2, 1, 3] : tensor<2x8x4x16xbf16> -> tensor<2x4x8x16xbf16>
    ... %k, %v alike
    %o, %s = otc.attention %q, %k, %v {scale = 0.25 : f64, causal = true} : ...
    %y = otc.transpose %o [0, 2, 1, 3] : tensor<2x4x8x16xbf16> -> tensor<2x8x4x16xbf16>
    // becomes
    %y, %s = otc.attention %x, %xk, %xv {scale = 0.25 : f64, causal = true, layout = 1 : i32}
        : tensor<2x8x4x16xbf16>, ... -> tensor<2x8x4x16xbf16>, tensor<2x4x8x2xf32>
    ```
  }];
  let dependentDialects = ["otc::OtcDialect"];
}

def DemoteFloat64 : Pass<"otc-demote-float64", "mlir::ModuleOp"> {
  let summary = "Computes a float32 model's float64 intermediates in float32";
  let description = [{
    PyTorch's exporter writes float64 where a Python float meets a tensor
    in a traced expression: LongT5's local attention mask,
    `torch.where(mask > 0, 0.0, -1e10)`, is a Where of two float64
    constants, added to a value cast to float64 and cast back to float32.
    Neither target has float64 kernels. In a function none of whose
    arguments and results is float64, every float64 tensor becomes float32:
    constants round to nearest, and a cast to float64 becomes a cast to
    float32 (an identity, which folds away). A function with float64
    arguments or results (a float64 model) is left alone, and code
    generation refuses it, as before. Run first, before the fusions.

    ```mlir
    %c = otc.constant dense<-1.0e+10> : tensor<f64>
    %w = otc.cast %x : tensor<2x4xf32> -> tensor<2x4xf64>
    %s = otc.add %w, %c : tensor<2x4xf64>, tensor<f64> -> tensor<2x4xf64>
    %y = otc.cast %s : tensor<2x4xf64> -> tensor<2x4xf32>
    // becomes
    %c = otc.constant dense<-1.0e+10> : tensor<f32>
    %s = otc.add %x, %c : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
    ```
  }];
  let dependentDialects = ["otc::OtcDialect"];
}

def FuseRmsNorm : Pass<"otc-fuse-rms-norm", "mlir::ModuleOp"> {
  let summary = "Forms otc.normalize {center = false} from hand-written RMSNorm";
  let description = [{
    Models write RMSNorm by hand (LLaMA's `x * torch.rsqrt(x.pow(2).mean(-1,
    keepdim=True) + eps)`), which exports as Pow, ReduceMean, Add, Sqrt and
    Div or Reciprocal: five passes over memory forward and more backward.
    This pass matches the pattern over the trailing dims, with the square as
    `pow(x, 2)` or `x * x`, a constant epsilon, and `x * (1 / s)`,
    `x * reciprocal(s)` or `x / s`, and replaces it with one
    `otc.normalize {center = false}`: one RowReduce step, and one for its
    gradient. Run before autodiff, so the backward sees the fused op;
    intermediate values that have other users stay.

    ```mlir
    %sq = otc.pow %x {exponent = 2.0 : f64} : tensor<2x8xf32>
    %m = otc.reduce_mean %sq [1] {keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
    %a = otc.add %m, %eps : tensor<2x1xf32>, tensor<f32> -> tensor<2x1xf32>
    %s = otc.sqrt %a : tensor<2x1xf32>
    %r = otc.div %one, %s : tensor<f32>, tensor<2x1xf32> -> tensor<2x1xf32>
    %y = otc.mul %x, %r : tensor<2x8xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
    // becomes
    %y = otc.normalize %x {axis = 1 : i64, center = false, epsilon = 1.0e-06 : f64}
        : tensor<2x8xf32>
    ```
  }];
  let dependentDialects = ["otc::OtcDialect"];
}

def FuseLayerNorm : Pass<"otc-fuse-layer-norm", "mlir::ModuleOp"> {
  let summary = "Forms otc.layer_norm from otc.normalize and its scale and bias";
  let description = [{
    The importer writes LayerNormalization as `otc.normalize` then an
    elementwise scale and bias, so that their gradients come from the
    primitives; otc-fuse-rms-norm forms the normalize of RMSNorm, and the
    model multiplies by its weight. That is three passes over memory
    forward, and the normalized value kept for the scale's gradient. This
    pass replaces a normalize whose one use is a multiplication by a scale
    (and, when the product's one use is an addition, a bias), each constant
    along the rows and covering the normalized dims, with one
    `otc.layer_norm`: one RowReduce step in float32, rounded once, which
    also keeps each row's mean and rstd for the gradient. Run before autodiff and
    otc-mixed-precision, so both see the op.

    ```mlir
    %n = otc.normalize %x {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x8xf32>
    %s = otc.mul %n, %w : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    %y = otc.add %s, %b : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
    // becomes
    %b8 = otc.reshape %b : tensor<1x8xf32> -> tensor<8xf32>
    %y, %mean, %rstd = otc.layer_norm %x, %w, %b8 {axis = 1 : i64, epsilon = 1.0e-05 : f64}
        : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x1xf32>
    ```
  }];
  let dependentDialects = ["otc::OtcDialect"];
}

def FuseGelu : Pass<"otc-fuse-gelu", "mlir::ModuleOp"> {
  let summary = "Forms otc.gelu from GELU written out as arithmetic";
  let description = [{
    Exports before opset 20 write GELU as arithmetic: x/2 (1 + erf(x/√2)),
    or Hugging Face's gelu_new and PyTorch's tanh form with pow or x·x·x,
    0.5 first or last. The backward of that arithmetic keeps x, x², the
    tanh and 1 + tanh; `otc.gelu`'s keeps x alone. Rather than match each
    spelling, the pass takes each expression of one tensor x (x read at
    least twice, an erf or tanh inside, every other leaf a splat constant),
    evaluates it in float64 at ten points and compares it with both forms:
    within 1e-6 relative it is that GELU. Inner values used elsewhere stay.
    Run before autodiff and otc-mixed-precision.

    ```mlir
    %a = otc.mul %x, %c : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>  // x / √2
    %e = otc.erf %a : tensor<4x8xf32>
    %p = otc.add %e, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    %h = otc.mul %x, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    %y = otc.mul %h, %p : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    // becomes
    %y = otc.gelu %x {approximate = 0 : i32} : tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["otc::OtcDialect"];
}

def FuseGemmEpilogues : Pass<"otc-fuse-gemm-epilogues", "mlir::ModuleOp"> {
  let summary = "Puts a Linear layer's bias, and its gradient, into the GEMM";
  let description = [{
    Forward, `add(product, bias)` with a bias of shape [N] (or [1, ..., 1,
    N]) becomes the `otc.gemm`'s C: code generation runs it as a bias
    epilogue (cuBLASLt's on CUDA), so the sum is rounded once and no pass
    over the result is made. The product is an `otc.matmul` with a 2-D
    right operand (its rows flattened) or an `otc.gemm` without C, used
    only by the add. Run before otc-mixed-precision, which then casts the
    bias with the GEMM's operands, as autocast's linear does.

    Backward (`after-autodiff` only: the op has no gradient rule), the bias
    gradient `reduce_sum(g)` over every dim but the last
    and the weight gradient `gemm(x, g, trans_a)` (or `gemm(g, x, trans_a)`
    for a weight stored [N, K]) become one `otc.gemm_bias_grad`, which
    reads g once (cuBLASLt's BGRADA/BGRADB on CUDA). Where both results are
    only widened to f32, the op makes f32 itself. Run after autodiff; it is
    run last, after otc-recompute, as a walk that merges nothing else.

    With `after-autodiff` (that last run), a tanh `otc.gelu` of a gemm's result (with
    or without a bias, through a reshape of its rows) becomes one
    `otc.gemm_gelu`, which also returns the preactivation that the
    backward reads (cuBLASLt's GELU_AUX_BIAS), and a tanh `otc.gelu_grad`
    of a gemm's result becomes `otc.gemm_dgelu` (DGELU).

    ```mlir
    %p = otc.matmul %x, %w : tensor<2x3x8xf32>, tensor<8x16xf32> -> tensor<2x3x16xf32>
    %y = otc.add %p, %b : tensor<2x3x16xf32>, tensor<16xf32> -> tensor<2x3x16xf32>
    // becomes
    %x2 = otc.reshape %x : tensor<2x3x8xf32> -> tensor<6x8xf32>
    %g = otc.gemm %x2, %w, %b : (tensor<6x8xf32>, tensor<8x16xf32>, tensor<16xf32>)
        -> tensor<6x16xf32>
    %y = otc.reshape %g : tensor<6x16xf32> -> tensor<2x3x16xf32>

    %s = otc.reduce_sum %dy [0] : tensor<6x16xf32> -> tensor<16xf32>
    %dw = otc.gemm %x2, %dy {trans_a = true} : (tensor<6x8xf32>, tensor<6x16xf32>)
        -> tensor<8x16xf32>
    // becomes
    %dw, %s = otc.gemm_bias_grad %x2, %dy {bias_of = 1 : i32, trans_a = true}
        : (tensor<6x8xf32>, tensor<6x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>)
    ```
  }];
  let options = [
    Option<"afterAutodiff", "after-autodiff", "bool", /*default=*/"false",
           "Also form the ops that have no gradient rule: the bias gradients and GELU">,
  ];
  let dependentDialects = ["otc::OtcDialect"];
}

def FuseCrossEntropy : Pass<"otc-fuse-cross-entropy", "mlir::ModuleOp"> {
  let summary = "The softmax cross-entropy and its gradient in one pass over the logits";
  let description = [{
    `otc.softmax_cross_entropy` and `otc.softmax_cross_entropy_grad` of the
    same logits, labels and ignore_index become one
    `otc.softmax_cross_entropy_with_grad`: one row kernel finds each row's
    maximum, sum of exponentials and labelled logit once, stores the row's
    loss and writes the gradient over the logits, where two kernels read
    the [N, V] logits twice (at GPT-2's vocabulary, 823 MB of bf16 per
    micro-batch of 8 x 1024 tokens). The fused op takes the forward's
    place when the seed is defined before it (a function argument, as
    autodiff makes it), else the gradient's when every reader of the loss
    comes after that. Logits recomputed for the backward (otc-recompute)
    are another value, and stay apart. Run after autodiff and otc-recompute.

    ```mlir
    %loss = otc.softmax_cross_entropy %logits, %labels
        : tensor<16x64xf32>, tensor<16xi64> -> tensor<f32>
    %dlogits = otc.softmax_cross_entropy_grad %seed, %logits, %labels
        : tensor<f32>, tensor<16x64xf32>, tensor<16xi64>
    // becomes
    %loss, %dlogits = otc.softmax_cross_entropy_with_grad %seed, %logits, %labels
        : tensor<f32>, tensor<16x64xf32>, tensor<16xi64> -> tensor<f32>, tensor<16x64xf32>
    ```
  }];
  let dependentDialects = ["otc::OtcDialect"];
}

def GradAccumulation : Pass<"otc-grad-accumulation", "mlir::ModuleOp"> {
  let summary = "Accumulates parameter gradients into persistent buffers";
  let description = [{
    Gives each gradient result (`otc.grad_of`) a persistent buffer argument
    marked `otc.grad_buffer = N` (the parameter's argument index) and returns
    `otc.accumulate %buffer, %grad, %first` in its place, with the result
    tied to the buffer (`otc.tied_arg`) so code generation updates it in
    place. A new `i1` argument marked `otc.first_micro_batch` selects
    overwrite on the first micro-batch of a window, so buffers never need a
    zeroing kernel.

    ```mlir
    func.func @step(..., %seed: tensor<f32> {otc.loss_seed})
        -> (tensor<f32> {otc.loss}, tensor<4x1xf32> {otc.grad_of = 1 : i64})
    // becomes
    func.func @step(..., %seed: tensor<f32> {otc.loss_seed},
                    %gw: tensor<4x1xf32> {otc.grad_buffer = 1 : i64},
                    %first: i1 {otc.first_micro_batch})
        -> (tensor<f32> {otc.loss},
            tensor<4x1xf32> {otc.grad_of = 1 : i64, otc.tied_arg = 3 : i64})
    ```
  }];
  let dependentDialects = ["otc::OtcDialect"];
}

def MergeSliceGrads : Pass<"otc-merge-slice-grads", "mlir::ModuleOp"> {
  let summary = "Sums of slice gradients that tile one axis become one concat";
  let description = [{
    A tensor split into pieces along one axis (GPT-2's q, k and v sliced
    from one projection) gets, from autodiff, one `slice_grad` per piece
    (zeros of the whole shape, the piece placed in them) and a sum of
    those: for three pieces, three zero fills, three placements and the
    sum's pass, each over the whole tensor, and three whole-size
    temporaries. This pass replaces such a sum, when its every term is a
    piece (step 1 along one axis, every other dim whole, no two
    overlapping), with one `otc.concat` in order of their starts, zeros
    filling any gap. Each element of the sum is one piece's value or zero,
    so the concat is exact; with other terms the sum's order, and its
    rounding, would change, so such a sum is left alone. Run after
    autodiff.

    ```mlir
    %a = otc.slice_grad %dq [0, 0] [1, 1] : tensor<4x8xf32> -> tensor<4x24xf32>
    %b = otc.slice_grad %dk [0, 8] [1, 1] : tensor<4x8xf32> -> tensor<4x24xf32>
    %s = otc.add %a, %b : tensor<4x24xf32>, tensor<4x24xf32> -> tensor<4x24xf32>
    // becomes
    %z = otc.constant dense<0.0> : tensor<4x8xf32>
    %s = otc.concat %dq, %dk, %z {axis = 1 : i64}
        : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x24xf32>
    ```
  }];
  let dependentDialects = ["otc::OtcDialect"];
}

def MixedPrecision : Pass<"otc-mixed-precision", "mlir::ModuleOp"> {
  let summary = "Rewrites the forward graph's element types, autocast-style";
  let description = [{
    Runs before autodiff, so the backward follows the types. One table
    (`policyOf`) says where each op runs:
    - low (fp16 or bf16 operands, float32 accumulation): matmul, gemm;
    - float32: normalize, softmax, log-softmax, reductions, exp, log, pow,
      sqrt, reciprocal, erf, the losses, the window kernels, dropout;
    - the rest: the widest type of its float operands, except that a
      parameter added to a low-precision GEMM result (a Linear's bias,
      which PyTorch exports as MatMul + Add) is cast to the low type, as
      autocast's linear does.
    Casts are inserted where an operand's type differs; parameters stay
    float32 (master weights) and reach low-precision ops through casts, whose
    gradients cast back, so gradient buffers and optimizer state stay float32.
    `keep-fp32` names op types (`matmul`) or ONNX nodes that stay float32.
    Each rewritten op is marked `otc.precision` with its class, and the table
    is printed on the module as `otc.precision_policy`.

    ```mlir
    %y = otc.gemm %x, %w, %b {trans_b = true}
        : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    // with precision=bf16 becomes
    %0 = otc.cast %x : tensor<2x4xf32> -> tensor<2x4xbf16>
    %1 = otc.cast %w : tensor<3x4xf32> -> tensor<3x4xbf16>
    %2 = otc.cast %b : tensor<3xf32> -> tensor<3xbf16>
    %y = otc.gemm %0, %1, %2 {otc.precision = "low", trans_b = true}
        : (tensor<2x4xbf16>, tensor<3x4xbf16>, tensor<3xbf16>) -> tensor<2x3xbf16>
    ```
  }];
  let options = [
    Option<"precision", "precision", "::otc::Precision", /*default=*/"::otc::Precision::Fp32",
           "fp32, fp16 or bf16", [{::llvm::cl::values(
             clEnumValN(::otc::Precision::Fp32, "fp32", "float32 throughout"),
             clEnumValN(::otc::Precision::Fp16, "fp16", "float16 with float32 master weights"),
             clEnumValN(::otc::Precision::Bf16, "bf16", "bfloat16 with float32 master weights"))}]>,
    ListOption<"keepFp32", "keep-fp32", "std::string",
               "op types (matmul) or node names kept in float32">,
  ];
  let dependentDialects = ["otc::OtcDialect"];
}

def LossScaling : Pass<"otc-loss-scaling", "mlir::ModuleOp"> {
  let summary = "Records the loss-scaling policy of the training step";
  let description = [{
    Loss scaling multiplies the loss seed (`otc.loss_seed`, which the
    runtime sets to scale / k for a window of k micro-batches) so that small
    gradients survive low-precision arithmetic, and the optimizer update
    multiplies each gradient by 1/scale in the same kernel. This pass checks
    the policy and records it on the step as `otc.loss_scale`, which code
    generation gives the runtime:

    - `none`: no scaling; a non-finite loss or gradient stops training.
    - `static`: a fixed scale; a step whose gradients overflow is skipped.
    - `dynamic`: PyTorch GradScaler's rules. The scale starts at
      `init-scale` (2^16), halves on overflow but not below `min-scale`,
      and doubles after `window` (2000) good steps in a row. DeepSpeed's
      `hysteresis` H tolerates the first H - 1 overflows since the last
      growth (1, the default, is GradScaler's rule). An overflowing step is skipped whole: weights, momentum and Adam
      moments untouched, Adam's step count not advanced.

    ```mlir
    func.func @train_step(...) -> (tensor<f32> {otc.loss}, ...)
    // with mode=dynamic becomes
    func.func @train_step(...) -> (tensor<f32> {otc.loss}, ...)
        attributes {otc.loss_scale = {hysteresis = 1 : i64, init_scale = 65536.0 : f64,
                    min_scale = 0.0 : f64, mode = 2 : i32, window = 2000 : i64}}
    ```
  }];
  let options = [
    Option<"mode", "mode", "::otc::LossScaleMode", /*default=*/"::otc::LossScaleMode::None",
           "none, static or dynamic", [{::llvm::cl::values(
             clEnumValN(::otc::LossScaleMode::None, "none", "no scaling"),
             clEnumValN(::otc::LossScaleMode::Static, "static", "a fixed scale"),
             clEnumValN(::otc::LossScaleMode::Dynamic, "dynamic", "GradScaler's rules"))}]>,
    Option<"initScale", "init-scale", "double", /*default=*/"65536.0",
           "the scale (static) or the initial scale (dynamic)">,
    Option<"window", "window", "int64_t", /*default=*/"2000",
           "good steps in a row before the scale doubles">,
    Option<"hysteresis", "hysteresis", "int64_t", /*default=*/"1",
           "DeepSpeed's hysteresis: overflows since the last growth before the scale halves">,
    Option<"minScale", "min-scale", "double", /*default=*/"0.0",
           "the scale never halves below this">,
  ];
  let dependentDialects = ["otc::OtcDialect"];
}

def Recompute : Pass<"otc-recompute", "mlir::ModuleOp"> {
  let summary = "Recomputes forward values in the backward instead of keeping them";
  let description = [{
    Activation checkpointing on the training step after autodiff. A forward
    value the backward reads is kept from the forward to the backward; this
    pass decides which of them the backward recomputes instead, cloning
    their ops (marked `otc.recomputed`) just before the first backward op
    that reads them, recursively through the operands that are not kept.
    The copies compute exactly what the originals did (dropout regenerates
    its mask from the same counter), so training results are bitwise those
    of `none`.

    Always kept: arguments, constants, values computed from parameters and
    constants alone, ops with side effects or reading an assigned parameter
    (BatchNorm's running statistics), and a narrowing cast of a kept value.

    - `none`: keeps every value the backward reads.
    - `selective`: recomputes the cheap ops (elementwise ops, views and
      copies, casts, dropout, the normalisation row kernel) from the values
      the backward keeps anyway, and never GEMMs, convolutions, pooling,
      softmax or reductions (Megatron's selective recompute).
    - `blocks`: every op of a repeated block (ONNX node names sharing a
      scope `/blocks.0/`, `/blocks.1/`, ... or, with `boundary`, the same
      match of that regex) is recomputed from the values that enter the
      block; only values that leave a block are kept. Outside blocks,
      `selective`.
    - `sqrt`: Chen et al.'s rule. The forward's articulation values (the
      only data-dependent value live across a point of the forward) split
      it into m layers; ceil(sqrt(m)) segments of about equal kept bytes
      are recomputed from their first value, except the last, which is
      `selective`.
    - `budget`: the `layers` layers (between articulation values) that free
      the most kept bytes per recomputed FLOP are each recomputed from
      their first value; the rest is `selective`. `otc compile
      --memory-budget` picks `layers`.

    ```mlir
    %h = otc.gemm %x, %w ...
    %a = otc.tanh %h
    %y = otc.gemm %a, %v ...
    ...                        // backward, after the seed's first use:
    %g = otc.tanh_grad %dy, %a
    // with policy=selective becomes
    %a2 = otc.tanh %h {otc.recomputed}
    %g = otc.tanh_grad %dy, %a2
    ```
    so `%a` dies in the forward and `%h` is kept in its place (with GELU's
    chain of four such values, one instead of four). Under `blocks`, `%h`
    too is recomputed, from `%x`, when both GEMMs lie in one block.
  }];
  let options = [
    Option<"policy", "policy", "::otc::RecomputePolicy",
           /*default=*/"::otc::RecomputePolicy::None",
           "none, selective, blocks, sqrt or budget", [{::llvm::cl::values(
             clEnumValN(::otc::RecomputePolicy::None, "none", "keep every value"),
             clEnumValN(::otc::RecomputePolicy::Selective, "selective", "recompute cheap ops"),
             clEnumValN(::otc::RecomputePolicy::Blocks, "blocks", "recompute repeated blocks"),
             clEnumValN(::otc::RecomputePolicy::Sqrt, "sqrt", "Chen's sqrt(n) segments"),
             clEnumValN(::otc::RecomputePolicy::Budget, "budget", "the best layers first"))}]>,
    Option<"boundary", "boundary", "std::string", /*default=*/"\"\"",
           "blocks: a regex; ops whose node names share its match form a block">,
    Option<"layers", "layers", "int64_t", /*default=*/"0",
           "budget: how many layers to recompute, best first">,
  ];
  let dependentDialects = ["otc::OtcDialect"];
}

#endif // OTC_PASSES
