// Convolution as one op (--conv-op), its input and filter gradients, in
// bf16: (a) ResNet's 3x3 with padding 1 over 16 channels; (b) two groups,
// strides 2 x 1, dilations 1 x 2 and pads top 1, left 0, bottom 0, right 2.
func.func @conv(%xa: tensor<2x16x10x10xbf16>, %wa: tensor<24x16x3x3xbf16>, %ga: tensor<2x24x10x10xbf16>,
                %xb: tensor<2x6x9x11xbf16>, %wb: tensor<4x3x3x2xbf16>, %gb: tensor<2x4x4x11xbf16>)
    -> (tensor<2x24x10x10xbf16>, tensor<2x16x10x10xbf16>, tensor<24x16x3x3xbf16>,
        tensor<2x4x4x11xbf16>, tensor<2x6x9x11xbf16>, tensor<4x3x3x2xbf16>) {
  %ya = otc.conv %xa, %wa {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>,
                           pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
      : tensor<2x16x10x10xbf16>, tensor<24x16x3x3xbf16> -> tensor<2x24x10x10xbf16>
  %dxa = otc.conv_data_grad %ga, %wa {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>,
                                      pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
      : tensor<2x24x10x10xbf16>, tensor<24x16x3x3xbf16> -> tensor<2x16x10x10xbf16>
  %dwa = otc.conv_filter_grad %ga, %xa {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>,
                                        pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
      : tensor<2x24x10x10xbf16>, tensor<2x16x10x10xbf16> -> tensor<24x16x3x3xbf16>
  %yb = otc.conv %xb, %wb {kernel = array<i64: 3, 2>, strides = array<i64: 2, 1>,
                           pads = array<i64: 1, 0, 0, 2>, dilations = array<i64: 1, 2>, groups = 2 : i64}
      : tensor<2x6x9x11xbf16>, tensor<4x3x3x2xbf16> -> tensor<2x4x4x11xbf16>
  %dxb = otc.conv_data_grad %gb, %wb {kernel = array<i64: 3, 2>, strides = array<i64: 2, 1>,
                                      pads = array<i64: 1, 0, 0, 2>, dilations = array<i64: 1, 2>, groups = 2 : i64}
      : tensor<2x4x4x11xbf16>, tensor<4x3x3x2xbf16> -> tensor<2x6x9x11xbf16>
  %dwb = otc.conv_filter_grad %gb, %xb {kernel = array<i64: 3, 2>, strides = array<i64: 2, 1>,
                                        pads = array<i64: 1, 0, 0, 2>, dilations = array<i64: 1, 2>, groups = 2 : i64}
      : tensor<2x4x4x11xbf16>, tensor<2x6x9x11xbf16> -> tensor<4x3x3x2xbf16>
  return %ya, %dxa, %dwa, %yb, %dxb, %dwb : tensor<2x24x10x10xbf16>, tensor<2x16x10x10xbf16>, tensor<24x16x3x3xbf16>,
      tensor<2x4x4x11xbf16>, tensor<2x6x9x11xbf16>, tensor<4x3x3x2xbf16>
}
