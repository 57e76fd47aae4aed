#ifndef OTC_OPS
#define OTC_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "otc/Dialect/GradientInterface.td"
include "otc/Dialect/OpFacts.td"

def Otc_Dialect : Dialect {
  let name = "otc";
  let cppNamespace = "::otc";
  let summary = "Statically shaped tensor operations of the ONNX training compiler";
  let description = [{
    Operations on statically shaped tensors with value semantics. Each
    differentiable operation carries its own gradient rule through
    `GradientOpInterface`; the `*_grad` operations exist only as the output
    of those rules.
  }];
  let hasConstantMaterializer = 1;
}

include "otc/Dialect/OtcEnums.td"

def Otc_FloatTensor : StaticShapeTensorOf<[F16, BF16, F32, F64]>;
def Otc_IndexTensor : StaticShapeTensorOf<[I64]>;
def Otc_AnyTensor : StaticShapeTensorOf<[F16, BF16, F32, F64, I64, I1]>;
def Otc_BoolTensor : StaticShapeTensorOf<[I1]>;
def Otc_I64Tensor : StaticShapeTensorOf<[I64]>;
// Floats and int64: arithmetic on positions and counts that depend on the
// data runs at run time; only floats carry a gradient.
def Otc_NumericTensor : StaticShapeTensorOf<[F16, BF16, F32, F64, I64]>;
def Otc_FloatScalar : 0DTensorOf<[F16, BF16, F32, F64]>;

// Every op declares its facts (OpFacts.td): an autocast class, a recompute
// class and a FLOP count in its traits, and a gradient rule (Otc_DiffOp) or
// Otc_NotDifferentiable.
class Otc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Otc_Dialect, mnemonic, !listconcat(traits, [Otc_OpFactsInterface])>;

class Otc_DiffOp<string mnemonic, list<Trait> traits = []>
    : Otc_Op<mnemonic, !listconcat(traits,
        [Pure, DeclareOpInterfaceMethods<Otc_GradientOpInterface>])>;

