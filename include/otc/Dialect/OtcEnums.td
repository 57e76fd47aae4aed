#ifndef OTC_ENUMS
#define OTC_ENUMS

include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// The compile's policies, typed from the command line (pass options) to the
// attributes the passes record and code generation reads. They are
// IntegerAttr-based enum attributes (PrecisionAttr, ...): an attribute
// storage of the dialect's own would be allocated by ASan-instrumented code
// in LLVM's bump allocator that the uninstrumented libMLIR shares, which the
// sanitizer build reports as use-after-poison.
//===----------------------------------------------------------------------===//

def Otc_Precision : I32EnumAttr<"Precision", "the training step's precision", [
    I32EnumAttrCase<"Fp32", 0, "fp32">, I32EnumAttrCase<"Fp16", 1, "fp16">,
    I32EnumAttrCase<"Bf16", 2, "bf16">]> {
  let cppNamespace = "::otc";
}

// The runtime's otc_loss_scale_mode (abi.h) has the same cases.
def Otc_LossScaleMode : I32EnumAttr<"LossScaleMode", "the loss-scaling policy", [
    I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"Static", 1, "static">,
    I32EnumAttrCase<"Dynamic", 2, "dynamic">]> {
  let cppNamespace = "::otc";
}

def Otc_RecomputePolicy : I32EnumAttr<"RecomputePolicy", "what otc-recompute recomputes", [
    I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"Selective", 1, "selective">,
    I32EnumAttrCase<"Blocks", 2, "blocks">, I32EnumAttrCase<"Sqrt", 3, "sqrt">,
    I32EnumAttrCase<"Budget", 4, "budget">]> {
  let cppNamespace = "::otc";
}

// Which operand of otc.gemm_bias_grad the bias gradient sums.
def Otc_BiasOperand : I32EnumAttr<"BiasOperand", "the GEMM operand a bias gradient sums", [
    I32EnumAttrCase<"A", 0, "a">, I32EnumAttrCase<"B", 1, "b">]> {
  let cppNamespace = "::otc";
}

// otc.gelu's form: the exact x Φ(x), or PyTorch's tanh approximation (the
// one cuBLASLt's GELU epilogue computes).
def Otc_GeluApproximation : I32EnumAttr<"GeluApproximation", "the form of otc.gelu", [
    I32EnumAttrCase<"None", 0, "none">, I32EnumAttrCase<"Tanh", 1, "tanh">]> {
  let cppNamespace = "::otc";
}

// Where otc.attention's sequence dim sits: [B, H, T, D] (heads outer, the
// layout of the exported graph's products), or [B, T, H, D] (the layout of
// the projections around it: no transposes, and cuDNN reads it strided).
def Otc_AttentionLayout : I32EnumAttr<"AttentionLayout", "the dims order of attention's tensors", [
    I32EnumAttrCase<"Bhtd", 0, "bhtd">, I32EnumAttrCase<"Bthd", 1, "bthd">]> {
  let cppNamespace = "::otc";
}

// otc.rnn's activation: the two nn.RNN exports (ONNX's RNN allows more).
def Otc_RnnActivation : I32EnumAttr<"RnnActivation", "the activation of otc.rnn", [
    I32EnumAttrCase<"Tanh", 0, "tanh">, I32EnumAttrCase<"Relu", 1, "relu">]> {
  let cppNamespace = "::otc";
}

#endif // OTC_ENUMS
