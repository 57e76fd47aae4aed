// --freeze's patterns and the PyTorch names of anonymous initializers
// (frontend/ParameterNames.h), against hand-derived answers.
#include "ParameterNames.h"

#include <gtest/gtest.h>

namespace {

TEST(GlobMatch, StarMatchesAnyRun) {
  EXPECT_TRUE(otc::globMatch("gamma", "gamma"));
  EXPECT_FALSE(otc::globMatch("gamma", "gamma2"));
  EXPECT_TRUE(otc::globMatch("encoder.*", "encoder.layer.0.weight"));
  EXPECT_FALSE(otc::globMatch("encoder.*", "decoder.layer.0.weight"));
  EXPECT_TRUE(otc::globMatch("*mlp*", "model.layers.0.mlp.up_proj.weight"));
  EXPECT_TRUE(otc::globMatch("*.bias", "h.0.attn.bias"));
  EXPECT_FALSE(otc::globMatch("*.bias", "h.0.attn.bias_k"));
  EXPECT_TRUE(otc::globMatch("*", ""));
  EXPECT_TRUE(otc::globMatch("a*b*c", "abc"));
  EXPECT_TRUE(otc::globMatch("a*b*c", "a.b.b.c"));
  EXPECT_FALSE(otc::globMatch("a*b*c", "a.c.b"));
  EXPECT_FALSE(otc::globMatch("", "x"));
  // Only '*' is special: '?' and '[' are plain characters.
  EXPECT_TRUE(otc::globMatch("w?[0]", "w?[0]"));
  EXPECT_FALSE(otc::globMatch("w?", "wx"));
}

void addNode(onnx::GraphProto &g, const char *name, const char *op, std::vector<const char *> inputs) {
  onnx::NodeProto *n = g.add_node();
  n->set_name(name);
  n->set_op_type(op);
  for (const char *in : inputs)
    n->add_input(in);
}

TEST(ExportedNames, FromTheReadersModulePath) {
  onnx::GraphProto g;
  for (const char *name : {"onnx::MatMul_1", "onnx::MatMul_2", "onnx::Add_3", "onnx::MatMul_4",
                           "onnx::Mul_5", "named.weight"})
    g.add_initializer()->set_name(name);
  addNode(g, "/model/layers.0/mlp/up_proj/MatMul", "MatMul", {"x", "onnx::MatMul_1"});
  addNode(g, "/model/layers.0/mlp/up_proj/Add", "Add", {"onnx::Add_3", "y"});
  // Read by two modules: no single name.
  addNode(g, "/a/MatMul", "MatMul", {"x", "onnx::MatMul_2"});
  addNode(g, "/b/MatMul", "MatMul", {"x", "onnx::MatMul_2"});
  // The data operand of a MatMul is not a weight.
  addNode(g, "/head/MatMul", "MatMul", {"onnx::MatMul_4", "x"});
  // A node name that is no module path.
  addNode(g, "Mul_7", "Mul", {"onnx::Mul_5", "x"});
  addNode(g, "/c/MatMul", "MatMul", {"x", "named.weight"});

  llvm::StringMap<std::string> names = otc::exportedNames(g);
  EXPECT_EQ(names.lookup("onnx::MatMul_1"), "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(names.lookup("onnx::Add_3"), "model.layers.0.mlp.up_proj");
  EXPECT_EQ(names.lookup("onnx::MatMul_4"), "head");
  EXPECT_FALSE(names.contains("onnx::MatMul_2"));
  EXPECT_FALSE(names.contains("onnx::Mul_5"));
  EXPECT_FALSE(names.contains("named.weight"));
}

TEST(CalledAgain, TheExportersCallSuffix) {
  // ALBERT's shared layer, called twice: the second call's scope is "_1".
  EXPECT_TRUE(otc::sameModuleCalledAgain("model.layer.attention.dense", "model.layer.attention.dense_1"));
  EXPECT_TRUE(otc::sameModuleCalledAgain("a.ffn_2", "a.ffn"));
  EXPECT_TRUE(otc::sameModuleCalledAgain("a.b", "a.b"));
  // Deep copies, and modules that merely end in digits, are other modules.
  EXPECT_FALSE(otc::sameModuleCalledAgain("model.layers.0.mlp", "model.layers.1.mlp"));
  EXPECT_FALSE(otc::sameModuleCalledAgain("block_1", "block_2"));
  EXPECT_FALSE(otc::sameModuleCalledAgain("dense", "dense_x"));
  EXPECT_FALSE(otc::sameModuleCalledAgain("dense", "dense_"));
  EXPECT_FALSE(otc::sameModuleCalledAgain("a.dense", "dense_1"));
  EXPECT_FALSE(otc::sameModuleCalledAgain("", ""));
}

TEST(ReaderModule, IdentitiesAside) {
  onnx::GraphProto g;
  addNode(g, "Identity_3", "Identity", {"onnx::MatMul_1"});
  addNode(g, "/m/dense/MatMul", "MatMul", {"x", "onnx::MatMul_1"});
  addNode(g, "/m/dense/MatMul_1", "MatMul", {"y", "onnx::MatMul_1"});
  addNode(g, "/m/a/MatMul", "MatMul", {"x", "onnx::MatMul_2"});
  addNode(g, "/m/b/MatMul", "MatMul", {"x", "onnx::MatMul_2"});
  EXPECT_EQ(otc::readerModule(g, "onnx::MatMul_1"), "m.dense");
  EXPECT_EQ(otc::readerModule(g, "onnx::MatMul_2"), "");
  EXPECT_EQ(otc::readerModule(g, "unread"), "");
}

} // namespace
