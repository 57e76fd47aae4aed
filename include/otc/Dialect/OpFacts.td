#ifndef OTC_OP_FACTS
#define OTC_OP_FACTS

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// What the passes need to know about every op, declared on the op. Every otc
// op implements OpFactsInterface (Otc_Op adds it); its methods come from one
// trait of each group below, so an op that leaves a group out does not
// compile, and test/unit/OpRegistryTest.cpp checks the rest (a gradient rule
// or Otc_NotDifferentiable, and a codegen rule) for every registered op.
//===----------------------------------------------------------------------===//

// otc-mixed-precision's class of an op, as autocast's op lists.
def Otc_PrecisionClass : I32EnumAttr<"PrecisionClass", "autocast class of an op", [
    // Low-precision operands, float32 sums (GEMMs).
    I32EnumAttrCase<"Low", 0, "low">,
    // Always float32: statistics, reductions, exp/log/pow, losses.
    I32EnumAttrCase<"F32", 1, "f32">,
    // The widest type of its float operands.
    I32EnumAttrCase<"Widest", 2, "widest">]> {
  let cppNamespace = "::otc";
  let genSpecializedAttr = 0;
}

// otc-recompute's class of an op under `selective` and outside segments.
def Otc_RecomputeClass : I32EnumAttr<"RecomputeClass", "recompute class of an op", [
    // A pass over memory (elementwise, views, casts, dropout, normalize):
    // recomputed rather than kept.
    I32EnumAttrCase<"Cheap", 0, "cheap">,
    // GEMMs, windows, softmax, reductions: kept.
    I32EnumAttrCase<"Kept", 1, "kept">]> {
  let cppNamespace = "::otc";
  let genSpecializedAttr = 0;
}

def Otc_OpFactsInterface : OpInterface<"OpFactsInterface"> {
  let description = [{
    The facts about an op that passes other than its own need: its autocast
    class, its recompute class and its FLOP count. Each comes from a trait
    in the op's definition (Otc_Low, Otc_Cheap, Otc_Flops<1>, ...); there is
    no default. `followsAutocast` alone has one (every operand follows the
    class), which an op with an exception declares over.
  }];
  let cppNamespace = "::otc";
  let methods = [
    StaticInterfaceMethod<"The autocast class (otc-mixed-precision).",
      "::otc::PrecisionClass", "getPrecisionClass">,
    StaticInterfaceMethod<"The recompute class (otc-recompute).",
      "::otc::RecomputeClass", "getRecomputeClass">,
    InterfaceMethod<"The floating-point operations of one execution.",
      "int64_t", "getFlopCount">,
    InterfaceMethod<[{Whether otc-mixed-precision casts float operand `operand` to the
      type of the op's class. An op whose operand must keep its type (an
      additive attention mask) declares its own.}],
      "bool", "followsAutocast", (ins "unsigned":$operand), "", "return true;">,
  ];
}

class Otc_Fact<string name, code decl>
    : NativeOpTrait<name, [], decl> {
  let cppNamespace = "::otc::trait";
}

// Autocast class.
def Otc_Low : Otc_Fact<"PrecisionFact", [{
  static ::otc::PrecisionClass getPrecisionClass() { return ::otc::PrecisionClass::Low; }
}]>;
def Otc_F32 : Otc_Fact<"PrecisionFact", [{
  static ::otc::PrecisionClass getPrecisionClass() { return ::otc::PrecisionClass::F32; }
}]>;
def Otc_Widest : Otc_Fact<"PrecisionFact", [{
  static ::otc::PrecisionClass getPrecisionClass() { return ::otc::PrecisionClass::Widest; }
}]>;

// Recompute class.
def Otc_Cheap : Otc_Fact<"RecomputeFact", [{
  static ::otc::RecomputeClass getRecomputeClass() { return ::otc::RecomputeClass::Cheap; }
}]>;
def Otc_Kept : Otc_Fact<"RecomputeFact", [{
  static ::otc::RecomputeClass getRecomputeClass() { return ::otc::RecomputeClass::Kept; }
}]>;

// FLOP count: `n` per element of the first result (elementwise ops), `n`
// per element of the first operand (reductions, row kernels), none (data
// movement), or the op's own getFlopCount in its .cpp (products, windows).
class Otc_Flops<int n> : Otc_Fact<"FlopsFact",
    "int64_t getFlopCount() { return " # n #
    " * ::otc::resultElements(getOperation()); }">;
class Otc_FlopsPerInput<int n> : Otc_Fact<"FlopsFact",
    "int64_t getFlopCount() { return " # n #
    " * ::otc::operandElements(getOperation()); }">;
def Otc_NoFlops : Otc_Fact<"FlopsFact", [{
  int64_t getFlopCount() { return 0; }
}]>;
def Otc_OwnFlops : Otc_Fact<"FlopsFact", [{
  int64_t getFlopCount();
}]>;

// An op without a gradient rule: a comparison, an integer op, a gradient,
// a state update. Autodiff passes no gradient through it.
def Otc_NotDifferentiable : NativeOpTrait<"NotDifferentiable"> {
  let cppNamespace = "::otc::trait";
}

#endif // OTC_OP_FACTS
