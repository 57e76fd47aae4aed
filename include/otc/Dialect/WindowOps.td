//===----------------------------------------------------------------------===//
// Windows: convolution (as im2col and a matmul) and pooling, on
// N x C x H x W tensors. A 1-D window is imported as H = 1. `pads` are
// [top, left, bottom, right]; the result type fixes the output size, which
// may be one more than the floor (ceil_mode). Code generation makes each a
// call to the kernel library (runtime/include/otc/kernels/window.h).
//===----------------------------------------------------------------------===//

class Otc_WindowAttrs {
  dag windowAttrs = (ins DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
                     DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations);
}

def Otc_Im2ColOp : Otc_DiffOp<"im2col", [Otc_F32, Otc_Kept, Otc_NoFlops]>, Otc_WindowAttrs {
  let summary = "The kernel taps of every window, as columns for a matmul";
  let description = [{
    The result has shape [C, KH, KW, N, OH, OW]: element (c, kh, kw, n, oh,
    ow) is the input at (n, c, oh * sh - pt + kh * dh, ow * sw - pl + kw *
    dw), or 0 in the padding. Reshaped to [G, C/G * KH * KW, N * OH * OW],
    it is the right operand of a grouped convolution's matmul.

    ```mlir
    %cols = otc.im2col %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>,
                           pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
        : tensor<2x1x8x8xf32> -> tensor<1x3x3x2x8x8xf32>
    ```
  }];
  let arguments = !con((ins Otc_FloatTensor:$input), windowAttrs);
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

// Also ConvTranspose's scatter of columns into the image, so it has a
// gradient: im2col of dy.
def Otc_Col2ImOp : Otc_DiffOp<"col2im", [Otc_F32, Otc_Kept, Otc_FlopsPerInput<1>]>,
    Otc_WindowAttrs {
  let summary = "Gradient of im2col: each input element sums the taps that read it";
  let arguments = !con((ins Otc_FloatTensor:$grad), windowAttrs);
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
}

def Otc_MaxPoolOp : Otc_DiffOp<"max_pool", [Otc_Widest, Otc_Kept, Otc_OwnFlops]>, Otc_WindowAttrs {
  let summary = "The maximum of each window, and where in the plane it was";
  let description = [{
    `indices` holds ih * W + iw of the first maximum in scan order (a NaN
    wins), as PyTorch's max_pool2d_with_indices; padding never wins.
  }];
  let arguments = !con((ins Otc_FloatTensor:$input), windowAttrs);
  let results = (outs Otc_FloatTensor:$result, Otc_IndexTensor:$indices);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result) `,` type($indices)
  }];
}

def Otc_MaxPoolGradOp : Otc_Op<"max_pool_grad",
    [Pure, Otc_NotDifferentiable, Otc_Widest, Otc_Kept, Otc_FlopsPerInput<1>]>, Otc_WindowAttrs {
  let summary = "Gradient of max_pool: each window's gradient goes to its maximum";
  let arguments = !con((ins Otc_FloatTensor:$grad, Otc_IndexTensor:$indices), windowAttrs);
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` type($grad) `,` type($indices) `->` type($result)
  }];
}

def Otc_AvgPoolOp : Otc_DiffOp<"avg_pool", [Otc_Widest, Otc_Kept, Otc_OwnFlops]>, Otc_WindowAttrs {
  let summary = "The mean of each window";
  let description = [{
    The divisor is PyTorch's: the window clipped to the padded input when
    `count_include_pad`, else to the input. Dilations must be 1.
  }];
  let arguments = !con((ins Otc_FloatTensor:$input), windowAttrs,
                       (ins BoolAttr:$count_include_pad));
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Otc_AvgPoolGradOp : Otc_Op<"avg_pool_grad",
    [Pure, Otc_NotDifferentiable, Otc_Widest, Otc_Kept, Otc_OwnFlops]>, Otc_WindowAttrs {
  let summary = "Gradient of avg_pool: each window's gradient spread over it";
  let arguments = !con((ins Otc_FloatTensor:$grad), windowAttrs,
                       (ins BoolAttr:$count_include_pad));
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Convolution as one op (--conv-op): for cuDNN on CUDA, which runs the
// product without im2col's columns, so the backward keeps the input rather
// than KH·KW copies of it. Its gradients are ops of their own because
// cuDNN computes each in one call. Without --conv-op, Conv imports as
// im2col and a matmul.
//===----------------------------------------------------------------------===//

class Otc_ConvAttrs {
  dag convAttrs = (ins DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
                   DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                   I64Attr:$groups);
}

def Otc_ConvOp : Otc_DiffOp<"conv", [Otc_Low, Otc_Kept, Otc_OwnFlops]>, Otc_ConvAttrs {
  let summary = "A grouped 2-D convolution (cross-correlation), without bias";
  let description = [{
    `input` is [N, C, H, W] and `weight` [M, C / G, KH, KW], with G =
    `groups` dividing C and M; the result is [N, M, OH, OW]:
    y[n, m, oh, ow] = Σ_{c, kh, kw} x[n, g C/G + c, oh sh - pt + kh dh,
    ow sw - pl + kw dw] w[m, c, kh, kw], with g = m / (M / G) and 0 in the
    padding. `kernel` repeats the weight's KH, KW; the window attributes
    are im2col's. Products sum in float32 whatever the operand type.

    ```mlir
    %y = otc.conv %x, %w {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>,
                          pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>,
                          groups = 1 : i64}
        : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = !con((ins Otc_FloatTensor:$input, Otc_FloatTensor:$weight), convAttrs);
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)
  }];
}

def Otc_ConvDataGradOp : Otc_Op<"conv_data_grad",
    [Pure, Otc_NotDifferentiable, Otc_Low, Otc_Kept, Otc_OwnFlops]>, Otc_ConvAttrs {
  let summary = "Gradient of conv in its input: the transposed convolution of dy";
  let description = [{
    dx[n, g C/G + c, ih, iw] sums dy[n, m, oh, ow] w[m, c, kh, kw] over the
    group's m and the windows (oh, ow) whose tap (kh, kw) reads (ih, iw).
  }];
  let arguments = !con((ins Otc_FloatTensor:$grad, Otc_FloatTensor:$weight), convAttrs);
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $grad `,` $weight attr-dict `:` type($grad) `,` type($weight) `->` type($result)
  }];
}

def Otc_ConvFilterGradOp : Otc_Op<"conv_filter_grad",
    [Pure, Otc_NotDifferentiable, Otc_Low, Otc_Kept, Otc_OwnFlops]>, Otc_ConvAttrs {
  let summary = "Gradient of conv in its weight";
  let description = [{
    dw[m, c, kh, kw] sums dy[n, m, oh, ow] x[n, g C/G + c, ih, iw] over n and
    the windows, (ih, iw) being tap (kh, kw) of window (oh, ow).
  }];
  let arguments = !con((ins Otc_FloatTensor:$grad, Otc_FloatTensor:$input), convAttrs);
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $grad `,` $input attr-dict `:` type($grad) `,` type($input) `->` type($result)
  }];
}
