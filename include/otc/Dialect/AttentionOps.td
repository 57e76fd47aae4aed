//===----------------------------------------------------------------------===//
// Fused attention: otc-fuse-attention forms it from the exported pattern
// (MatMul, scale, mask, Softmax, MatMul). Nothing T x S is kept: the
// forward keeps each query row's maximum and log-sum, from which the
// backward recomputes the probabilities. Code generation makes each a call to the
// kernel library (runtime/include/otc/kernels/attention.h).
//===----------------------------------------------------------------------===//

class Otc_AttentionAttrs {
  dag attentionAttrs = (ins F64Attr:$scale, DefaultValuedAttr<BoolAttr, "false">:$causal,
                        OptionalAttr<F64Attr>:$fill,
                        DefaultValuedAttr<Otc_AttentionLayout,
                                          "::otc::AttentionLayout::Bhtd">:$layout);
}

def Otc_AttentionOp : Otc_DiffOp<"attention",
    [InferTypeOpAdaptor, Otc_Low, Otc_Kept, Otc_OwnFlops]>, Otc_AttentionAttrs {
  let summary = "Scaled dot-product attention: softmax(scale q kᵀ + mask) v";
  let description = [{
    `query` is [B, H, T, D], `key` [B, H / G, S, D] and `value`
    [B, H / G, S, DV]: query head h reads key and value head h / G (grouped
    query attention when G > 1). For query row t, the scores are
    x[s] = scale * q[t] · k[s], then
    - with a float `mask` broadcast to [B, H, T, S], x[s] + mask[.., t, s];
    - with an i1 `mask`, `fill` where the mask is false;
    - with `causal` (T = S), only s <= t take part.

    With `layout = bthd` query, key, value and result (and the gradients)
    are [B, T, H, D] instead, as the projections around attention make
    them (otc-attention-layout folds the transposes between); the mask and
    the row statistics keep [B, H, T, ...].

    `result` is softmax(x) v, in the query's type; `stats` holds, per row,
    m = max x and log(sum(exp(x - m))) in float32, for the backward. Kept
    apart rather than as their sum, so that a row masked everywhere by
    -3.4e38 (whose sum would round to m) recomputes its uniform
    probabilities. Only attention_grad reads it: where cuDNN runs both
    (16-bit, no mask, on CUDA), it holds cuDNN's log-sum-exp instead.
    The products sum in float32 whatever the operand type. The mask keeps its
    own type under mixed precision (an additive -3.4e38 has no 16-bit form).

    ```mlir
    %o, %lse = otc.attention %q, %k, %v {scale = 0.125 : f64, causal = true}
        : tensor<2x4x16x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x64xbf16>
        -> tensor<2x4x16x64xbf16>, tensor<2x4x16x2xf32>
    ```
  }];
  let arguments = !con((ins Otc_FloatTensor:$query, Otc_FloatTensor:$key, Otc_FloatTensor:$value,
                            Optional<Otc_AnyTensor>:$mask), attentionAttrs);
  let results = (outs Otc_FloatTensor:$result, Otc_FloatTensor:$stats);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool followsAutocast(unsigned operand) { return operand < 3; }
  }];
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? attr-dict `:` type($query) `,` type($key) `,`
    type($value) (`,` type($mask)^)? `->` type($result) `,` type($stats)
  }];
}

def Otc_AttentionGradOp : Otc_Op<"attention_grad",
    [Pure, InferTypeOpAdaptor, Otc_NotDifferentiable, Otc_Low, Otc_Kept, Otc_OwnFlops]>,
    Otc_AttentionAttrs {
  let summary = "Gradient of attention in query, key and value";
  let description = [{
    From the output's gradient dO, the operands, the output O and the row
    statistics: per query row, p[s] = exp(x[s] - m - log sum), Δ = dO · O,
    ds[s] = p[s] (dO · v[s] - Δ) (0 where an i1 mask is false),
    dq = scale Σ ds[s] k[s], dk[s] += scale ds[s] q, dv[s] += p[s] dO, the
    key and value gradients summed over the G query heads that share them.
  }];
  let arguments = !con((ins Otc_FloatTensor:$grad, Otc_FloatTensor:$query, Otc_FloatTensor:$key,
                            Otc_FloatTensor:$value, Otc_FloatTensor:$output,
                            Otc_FloatTensor:$stats, Optional<Otc_AnyTensor>:$mask),
                       attentionAttrs);
  let results = (outs Otc_FloatTensor:$query_grad, Otc_FloatTensor:$key_grad,
                      Otc_FloatTensor:$value_grad);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    // The row statistics stay float32 and the mask its own type.
    bool followsAutocast(unsigned operand) { return operand < 5; }
  }];
  let assemblyFormat = [{
    $grad `,` $query `,` $key `,` $value `,` $output `,` $stats (`mask` $mask^)? attr-dict `:`
    type($grad) `,` type($query) `,` type($key) `,` type($value) `,` type($output) `,`
    type($stats)
    (`,` type($mask)^)? `->` type($query_grad) `,` type($key_grad) `,` type($value_grad)
  }];
}
