// Every registered otc op declares every fact the compiler needs about it:
// a gradient rule or Otc_NotDifferentiable, the facts interface (autocast
// class, recompute class, FLOP count: OpFacts.td, checked at build time),
// and a codegen rule. A missing one fails here, naming the op.
#include "../../codegen/Rules.h"
#include "otc/Dialect/OtcDialect.h"

#include "mlir/IR/MLIRContext.h"
#include <gtest/gtest.h>

using namespace mlir;

namespace {

std::vector<RegisteredOperationName> otcOps(MLIRContext &ctx) {
  ctx.loadDialect<otc::OtcDialect>();
  std::vector<RegisteredOperationName> ops;
  for (RegisteredOperationName name : ctx.getRegisteredOperations())
    if (name.getDialectNamespace() == otc::OtcDialect::getDialectNamespace())
      ops.push_back(name);
  return ops;
}

TEST(OpRegistry, EveryOpHasItsFacts) {
  MLIRContext ctx;
  std::vector<RegisteredOperationName> ops = otcOps(ctx);
  ASSERT_GT(ops.size(), 40u);
  const otc::RuleRegistry &rules = otc::RuleRegistry::get();
  for (RegisteredOperationName op : ops) {
    StringRef name = op.getStringRef();
    bool gradient = op.hasInterface<otc::GradientOpInterface>();
    bool notDifferentiable = op.hasTrait<otc::trait::NotDifferentiable>();
    EXPECT_TRUE(gradient != notDifferentiable)
        << name.str() << ": needs a gradient rule (Otc_DiffOp) or Otc_NotDifferentiable, "
        << "not " << (gradient ? "both" : "neither");
    EXPECT_TRUE(op.hasInterface<otc::OpFactsInterface>()) << name.str() << ": no op facts";
    EXPECT_TRUE(rules.elementwise.count(name) + rules.steps.count(name) == 1)
        << name.str() << ": needs exactly one codegen rule (codegen/rules/)";
  }
}

// The facts are read through the interface as the passes read them.
TEST(OpRegistry, FactsReadThroughTheInterface) {
  MLIRContext ctx;
  otcOps(ctx);
  auto facts = [&](StringRef name) {
    return RegisteredOperationName::lookup(name, &ctx)->getInterface<otc::OpFactsInterface>();
  };
  EXPECT_EQ(facts("otc.matmul")->getPrecisionClass(), otc::PrecisionClass::Low);
  EXPECT_EQ(facts("otc.exp")->getPrecisionClass(), otc::PrecisionClass::F32);
  EXPECT_EQ(facts("otc.tanh")->getPrecisionClass(), otc::PrecisionClass::Widest);
  EXPECT_EQ(facts("otc.add")->getRecomputeClass(), otc::RecomputeClass::Cheap);
  EXPECT_EQ(facts("otc.softmax")->getRecomputeClass(), otc::RecomputeClass::Kept);
}

} // namespace