// Elementwise ops in the widest operand type, recomputed, a FLOP per element.
defvar Otc_ElementwiseFacts = [Otc_Widest, Otc_Cheap, Otc_Flops<1>];

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Otc_ConstantOp : Otc_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>,
     Otc_NotDifferentiable, Otc_Widest, Otc_Cheap, Otc_NoFlops]> {
  let summary = "A constant tensor";
  let description = [{
    ```mlir
    %c = otc.constant dense<1.0> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Otc_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Otc_BinaryOp<string mnemonic, string what, Type tensor = Otc_FloatTensor>
    : Otc_DiffOp<mnemonic, !listconcat(Otc_ElementwiseFacts, [InferTypeOpAdaptor,
        AllElementTypesMatch<["lhs", "rhs", "result"]>])> {
  let summary = "Elementwise " # what # " with numpy broadcasting";
  let arguments = (ins tensor:$lhs, tensor:$rhs);
  let results = (outs tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def Otc_AddOp : Otc_BinaryOp<"add", "addition", Otc_NumericTensor>;
def Otc_SubOp : Otc_BinaryOp<"sub", "subtraction", Otc_NumericTensor>;
def Otc_MulOp : Otc_BinaryOp<"mul", "multiplication", Otc_NumericTensor>;
// On int64 toward zero, a zero divisor giving 0 (kernel_support.h).
def Otc_DivOp : Otc_BinaryOp<"div", "division", Otc_NumericTensor>;

// A unary elementwise op: `facts` names its autocast class (Otc_Widest,
// or Otc_F32 where autocast keeps it in float32), with Otc_Cheap and a FLOP
// per element.
class Otc_UnaryOp<string mnemonic, string what, Trait precision>
    : Otc_DiffOp<mnemonic, [SameOperandsAndResultType, precision, Otc_Cheap, Otc_Flops<1>]> {
  let summary = what;
  let arguments = (ins Otc_FloatTensor:$input);
  let results = (outs Otc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// A unary op whose gradient is one fused op, `gradOp(dy, saved)`, where
// `saved` is the op's input or result (relu reads x; tanh and sigmoid read y).
class Otc_UnaryOpWithGradOp<string mnemonic, string what, string gradOp, string saved>
    : Otc_UnaryOp<mnemonic, what, Otc_Widest> {
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::buildGradients(::mlir::OpBuilder &b, ::mlir::ValueRange dy,
        ::llvm::SmallVectorImpl<::mlir::Value> &grads) {
      grads.push_back(}] # gradOp # [{::create(b, getLoc(), dy[0], }] # saved # [{()));
      return ::mlir::success();
    }
  }];
}

def Otc_NegOp : Otc_UnaryOp<"neg", "Elementwise negation", Otc_Widest>;
// Its gradient reads the output, as PyTorch's threshold_backward does: the
// next layer keeps the output anyway, so the input need not be kept (it is
// positive exactly where the output is, NaN included).
def Otc_ReluOp : Otc_UnaryOpWithGradOp<"relu", "Elementwise max(x, 0)", "ReluGradOp", "getResult">;
def Otc_TanhOp : Otc_UnaryOpWithGradOp<"tanh", "Elementwise hyperbolic tangent", "TanhGradOp",
    "getResult">;
def Otc_SigmoidOp : Otc_UnaryOpWithGradOp<"sigmoid", "Elementwise logistic function",
    "SigmoidGradOp", "getResult">;
def Otc_ExpOp : Otc_UnaryOp<"exp", "Elementwise e^x", Otc_F32>;
def Otc_LogOp : Otc_UnaryOp<"log", "Elementwise natural logarithm", Otc_F32>;
def Otc_SqrtOp : Otc_UnaryOp<"sqrt", "Elementwise square root", Otc_F32>;
def Otc_ReciprocalOp : Otc_UnaryOp<"reciprocal", "Elementwise 1 / x", Otc_F32>;
def Otc_AbsOp : Otc_UnaryOp<"abs", "Elementwise |x|", Otc_Widest>;

def Otc_PowOp : Otc_DiffOp<"pow", [SameOperandsAndResultType, Otc_F32, Otc_Cheap, Otc_Flops<1>]> {
  let summary = "Elementwise x to a constant `exponent`";
  let description = [{
    As C's pow: a negative x with an integral exponent has its sign, and
    with a fractional one gives NaN.
  }];
  let arguments = (ins Otc_FloatTensor:$input, F64Attr:$exponent);
  let results = (outs Otc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}
def Otc_ErfOp : Otc_UnaryOp<"erf", "Elementwise error function", Otc_Widest>;
def Otc_SinOp : Otc_UnaryOp<"sin", "Elementwise sine", Otc_Widest>;
def Otc_CosOp : Otc_UnaryOp<"cos", "Elementwise cosine", Otc_Widest>;
def Otc_AtanOp : Otc_UnaryOp<"atan", "Elementwise arctangent", Otc_Widest>;
def Otc_SoftplusOp : Otc_UnaryOp<"softplus", "Elementwise log(1 + e^x), x above 20", Otc_F32>;
def Otc_TanOp : Otc_UnaryOp<"tan", "Elementwise tangent", Otc_F32>; // autocast's fp32 list

def Otc_GeluOp : Otc_DiffOp<"gelu",
    [SameOperandsAndResultType, Otc_Widest, Otc_Cheap, Otc_Flops<8>]> {
  let summary = "Elementwise GELU: x Φ(x), or its tanh approximation";
  let description = [{
    `approximate = 0` (none): x/2 (1 + erf(x/√2)). `approximate = 1`
    (tanh): x/2 (1 + tanh(√(2/π) (x + 0.044715 x³))), PyTorch's
    `gelu(approximate="tanh")`. Computed in float32 and rounded once. Its
    gradient is one `otc.gelu_grad` of the input, so the backward keeps x
    alone, where the exported formula keeps three more tensors of its size.

    ```mlir
    %y = otc.gelu %x {approximate = 1 : i32} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$input, Otc_GeluApproximation:$approximate);
  let results = (outs Otc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// A piecewise-constant function: its gradient is zero wherever it exists
// (PyTorch's for sign, floor, ceil and round), so autodiff passes none.
class Otc_StepOp<string mnemonic, string what>
    : Otc_Op<mnemonic, !listconcat(Otc_ElementwiseFacts,
        [Pure, SameOperandsAndResultType, Otc_NotDifferentiable])> {
  let summary = what;
  let arguments = (ins Otc_FloatTensor:$input);
  let results = (outs Otc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Otc_SignOp : Otc_StepOp<"sign", "Elementwise -1, 0 or 1 by the sign of x">;
def Otc_FloorOp : Otc_StepOp<"floor", "Elementwise largest integer not above x">;
def Otc_CeilOp : Otc_StepOp<"ceil", "Elementwise smallest integer not below x">;
def Otc_RoundOp : Otc_StepOp<"round", "Elementwise nearest integer, halves to even">;

def Otc_IdentityOp : Otc_DiffOp<"identity",
    [SameOperandsAndResultType, Otc_Widest, Otc_Cheap, Otc_NoFlops]> {
  let summary = "Returns its operand";
  let arguments = (ins Otc_FloatTensor:$input);
  let results = (outs Otc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

// The derivatives of the activations. Each takes the result gradient and the
// value it needs (the output for relu, tanh and sigmoid), so the backward
// pass never recomputes the forward function.
class Otc_ActivationGradOp<string mnemonic, string what>
    : Otc_Op<mnemonic, [Pure, SameOperandsAndResultType, Otc_NotDifferentiable,
                        Otc_Widest, Otc_Kept, Otc_Flops<1>]> {
  let summary = what;
  let arguments = (ins Otc_FloatTensor:$grad, Otc_FloatTensor:$value);
  let results = (outs Otc_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $value attr-dict `:` type($grad)";
}

def Otc_ReluGradOp : Otc_ActivationGradOp<"relu_grad",
    "grad where the relu output (or input: the same) is positive, else 0">;
def Otc_TanhGradOp : Otc_ActivationGradOp<"tanh_grad",
    "grad * (1 - y * y), y being the tanh output">;
def Otc_SigmoidGradOp : Otc_ActivationGradOp<"sigmoid_grad",
    "grad * y * (1 - y), y being the sigmoid output">;

def Otc_GeluGradOp : Otc_Op<"gelu_grad", [Pure, SameOperandsAndResultType,
    Otc_NotDifferentiable, Otc_Widest, Otc_Kept, Otc_Flops<12>]> {
  let summary = "grad * gelu'(x), x being the gelu input, in otc.gelu's form";
  let description = [{
    With the gelu's float32 `output` y, Φ(x) (or (1 + t)/2 in the tanh
    form) is y / x rather than a second erf or tanh: y is the next
    GEMM's operand, which its weight gradient keeps anyway, and on the CPU
    erff is the step's dearest call. Rounded y is within an ulp or two; in
    16 bits it would not be, so there the op recomputes.
  }];
  let arguments = (ins Otc_FloatTensor:$grad, Otc_FloatTensor:$value,
                   Optional<Otc_FloatTensor>:$output, Otc_GeluApproximation:$approximate);
  let results = (outs Otc_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $value (`output` $output^)? attr-dict `:` type($grad)";
}

//===----------------------------------------------------------------------===//
// Comparisons, logic, selection and casts
//===----------------------------------------------------------------------===//

def Otc_ComparePredicateAttr : I32EnumAttr<"ComparePredicate",
    "the relation otc.compare tests", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>, I32EnumAttrCase<"lt", 2>,
    I32EnumAttrCase<"le", 3>, I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::otc";
}

def Otc_CompareOp : Otc_Op<"compare", !listconcat(Otc_ElementwiseFacts, [Pure,
    InferTypeOpAdaptor, AllElementTypesMatch<["lhs", "rhs"]>, Otc_NotDifferentiable])> {
  let summary = "Elementwise comparison with numpy broadcasting, giving booleans";
  let description = [{
    `predicate` is one of eq, ne, lt, le, gt, ge. Comparisons have no
    gradient: a value reached only through them is not trained.

    ```mlir
    %c = otc.compare gt, %x, %zero : tensor<4xf32>, tensor<f32> -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Otc_AnyTensor:$lhs, Otc_AnyTensor:$rhs,
                   Otc_ComparePredicateAttr:$predicate);
  let results = (outs Otc_BoolTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def Otc_NotOp : Otc_Op<"not", !listconcat(Otc_ElementwiseFacts,
    [Pure, SameOperandsAndResultType, Otc_NotDifferentiable])> {
  let summary = "Elementwise logical not";
  let arguments = (ins Otc_BoolTensor:$input);
  let results = (outs Otc_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

class Otc_LogicOp<string mnemonic, string what>
    : Otc_Op<mnemonic, !listconcat(Otc_ElementwiseFacts,
        [Pure, InferTypeOpAdaptor, Otc_NotDifferentiable])> {
  let summary = "Elementwise logical " # what # " with numpy broadcasting";
  let arguments = (ins Otc_BoolTensor:$lhs, Otc_BoolTensor:$rhs);
  let results = (outs Otc_BoolTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def Otc_AndOp : Otc_LogicOp<"and", "and">;
def Otc_OrOp : Otc_LogicOp<"or", "or">;

// Integers of every ONNX width compute in int64, whose two's complement
// bits and, or and xor as those of the narrower type.
class Otc_BitwiseOp<string mnemonic, string what>
    : Otc_Op<mnemonic, !listconcat(Otc_ElementwiseFacts,
        [Pure, InferTypeOpAdaptor, Otc_NotDifferentiable])> {
  let summary = "Elementwise bitwise " # what # " of integers with numpy broadcasting";
  let arguments = (ins Otc_I64Tensor:$lhs, Otc_I64Tensor:$rhs);
  let results = (outs Otc_I64Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def Otc_BitwiseAndOp : Otc_BitwiseOp<"bitwise_and", "and">;
def Otc_BitwiseOrOp : Otc_BitwiseOp<"bitwise_or", "or">;
def Otc_BitwiseXorOp : Otc_BitwiseOp<"bitwise_xor", "xor">;

def Otc_WhereOp : Otc_DiffOp<"where", !listconcat(Otc_ElementwiseFacts, [InferTypeOpAdaptor,
    AllElementTypesMatch<["lhs", "rhs", "result"]>])> {
  let summary = "lhs where the condition holds, else rhs; all three broadcast";
  // Int64 and bool branches too (a run-time mask or position); only float
  // ones carry a gradient.
  let arguments = (ins Otc_BoolTensor:$condition, Otc_AnyTensor:$lhs,
                   Otc_AnyTensor:$rhs);
  let results = (outs Otc_AnyTensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,`
    type($rhs) `->` type($result)
  }];
}

def Otc_DropoutOp : Otc_DiffOp<"dropout", [Otc_F32, Otc_Cheap, Otc_Flops<1>]> {
  let summary = "Zeroes each element with probability `ratio`, scales the rest by 1/(1 - ratio)";
  let description = [{
    The draw for element i is Philox4x32-10 keyed by (the run's seed,
    `stream`) at counter (i, the micro-batch's index in the run), so a run
    is reproducible and every target draws the same mask. The mask (true:
    kept) is the second result; the gradient reads it.
  }];
  let arguments = (ins Otc_FloatTensor:$input, F64Attr:$ratio, I64Attr:$stream);
  let results = (outs Otc_FloatTensor:$output, Otc_BoolTensor:$mask);
  let hasVerifier = 1;
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output) `,` type($mask)";
}

def Otc_CastOp : Otc_DiffOp<"cast", [Otc_Widest, Otc_Cheap, Otc_NoFlops]> {
  let summary = "Converts each element to the result's element type";
  let description = [{
    Float to integer truncates toward zero; anything to bool is `x != 0`;
    bool to a number is 0 or 1. Only a cast between float types passes a
    gradient.
  }];
  let arguments = (ins Otc_AnyTensor:$input);
  let results = (outs Otc_AnyTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

def Otc_MatMulOp : Otc_DiffOp<"matmul", [InferTypeOpAdaptor,
    AllElementTypesMatch<["lhs", "rhs", "result"]>, Otc_Low, Otc_Kept, Otc_OwnFlops]> {
  let summary = "Matrix product over the last two dimensions";
  let description = [{
    `lhs` is `[..., M, K]`. `rhs` is either `[K, N]`, shared by every
    leading index of `lhs`, or `[..., K, N]` with the same leading
    dimensions as `lhs`.

    ```mlir
    %y = otc.matmul %a, %b : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$lhs, Otc_FloatTensor:$rhs);
  let results = (outs Otc_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasCanonicalizer = 1;
}

def Otc_GemmOp : Otc_DiffOp<"gemm", [InferTypeOpAdaptor, Otc_Low, Otc_Kept, Otc_OwnFlops]> {
  let summary = "alpha * op(A) * op(B) + beta * C, as ONNX Gemm";
  let description = [{
    `op(X)` transposes `X` when the matching `trans_*` flag is set. The
    optional `c` is broadcast to the `[M, N]` result.

    ```mlir
    %y = otc.gemm %x, %w, %b {trans_b = true}
        : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$a, Otc_FloatTensor:$b,
                   Optional<Otc_FloatTensor>:$c,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_b,
                   DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                   DefaultValuedAttr<F64Attr, "1.0">:$beta);
  let results = (outs Otc_FloatTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Otc_GemmBiasGradOp : Otc_Op<"gemm_bias_grad",
    [Pure, Otc_NotDifferentiable, Otc_Low, Otc_Kept, Otc_OwnFlops]> {
  let summary = "A weight gradient GEMM and, in its epilogue, the bias gradient";
  let description = [{
    `weight_grad = op(A) op(B)` as `otc.gemm` with alpha 1 and no C, and
    `bias_grad` the sums of `op(A)` (`bias_of = a`, length M) or of `op(B)`
    (`bias_of = b`, length N) over the contraction index. A Linear layer's
    backward is this pair: its operand `g`, the output's gradient, is both
    the product's operand and what the bias gradient sums, so the two read
    `g` once (cuBLASLt's BGRADA/BGRADB epilogues on CUDA). Formed by
    otc-fuse-gemm-epilogues after autodiff. Sums are float32; the results
    have the operands' type or float32, both the same.

    ```mlir
    // bias_of = 1: B (0: A)
    %dw, %db = otc.gemm_bias_grad %x, %g {bias_of = 1 : i32, trans_a = true}
        : (tensor<6x8xf32>, tensor<6x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$a, Otc_FloatTensor:$b,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_b,
                   Otc_BiasOperand:$bias_of);
  let results = (outs Otc_FloatTensor:$weight_grad, Otc_FloatTensor:$bias_grad);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` functional-type(operands, results)
  }];
}

def Otc_GemmGeluOp : Otc_Op<"gemm_gelu",
    [Pure, Otc_NotDifferentiable, Otc_Low, Otc_Kept, Otc_OwnFlops]> {
  let summary = "A GEMM with a bias and the tanh GELU in its epilogue";
  let description = [{
    `preactivation = alpha op(A) op(B) (+ bias over the rows)` and `result =
    gelu_tanh(preactivation)`, both computed in float32 and rounded once
    (cuBLASLt's GELU_AUX_BIAS epilogue on CUDA, whose GELU is the tanh
    form). The preactivation is what the backward's `otc.gelu_grad` reads.
    Formed by otc-fuse-gemm-epilogues with `gelu` after autodiff and
    otc-recompute, from an `otc.gemm` whose result a tanh `otc.gelu` reads.

    ```mlir
    %y, %pre = otc.gemm_gelu %x, %w, %b {trans_b = true}
        : (tensor<6x8xf32>, tensor<16x8xf32>, tensor<16xf32>)
        -> (tensor<6x16xf32>, tensor<6x16xf32>)
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$a, Otc_FloatTensor:$b, Optional<Otc_FloatTensor>:$bias,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_b,
                   DefaultValuedAttr<F64Attr, "1.0">:$alpha);
  let results = (outs Otc_FloatTensor:$result, Otc_FloatTensor:$preactivation);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $a `,` $b (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Otc_GemmDgeluOp : Otc_Op<"gemm_dgelu",
    [Pure, Otc_NotDifferentiable, Otc_Low, Otc_Kept, Otc_OwnFlops]> {
  let summary = "A GEMM whose epilogue multiplies by the tanh GELU's derivative";
  let description = [{
    `result = (alpha op(A) op(B)) * gelu_tanh'(preactivation)`, in float32
    before one rounding (cuBLASLt's DGELU epilogue, the preactivation its
    auxiliary input): the input gradient of the Linear after a tanh GELU
    and the GELU's gradient in one pass. Formed by otc-fuse-gemm-epilogues
    with `after-autodiff` from an `otc.gelu_grad` of a gemm's result.

    ```mlir
    %dpre = otc.gemm_dgelu %dy, %w, %pre
        : (tensor<6x4xf32>, tensor<4x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$a, Otc_FloatTensor:$b, Otc_FloatTensor:$preactivation,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_b,
                   DefaultValuedAttr<F64Attr, "1.0">:$alpha);
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $a `,` $b `,` $preactivation attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Otc_TransposeOp : Otc_DiffOp<"transpose",
    [InferTypeOpAdaptor, Otc_Widest, Otc_Cheap, Otc_NoFlops]> {
  let summary = "Permutes dimensions: result dim i is input dim perm[i]";
  let arguments = (ins Otc_AnyTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Otc_AnyTensor:$result);
  let assemblyFormat = "$input $perm attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Otc_ReshapeOp : Otc_DiffOp<"reshape", [Otc_Widest, Otc_Cheap, Otc_NoFlops]> {
  let summary = "Reinterprets the elements in row-major order with a new shape";
  let arguments = (ins Otc_AnyTensor:$input);
  let results = (outs Otc_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Otc_GatherOp : Otc_DiffOp<"gather", [InferTypeOpAdaptor, Otc_Widest, Otc_Kept, Otc_NoFlops]> {
  let summary = "Slices of `data` along `axis` at `indices`, as ONNX Gather";
  let description = [{
    The result's shape is data's dims before `axis`, then the indices'
    dims, then data's dims after `axis`. An index may be negative (counted
    from the end). One out of [-n, n) reads 0: the runtime refuses such
    indices in its data files, so only computed ones can get there.
  }];
  // Int64 and bool data too (a scatter of labels); only floats carry a
  // gradient.
  let arguments = (ins Otc_AnyTensor:$data, Otc_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Otc_AnyTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` type($data) `,` type($indices) `->` type($result)
  }];
}

// Float32 always: its sums are, and the kernel library's is float32 only.
def Otc_GatherGradOp : Otc_DiffOp<"gather_grad", [Otc_F32, Otc_Kept, Otc_FlopsPerInput<1>]> {
  let summary = "Gradient of gather: `grad` slices summed into a zero tensor at `indices`";
  let description = [{
    A deterministic scatter-add: each element of the result sums its
    contributions in the order of the indices, on every run and target.
    Code generation makes it a call to the kernel library. Besides gather's
    gradient, it is the scatter of ScatterND and ScatterElements with
    run-time indices, so it has a gradient too: the gather of dy.
  }];
  let arguments = (ins Otc_FloatTensor:$grad, Otc_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` type($grad) `,` type($indices) `->` type($result)
  }];
}

def Otc_SliceOp : Otc_DiffOp<"slice", [Otc_Widest, Otc_Kept, Otc_NoFlops]> {
  let summary = "Every `steps`-th element from `starts`, per dim";
  let description = [{
    The result type gives the count along each dim. Starts are
    non-negative and steps positive (the importer normalises ONNX Slice).
  }];
  let arguments = (ins Otc_AnyTensor:$input, DenseI64ArrayAttr:$starts,
                   DenseI64ArrayAttr:$steps);
  let results = (outs Otc_AnyTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "$input $starts $steps attr-dict `:` type($input) `->` type($result)";
}

def Otc_SliceGradOp : Otc_Op<"slice_grad",
    [Pure, Otc_NotDifferentiable, Otc_Widest, Otc_Kept, Otc_NoFlops]> {
  let summary = "Gradient of slice: `grad` placed at the slice in a zero tensor";
  let arguments = (ins Otc_FloatTensor:$grad, DenseI64ArrayAttr:$starts,
                   DenseI64ArrayAttr:$steps);
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "$grad $starts $steps attr-dict `:` type($grad) `->` type($result)";
}

def Otc_ConcatOp : Otc_DiffOp<"concat", [InferTypeOpAdaptor, Otc_Widest, Otc_Kept, Otc_NoFlops]> {
  let summary = "Joins the inputs along `axis`";
  let arguments = (ins Variadic<Otc_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs Otc_AnyTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
}

def Otc_BroadcastToOp : Otc_DiffOp<"broadcast_to", [Otc_Widest, Otc_Cheap, Otc_NoFlops]> {
  let summary = "Broadcasts the input to the result shape, numpy style";
  // Bool and int64 too: masks and positions that depend on the data.
  let arguments = (ins Otc_AnyTensor:$input);
  let results = (outs Otc_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Otc_ReduceOp<string mnemonic, string what>
    : Otc_DiffOp<mnemonic, [InferTypeOpAdaptor, Otc_F32, Otc_Kept, Otc_FlopsPerInput<1>]> {
  let summary = what # " over `axes` (sorted, non-negative, unique)";
  let arguments = (ins Otc_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                   DefaultValuedAttr<BoolAttr, "false">:$keepdims);
  let results = (outs Otc_FloatTensor:$result);
  let assemblyFormat = "$input $axes attr-dict `:` type($input) `->` type($result)";
}

def Otc_ReduceSumOp : Otc_ReduceOp<"reduce_sum", "Sum">;
def Otc_ReduceMeanOp : Otc_ReduceOp<"reduce_mean", "Mean">;
// The gradient splits evenly among tied maxima, as PyTorch's amax. ONNX's
// ReduceMin, ReduceLogSumExp and friends are composed from it at import.
def Otc_ReduceMaxOp : Otc_ReduceOp<"reduce_max", "Maximum">;

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

class Otc_SoftmaxLikeOp<string mnemonic, string what>
    : Otc_DiffOp<mnemonic, [SameOperandsAndResultType, Otc_F32, Otc_Kept, Otc_FlopsPerInput<5>]> {
  let summary = what # " along `axis`";
  let description = [{
    Code generation makes it one RowReduce step: the max and the sum of
    exponentials over the axis, then the result over the same row.
  }];
  let arguments = (ins Otc_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// Five FLOPs per element: mean, subtract, square, sum, scale.
def Otc_NormalizeOp : Otc_DiffOp<"normalize",
    [SameOperandsAndResultType, Otc_F32, Otc_Cheap, Otc_FlopsPerInput<5>]> {
  let summary = "(x - mean) / sqrt(var + epsilon) over the dims from `axis` on";
  let description = [{
    Layer normalization without its scale and bias, which stay elementwise
    ops so that their gradients come from the primitives. The variance is
    the population variance, as in ONNX LayerNormalization and PyTorch.
    With `center = false` it is RMS normalization, x / sqrt(mean(x²) +
    epsilon), which otc-fuse-rms-norm forms from the hand-written pattern.
    Code generation makes it one RowReduce step (mean, variance, result).

    ```mlir
    %y = otc.normalize %x {axis = 2 : i64, epsilon = 1.0e-6 : f64, center = false}
        : tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$input, I64Attr:$axis, F64Attr:$epsilon,
                   DefaultValuedAttr<BoolAttr, "true">:$center);
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// Three FLOPs per element: two products and a sum.
def Otc_RotaryOp : Otc_DiffOp<"rotary", [Otc_Widest, Otc_Cheap, Otc_Flops<3>]> {
  let summary = "Rotary position embedding: x cos + rotate_half(x) sin";
  let description = [{
    With h half the last dim and rotate_half(x) = concat(-x[.., h:],
    x[.., :h]) (LLaMA's, GPT-NeoX's):
    y[.., c] = x[.., c] cos[.., c] + s(c) x[.., c ± h] sin[.., c], where
    s(c) is -1 in the first half and +1 in the second. `cos` and `sin`
    broadcast to x. With `transposed`, the second term reads sin at the
    partner position c ± h and is negated: that is the transpose in x, so
    x's gradient is the same op with `transposed` flipped.
    otc-fuse-rotary forms it from the exported pattern. Code generation
    makes it one elementwise step per half.

    ```mlir
    %y = otc.rotary %x, %cos, %sin {transposed = false}
        : tensor<2x4x6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32> -> tensor<2x4x6x8xf32>
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$input, Otc_FloatTensor:$cos, Otc_FloatTensor:$sin,
                   DefaultValuedAttr<BoolAttr, "false">:$transposed);
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `,` $cos `,` $sin attr-dict `:` type($input) `,` type($cos) `,` type($sin) `->`
    type($result)
  }];
}

def Otc_NormalizeGradOp : Otc_Op<"normalize_grad", [Pure, SameOperandsAndResultType,
    Otc_NotDifferentiable, Otc_F32, Otc_Kept, Otc_Flops<8>]> {
  let summary = "Gradient of normalize: rstd * (g - mean(g) - y * mean(g * y))";
  let description = [{
    One fused RowReduce step: it recomputes the row's mean and rstd from the
    input (cheaper than keeping them), then the two sums over g. Without
    centering (RMS normalization) the mean(g) term drops out.
  }];
  let arguments = (ins Otc_FloatTensor:$grad, Otc_FloatTensor:$input, I64Attr:$axis,
                   F64Attr:$epsilon, DefaultValuedAttr<BoolAttr, "true">:$center);
  let results = (outs Otc_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($grad)";
}

// Seven FLOPs per element: normalize's five, the scale and the bias.
def Otc_LayerNormOp : Otc_DiffOp<"layer_norm",
    [AllTypesMatch<["input", "result"]>, AllTypesMatch<["mean", "rstd"]>, Otc_F32, Otc_Cheap,
     Otc_FlopsPerInput<7>]> {
  let summary = "normalize(x) * scale + bias over the dims from `axis` on, and its row statistics";
  let description = [{
    Layer normalization (or RMS normalization, `center = false`) with its
    affine: `scale` and the optional `bias` have the normalized dims' shape,
    x.shape[axis:]. otc-fuse-layer-norm forms it from `otc.normalize` and
    the elementwise scale and bias, so that code generation makes the
    forward one RowReduce step, computed in float32 and rounded once (as
    autocast's float32 layer_norm).

    `mean` and `rstd` are each row's mean (zero without centering) and
    1 / sqrt(var + epsilon), shaped as x with the normalized dims 1, as
    PyTorch's layer_norm keeps them for its backward. The gradient is
    composed from them: the scale's is the column sum of g * x̂, with
    x̂ = (x - mean) * rstd an elementwise value fused into that sum, so no
    normalized copy is kept or recomputed; the bias's is the column sum of
    g; x's is normalize_grad of g * scale.

    ```mlir
    %y, %mean, %rstd = otc.layer_norm %x, %w, %b {axis = 2 : i64, epsilon = 1.0e-5 : f64}
        : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x8x1xf32>
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$input, Otc_FloatTensor:$scale,
                   Optional<Otc_FloatTensor>:$bias, I64Attr:$axis, F64Attr:$epsilon,
                   DefaultValuedAttr<BoolAttr, "true">:$center);
  let results = (outs Otc_FloatTensor:$result, Otc_FloatTensor:$mean, Otc_FloatTensor:$rstd);
  let hasVerifier = 1;
  // The statistics' type follows from the input's and the axis.
  let builders = [OpBuilder<(ins "mlir::Value":$input, "mlir::Value":$scale, "mlir::Value":$bias,
                                 "mlir::IntegerAttr":$axis, "mlir::FloatAttr":$epsilon,
                                 "mlir::BoolAttr":$center)>];
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:` type($input) `,` type($scale)
    (`,` type($bias)^)? `->` type($mean)
  }];
}

// Six FLOPs per element: the two sums, the centring, the square, the
// scale and the bias.
def Otc_BatchNormOp : Otc_DiffOp<"batch_norm",
    [InferTypeOpAdaptor, AllTypesMatch<["input", "result"]>, AllTypesMatch<["mean", "var"]>,
     Otc_Widest, Otc_Kept, Otc_FlopsPerInput<6>]> {
  let summary = "Batch normalization with the batch's statistics, and the statistics";
  let description = [{
    BatchNormalization in training mode: per channel (dim 1) c,
    y = (x - mean) / sqrt(var + epsilon) * scale[c] + bias[c], with mean
    and var the population mean and variance over every other dim, returned
    shaped [1, C, 1, ...] (the running statistics' update reads them). Code
    generation makes it two per-channel reductions and one elementwise
    step, in float32. The gradient is composed from x and the statistics:
    x's is batch_norm_grad of g * scale, the scale's the channel sums of
    g * (x - mean) * rstd, the bias's those of g. So only x is kept, not
    the centred or normalized copies that autodiff of the written-out
    formula keeps.

    y has x's type. Under mixed precision it runs as PyTorch's does under
    autocast: x keeps its type (16-bit after a convolution), scale and bias
    stay float32, and the statistics are float32 for 16-bit x.

    ```mlir
    %y, %mean, %var = otc.batch_norm %x, %w, %b {epsilon = 1.0e-5 : f64}
        : tensor<8x16x4x4xbf16>, tensor<16xf32>, tensor<16xf32> -> tensor<1x16x1x1xf32>
    ```
  }];
  let extraClassDeclaration = [{
    bool followsAutocast(unsigned operand) { return operand == 0; }
  }];
  let arguments = (ins Otc_FloatTensor:$input, Otc_FloatTensor:$scale, Otc_FloatTensor:$bias,
                   F64Attr:$epsilon);
  let results = (outs Otc_FloatTensor:$result, Otc_FloatTensor:$mean, Otc_FloatTensor:$var);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `,` $scale `,` $bias attr-dict `:` type($input) `,` type($scale) `,` type($bias)
    `->` type($mean)
  }];
}

def Otc_BatchNormGradOp : Otc_Op<"batch_norm_grad", [Pure, AllTypesMatch<["input", "result"]>,
    AllTypesMatch<["mean", "var"]>, Otc_NotDifferentiable, Otc_F32, Otc_Kept, Otc_FlopsPerInput<8>]> {
  let summary = "Gradient of batch normalization's normalize: rstd (g - mean(g) - x̂ mean(g x̂))";
  let description = [{
    With x̂ = (x - mean) rstd and rstd = 1 / sqrt(var + epsilon), per
    channel: two channel sums (of g and of g (x - mean)), then one
    elementwise step; x̂ is computed in each, never stored. `grad` is the
    output's gradient times the scale (float32 under mixed precision, with
    x's shape); the result has x's type.
  }];
  let arguments = (ins Otc_FloatTensor:$grad, Otc_FloatTensor:$input, Otc_FloatTensor:$mean,
                   Otc_FloatTensor:$var, F64Attr:$epsilon);
  let results = (outs Otc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $grad `,` $input `,` $mean `,` $var attr-dict `:` type($grad) `,` type($input) `,` type($mean)
  }];
}

def Otc_SoftmaxOp : Otc_SoftmaxLikeOp<"softmax", "exp(x - max) / sum(exp(x - max))">;
def Otc_LogSoftmaxOp : Otc_SoftmaxLikeOp<"log_softmax", "x - max - log(sum(exp(x - max)))">;

include "otc/Dialect/WindowOps.td"
include "otc/Dialect/AttentionOps.td"
include "otc/Dialect/RecurrentOps.td"

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Otc_SoftmaxCrossEntropyOp : Otc_DiffOp<"softmax_cross_entropy",
    [InferTypeOpAdaptor, Otc_F32, Otc_Kept, Otc_FlopsPerInput<5>]> {
  let summary = "Mean softmax cross-entropy of [N, C] logits against [N] labels";
  let description = [{
    Samples whose label equals `ignore_index` count neither in the sum nor
    in the divisor, as in ONNX SoftmaxCrossEntropyLoss with mean reduction.
  }];
  let arguments = (ins Otc_FloatTensor:$logits, Otc_IndexTensor:$labels,
                   OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Otc_FloatScalar:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->` type($result)
  }];
}

def Otc_SoftmaxCrossEntropyGradOp : Otc_Op<"softmax_cross_entropy_grad", [Pure,
    AllTypesMatch<["logits", "result"]>, Otc_NotDifferentiable, Otc_F32, Otc_Kept, Otc_Flops<5>]> {
  let summary = "Gradient of softmax_cross_entropy with respect to the logits";
  let arguments = (ins Otc_FloatScalar:$grad, Otc_FloatTensor:$logits,
                   Otc_IndexTensor:$labels, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Otc_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $labels attr-dict `:` type($grad) `,` type($logits) `,` type($labels)
  }];
  let hasVerifier = 1;
}

// otc-fuse-cross-entropy's: the two above over one row pass.
def Otc_SoftmaxCrossEntropyWithGradOp : Otc_Op<"softmax_cross_entropy_with_grad",
    [Pure, AllTypesMatch<["logits", "logits_grad"]>, Otc_NotDifferentiable, Otc_F32, Otc_Kept,
     Otc_OwnFlops]> {
  let summary = "softmax_cross_entropy and its gradient from one read of the logits";
  let description = [{
    `loss` is softmax_cross_entropy(logits, labels) and `logits_grad`
    softmax_cross_entropy_grad(grad, logits, labels): each row's maximum,
    sum of exponentials and labelled logit give both its loss and its
    gradient, which code generation writes over the logits (llm.c's fused
    classifier). Formed after autodiff, where the seed `grad` does not
    depend on the loss.

    ```mlir
    %loss, %dlogits = otc.softmax_cross_entropy_with_grad %seed, %logits, %labels
        : tensor<f32>, tensor<16x50257xf32>, tensor<16xi64> -> tensor<f32>, tensor<16x50257xf32>
    ```
  }];
  let arguments = (ins Otc_FloatScalar:$grad, Otc_FloatTensor:$logits,
                   Otc_IndexTensor:$labels, OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Otc_FloatScalar:$loss, Otc_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $grad `,` $logits `,` $labels attr-dict `:` type($grad) `,` type($logits) `,` type($labels)
    `->` type($loss) `,` type($logits_grad)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

def Otc_AccumulateOp : Otc_Op<"accumulate", [Pure, AllTypesMatch<["acc", "grad", "result"]>,
    Otc_NotDifferentiable, Otc_Widest, Otc_Kept, Otc_Flops<1>]> {
  let summary = "grad on the first micro-batch of a window, else acc + grad";
  let description = [{
    Adds a micro-batch's gradient into a persistent gradient buffer. On the
    first micro-batch the buffer's old contents are never read, so no kernel
    has to zero it.

    ```mlir
    %new = otc.accumulate %acc, %g, %first : tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$acc, Otc_FloatTensor:$grad, I1:$first);
  let results = (outs Otc_FloatTensor:$result);
  let assemblyFormat = "$acc `,` $grad `,` $first attr-dict `:` type($result)";
}

def Otc_AssignOp : Otc_Op<"assign", [MemoryEffects<[MemWrite]>,
    AllTypesMatch<["target", "value"]>, Otc_NotDifferentiable, Otc_F32, Otc_Kept, Otc_NoFlops]> {
  let summary = "Writes `value` into the parameter `target`, for later steps";
  let description = [{
    State that a forward op updates itself, such as BatchNormalization's
    running statistics: code generation stores `value` into the
    parameter's memory where the op stands, and `--save` writes it out.
    `target` must be a parameter argument, and every other read of it must
    come before the assign.

    ```mlir
    otc.assign %new into %running_mean : tensor<4xf32>
    ```
  }];
  let arguments = (ins Otc_FloatTensor:$target, Otc_FloatTensor:$value);
  let hasVerifier = 1;
  let assemblyFormat = "$value `into` $target attr-dict `:` type($target)";
}

#endif // OTC_OPS
