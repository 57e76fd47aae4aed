//===----------------------------------------------------------------------===//
// Recurrent layers as fused cells: the importer projects the whole input
// sequence with one GEMM and hands the recurrence to one of these ops, whose
// kernel loops over time (a GEMM with the recurrent weight and the gates per
// step). The program's size no longer depends on the sequence length.
// Code generation makes each a call to the kernel library
// (runtime/include/otc/kernels/recurrent.h).
//
// Layouts are time-major and per direction: a bidirectional layer is two
// ops, one with `reverse`. Cell states and activated gates are kept in
// float32 (the input's type when that is wider), for the backward.
//
// `lens` [B] (ONNX's sequence_lens, run-time or constant) gives each row's
// length: from step lens[b] on, row b holds its state (its kept gates are
// 0), so the last state of the walk is the row's own last state, forward
// or reverse. The importer zeroes those steps of the output; the gradient
// ops pass a held step's gradient through to the step before.
//===----------------------------------------------------------------------===//

def Otc_LstmOp : Otc_DiffOp<"lstm", [InferTypeOpAdaptor, Otc_Low, Otc_Kept, Otc_OwnFlops]> {
  let summary = "LSTM recurrence over a projected sequence (ONNX gate order i, o, f, c)";
  let description = [{
    `input` [T, B, 4H] holds x W^T plus both biases per step; `recurrence`
    [4H, H] is R. For each step t (from T - 1 down with `reverse`):
    g = input[t] + h R^T; i, o, f = sigmoid; c~ = tanh;
    c = f c_prev + i c~; h = o tanh(c). `hidden` [T, B, H] holds every h in
    the input's type; `cell` [T, B, H] every c and `gates` [T, B, 4H] the
    activated gates, in the state type (float32, or the input's if wider).

    ```mlir
    %h, %c, %g = otc.lstm %x, %r, %h0, %c0
        : tensor<5x2x16xf32>, tensor<16x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
        -> tensor<5x2x4xf32>, tensor<5x2x4xf32>, tensor<5x2x16xf32>
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$input, Otc_FloatTensor:$recurrence,
                       Otc_FloatTensor:$initial_h, Otc_FloatTensor:$initial_c,
                       Optional<Otc_IndexTensor>:$lens,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Otc_FloatTensor:$hidden, Otc_FloatTensor:$cell, Otc_FloatTensor:$gates);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    // The initial cell state has the state type.
    bool followsAutocast(unsigned operand) { return operand < 3; }
  }];
  let assemblyFormat = [{
    $input `,` $recurrence `,` $initial_h `,` $initial_c (`lens` `(` $lens^ `:` type($lens) `)`)? attr-dict `:`
    type($input) `,` type($recurrence) `,` type($initial_h) `,` type($initial_c)
    `->` type($hidden) `,` type($cell) `,` type($gates)
  }];
}

def Otc_LstmGradOp : Otc_Op<"lstm_grad",
    [Pure, InferTypeOpAdaptor, AttrSizedOperandSegments, Otc_NotDifferentiable, Otc_Low, Otc_Kept, Otc_OwnFlops]> {
  let summary = "Backpropagation through time of otc.lstm, to the gates and initial states";
  let description = [{
    From the gradients of the hidden states (and of the cell states, when
    the cell is read), walks the steps backwards: the gradient of the
    pre-activation gates of every step (`input_grad`, which is also the
    input's gradient), and of the initial states. The recurrent weight's
    gradient is one GEMM of `input_grad` with the previous hidden states,
    built by the gradient rule outside the op.
  }];
  let arguments = (ins Otc_FloatTensor:$hidden_grad, Otc_FloatTensor:$recurrence,
                       Otc_FloatTensor:$cell, Otc_FloatTensor:$gates,
                       Otc_FloatTensor:$initial_c, Optional<Otc_FloatTensor>:$cell_grad,
                       Optional<Otc_IndexTensor>:$lens,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Otc_FloatTensor:$input_grad, Otc_FloatTensor:$initial_h_grad,
                      Otc_FloatTensor:$initial_c_grad);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    // The kept states and the cell's gradient have the state type.
    bool followsAutocast(unsigned operand) { return operand < 2; }
  }];
  let assemblyFormat = [{
    $hidden_grad `,` $recurrence `,` $cell `,` $gates `,` $initial_c
    (`cell_grad` $cell_grad^)? (`lens` `(` $lens^ `:` type($lens) `)`)? attr-dict `:` type($hidden_grad) `,`
    type($recurrence) `,` type($cell) `,` type($gates) `,` type($initial_c)
    (`,` type($cell_grad)^)? `->` type($input_grad) `,`
    type($initial_h_grad) `,` type($initial_c_grad)
  }];
}

def Otc_GruOp : Otc_DiffOp<"gru",
    [InferTypeOpAdaptor, AttrSizedOperandSegments, Otc_Low, Otc_Kept, Otc_OwnFlops]> {
  let summary = "GRU recurrence over a projected sequence (ONNX gate order z, r, h)";
  let description = [{
    `input` [T, B, 3H] holds x W^T plus the biases that add outside the
    reset gate; `recurrence` [3H, H] is R. For each step:
    z = sigmoid(x_z + h R_z^T), r = sigmoid(x_r + h R_r^T) and
    - with `linear_before_reset`, n = tanh(x_n + r (h R_n^T + rbias));
    - without, n = tanh(x_n + (r h) R_n^T) (rbias is then in the input);
    h' = n + z (h - n). `hidden` [T, B, H] holds every h'; `gates`
    [T, B, 4H] holds z, r, n and q, the reset gate's other factor
    (h R_n^T + rbias, or r h), in the state type.

    ```mlir
    %h, %g = otc.gru %x, %r, %h0 rbias %rb {linear_before_reset = true}
        : tensor<5x2x12xf32>, tensor<12x4xf32>, tensor<2x4xf32>, tensor<4xf32>
        -> tensor<5x2x4xf32>, tensor<5x2x16xf32>
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$input, Otc_FloatTensor:$recurrence,
                       Otc_FloatTensor:$initial_h, Optional<Otc_FloatTensor>:$rbias,
                       Optional<Otc_IndexTensor>:$lens,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse,
                       DefaultValuedAttr<BoolAttr, "false">:$linear_before_reset);
  let results = (outs Otc_FloatTensor:$hidden, Otc_FloatTensor:$gates);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `,` $recurrence `,` $initial_h (`rbias` $rbias^)? (`lens` `(` $lens^ `:` type($lens) `)`)? attr-dict `:`
    type($input) `,` type($recurrence) `,` type($initial_h) (`,` type($rbias)^)?
    `->` type($hidden) `,` type($gates)
  }];
}

def Otc_GruGradOp : Otc_Op<"gru_grad",
    [Pure, InferTypeOpAdaptor, Otc_NotDifferentiable, Otc_Low, Otc_Kept, Otc_OwnFlops]> {
  let summary = "Backpropagation through time of otc.gru, to the gates and initial state";
  let description = [{
    From the hidden states' gradient: the gradient of every step's
    pre-activation input (`input_grad`) and of the initial state. The
    recurrent weight's and rbias's gradients are GEMMs and sums of
    `input_grad` with the kept states, built by the gradient rule.
  }];
  let arguments = (ins Otc_FloatTensor:$hidden_grad, Otc_FloatTensor:$recurrence,
                       Otc_FloatTensor:$hidden, Otc_FloatTensor:$gates,
                       Otc_FloatTensor:$initial_h, Optional<Otc_IndexTensor>:$lens,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse,
                       DefaultValuedAttr<BoolAttr, "false">:$linear_before_reset);
  let results = (outs Otc_FloatTensor:$input_grad, Otc_FloatTensor:$initial_h_grad);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    // The kept gates have the state type.
    bool followsAutocast(unsigned operand) { return operand != 3; }
  }];
  let assemblyFormat = [{
    $hidden_grad `,` $recurrence `,` $hidden `,` $gates `,` $initial_h (`lens` `(` $lens^ `:` type($lens) `)`)?
    attr-dict `:` type($hidden_grad) `,` type($recurrence) `,` type($hidden) `,` type($gates)
    `,` type($initial_h) `->` type($input_grad) `,` type($initial_h_grad)
  }];
}

def Otc_RnnOp : Otc_DiffOp<"rnn", [InferTypeOpAdaptor, Otc_Low, Otc_Kept, Otc_OwnFlops]> {
  let summary = "Elman RNN recurrence over a projected sequence (tanh or relu)";
  let description = [{
    `input` [T, B, H] holds x W^T plus both biases per step; `recurrence`
    [H, H] is R. For each step t (from T - 1 down with `reverse`):
    h = f(input[t] + h_prev R^T), f = tanh (`activation = 0`) or relu (1).
    `hidden` [T, B, H] holds every h in the input's type, `states` the
    same in the state type (float32, or the input's if wider), from which
    the backward takes f'. When the two types are equal the gradient reads
    `hidden`, and `states` is dead after the op.

    ```mlir
    %h, %s = otc.rnn %x, %r, %h0 {activation = 1 : i32}
        : tensor<5x2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>
        -> tensor<5x2x4xf32>, tensor<5x2x4xf32>
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$input, Otc_FloatTensor:$recurrence,
                       Otc_FloatTensor:$initial_h, Optional<Otc_IndexTensor>:$lens,
                       Otc_RnnActivation:$activation,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Otc_FloatTensor:$hidden, Otc_FloatTensor:$states);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `,` $recurrence `,` $initial_h (`lens` `(` $lens^ `:` type($lens) `)`)? attr-dict `:` type($input) `,`
    type($recurrence) `,` type($initial_h) `->` type($hidden) `,`
    type($states)
  }];
}

def Otc_RnnGradOp : Otc_Op<"rnn_grad",
    [Pure, InferTypeOpAdaptor, Otc_NotDifferentiable, Otc_Low, Otc_Kept, Otc_OwnFlops]> {
  let summary = "Backpropagation through time of otc.rnn, to the input and initial state";
  let description = [{
    From the hidden states' gradient and the kept states: walking the steps
    backwards, d = (dh_t + carry) f'(h_t), carry = d R. `input_grad`
    [T, B, H] holds every d (the pre-activation's gradient, which is the
    projected input's), `initial_h_grad` the last carry. The recurrent
    weight's gradient is one GEMM of `input_grad` with the previous hidden
    states, built by the gradient rule.
  }];
  let arguments = (ins Otc_FloatTensor:$hidden_grad, Otc_FloatTensor:$recurrence,
                       Otc_FloatTensor:$states, Optional<Otc_IndexTensor>:$lens,
                       Otc_RnnActivation:$activation,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Otc_FloatTensor:$input_grad, Otc_FloatTensor:$initial_h_grad);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    // The kept states have the state type.
    bool followsAutocast(unsigned operand) { return operand != 2; }
  }];
  let assemblyFormat = [{
    $hidden_grad `,` $recurrence `,` $states (`lens` `(` $lens^ `:` type($lens) `)`)? attr-dict `:`
    type($hidden_grad) `,` type($recurrence) `,` type($states) `->`
    type($input_grad) `,` type($initial_h_grad)
  }];
}
