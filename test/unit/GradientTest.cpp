// Each operator's gradient rule, checked through the autodiff pass against
// central finite differences of the forward function, in float64.
#include "Interpreter.h"

#include "otc/Frontend/Import.h"
#include "otc/Passes/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include <gtest/gtest.h>
#include <random>

using namespace mlir;
using otc::test::Tensor;

namespace {

struct Case {
  const char *name;
  std::string args; // trainable parameters and inputs, MLIR syntax
  std::string body; // defines %y of type `type`
  std::string type;
  std::vector<int64_t> shape; // of %y
  std::vector<double> labels = {}; // the values of a %labels input, if any
};

/// Wraps the case in a loss: the sum of %y weighted by a fixed random input,
/// so every element of %y gets a distinct gradient.
// Names the case instead of dumping its bytes when a test fails.
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

std::string program(const Case &c) {
  std::string t = c.type;
  return "func.func @f(" + c.args + ", %weights: " + t + " {otc.input = \"weights\"}) -> (tensor<f64> {otc.loss}) {\n" +
         c.body + "\n  %p = otc.mul %y, %weights : " + t + ", " + t + " -> " + t +
         "\n  %l = otc.reduce_sum %p [" +
         [&] {
           std::string s;
           for (size_t i = 0; i < c.shape.size(); ++i)
             s += (i ? ", " : "") + std::to_string(i);
           return s;
         }() + "] : " + t + " -> tensor<f64>\n  return %l : tensor<f64>\n}\n";
}

std::vector<int64_t> shapeOf(Type t) {
  auto s = cast<RankedTensorType>(t).getShape();
  return {s.begin(), s.end()};
}

class GradientTest : public ::testing::TestWithParam<Case> {};

/// Checks the autodiff gradient of every trainable argument of `forward`'s
/// function (whose result is the loss) against central differences.
void checkGradients(ModuleOp forwardModule, const std::string &name,
                    const std::vector<double> &labels);

TEST_P(GradientTest, MatchesFiniteDifferences) {
  const Case &c = GetParam();
  MLIRContext ctx;
  ctx.loadDialect<otc::OtcDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> forward = parseSourceString<ModuleOp>(program(c), &ctx);
  ASSERT_TRUE(forward) << program(c);
  checkGradients(*forward, c.name, c.labels);
}

/// What the importer composes, from float64 ONNX models (Inputs/make_models.py):
/// recurrent layers unrolled (backpropagation through time, through both
/// directions and into the initial states), and the composed losses.
class ImportedGradientTest : public ::testing::TestWithParam<const char *> {};

TEST_P(ImportedGradientTest, MatchesFiniteDifferences) {
  MLIRContext ctx;
  ctx.loadDialect<otc::OtcDialect, func::FuncDialect>();
  std::string path = std::string(OTC_UNIT_INPUTS) + "/" + GetParam() + ".onnx", error;
  otc::ImportOptions options;
  options.forwardOnly = true; // fixed shapes; the loss is the only output
  OwningOpRef<ModuleOp> forward = otc::importOnnxModel(ctx, path, options, error);
  ASSERT_TRUE(forward) << error;
  PassManager cleanup(&ctx);
  otc::buildForwardPipeline(cleanup);
  ASSERT_TRUE(succeeded(cleanup.run(*forward)));
  auto f = *forward->getOps<func::FuncOp>().begin();
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (f.getArgAttr(i, otc::attr::kParam))
      f.setArgAttr(i, otc::attr::kTrainable, UnitAttr::get(&ctx));
  f.removeResultAttr(0, StringAttr::get(&ctx, otc::attr::kOutput));
  f.setResultAttr(0, otc::attr::kLoss, UnitAttr::get(&ctx));
  checkGradients(*forward, GetParam(), {});
}

INSTANTIATE_TEST_SUITE_P(Onnx, ImportedGradientTest,
                         ::testing::Values("lstm_f64", "gru_f64", "gru_lbr_f64", "rnn_f64",
                                           "rnn_relu_f64", "lstm_lens_f64", "gru_lens_f64",
                                           "rnn_lens_f64", "losses_f64", "gelu_f64",
                                           "activations_f64"),
                         [](const auto &info) { return std::string(info.param); });

void checkGradients(ModuleOp forwardModule, const std::string &name,
                    const std::vector<double> &labels) {
  MLIRContext &ctx = *forwardModule.getContext();
  OwningOpRef<ModuleOp> forward = forwardModule.clone();
  OwningOpRef<ModuleOp> backward = forward->clone();
  PassManager pm(&ctx);
  pm.addPass(otc::createAutodiff());
  ASSERT_TRUE(succeeded(pm.run(*backward)));
  auto fwd = *forward->getOps<func::FuncOp>().begin();
  auto bwd = *backward->getOps<func::FuncOp>().begin();

  std::mt19937 rng(42);
  std::uniform_real_distribution<double> mag(0.3, 1.3);
  std::vector<Tensor> args;
  std::vector<unsigned> trainable;
  for (BlockArgument a : fwd.getArguments()) {
    Tensor t{shapeOf(a.getType()), {}};
    int64_t n = 1;
    for (int64_t d : t.shape)
      n *= d;
    if (fwd.getArgAttrOfType<StringAttr>(a.getArgNumber(), "otc.input") &&
        fwd.getArgAttrOfType<StringAttr>(a.getArgNumber(), "otc.input").getValue() == "labels")
      t.data = labels;
    else
      for (int64_t i = 0; i < n; ++i) // away from 0: no relu kink, no 1/0
        t.data.push_back(rng() % 2 ? mag(rng) : -mag(rng));
    if (fwd.getArgAttr(a.getArgNumber(), "otc.trainable"))
      trainable.push_back(a.getArgNumber());
    args.push_back(t);
  }

  ASSERT_FALSE(trainable.empty()) << name << ": nothing to check";
  std::vector<Tensor> withSeed = args;
  withSeed.push_back({{}, {1.0}});
  std::vector<Tensor> out = otc::test::evaluate(bwd, withSeed);
  ASSERT_EQ(out.size(), 1 + trainable.size());

  const double h = 1e-6;
  for (size_t k = 0; k < trainable.size(); ++k) {
    unsigned a = trainable[k];
    for (size_t i = 0; i < args[a].data.size(); ++i) {
      std::vector<Tensor> plus = args, minus = args;
      plus[a].data[i] += h;
      minus[a].data[i] -= h;
      double fd = (otc::test::evaluate(fwd, plus)[0].data[0] -
                   otc::test::evaluate(fwd, minus)[0].data[0]) / (2 * h);
      EXPECT_NEAR(out[1 + k].data[i], fd, 1e-6 * (1 + std::abs(fd)))
          << name << ": argument " << a << " element " << i;
    }
  }
}

const std::string kA23 = "%a: tensor<2x3xf64> {otc.param = \"a\", otc.trainable}";
const std::string kB3 = "%b: tensor<3xf64> {otc.param = \"b\", otc.trainable}";

std::vector<Case> cases() {
  std::string t23 = "tensor<2x3xf64>";
  auto unary = [&](const char *name, const char *op) {
    return Case{name, kA23, std::string("  %y = otc.") + op + " %a : " + t23, t23, {2, 3}};
  };
  auto binary = [&](const char *name, const char *op, std::string bArgs, std::string bType) {
    return Case{name, kA23 + ", " + bArgs,
                std::string("  %y = otc.") + op + " %a, %b : " + t23 + ", " + bType + " -> " + t23,
                t23, {2, 3}};
  };
  return {
      binary("add_broadcast", "add", kB3, "tensor<3xf64>"),
      binary("sub_broadcast", "sub", "%b: tensor<2x1xf64> {otc.param = \"b\", otc.trainable}", "tensor<2x1xf64>"),
      binary("mul", "mul", "%b: tensor<2x3xf64> {otc.param = \"b\", otc.trainable}", t23),
      binary("div_broadcast", "div", kB3, "tensor<3xf64>"),
      unary("neg", "neg"), unary("relu", "relu"), unary("tanh", "tanh"),
      unary("sigmoid", "sigmoid"), unary("identity", "identity"),
      unary("exp", "exp"), unary("reciprocal", "reciprocal"), unary("abs", "abs"),
      unary("erf", "erf"), unary("sin", "sin"), unary("cos", "cos"),
      unary("tan", "tan"), unary("atan", "atan"),
      unary("softplus", "softplus"),
      {"pow_cube", kA23, "  %y = otc.pow %a {exponent = 3.0 : f64} : " + t23, t23, {2, 3}},
      {"pow_half_of_square", kA23, "  %s = otc.mul %a, %a : " + t23 + ", " + t23 + " -> " + t23 +
       "\n  %y = otc.pow %s {exponent = -0.5 : f64} : " + t23, t23, {2, 3}},
      // Repeated and negative indices: the gradient sums into one row.
      {"gather_rows", "%a: tensor<5x3xf64> {otc.param = \"a\", otc.trainable}, "
       "%labels: tensor<4xi64> {otc.input = \"labels\"}",
       "  %y = otc.gather %a, %labels {axis = 0 : i64} : tensor<5x3xf64>, tensor<4xi64> -> tensor<4x3xf64>",
       "tensor<4x3xf64>", {4, 3}, {0, 3, 3, -1}},
      {"gather_columns", "%a: tensor<2x5xf64> {otc.param = \"a\", otc.trainable}, "
       "%labels: tensor<3xi64> {otc.input = \"labels\"}",
       "  %y = otc.gather %a, %labels {axis = 1 : i64} : tensor<2x5xf64>, tensor<3xi64> -> tensor<2x3xf64>",
       "tensor<2x3xf64>", {2, 3}, {4, 0, 4}},
      // gather_grad is also the run-time scatter: its gradient is a gather.
      {"gather_grad_scatter", "%a: tensor<4x3xf64> {otc.param = \"a\", otc.trainable}, "
       "%labels: tensor<4xi64> {otc.input = \"labels\"}",
       "  %y = otc.gather_grad %a, %labels {axis = 0 : i64} : tensor<4x3xf64>, tensor<4xi64> -> tensor<5x3xf64>",
       "tensor<5x3xf64>", {5, 3}, {0, 3, 3, -1}},
      // Rotary embedding, cos and sin broadcast over the leading dim, and its
      // transpose: gradients to x, cos and sin.
      {"rotary", "%x: tensor<2x3x4xf64> {otc.param = \"x\", otc.trainable}, "
       "%c: tensor<3x4xf64> {otc.param = \"c\", otc.trainable}, "
       "%s: tensor<3x4xf64> {otc.param = \"s\", otc.trainable}",
       "  %y = otc.rotary %x, %c, %s : tensor<2x3x4xf64>, tensor<3x4xf64>, tensor<3x4xf64> -> tensor<2x3x4xf64>",
       "tensor<2x3x4xf64>", {2, 3, 4}},
      {"rotary_transposed", "%x: tensor<2x3x4xf64> {otc.param = \"x\", otc.trainable}, "
       "%c: tensor<1x4xf64> {otc.param = \"c\", otc.trainable}, "
       "%s: tensor<3x4xf64> {otc.param = \"s\", otc.trainable}",
       "  %y = otc.rotary %x, %c, %s {transposed = true} : tensor<2x3x4xf64>, tensor<1x4xf64>, tensor<3x4xf64> -> tensor<2x3x4xf64>",
       "tensor<2x3x4xf64>", {2, 3, 4}},
      // Fused attention, causal with grouped queries (4 query heads on 2
      // key heads), then padded by an added mask and by an i1 mask with a
      // row masked everywhere (uniform, no score gradient), T != S.
      {"attention_causal_gqa", "%q: tensor<1x4x3x2xf64> {otc.param = \"q\", otc.trainable}, "
       "%k: tensor<1x2x3x2xf64> {otc.param = \"k\", otc.trainable}, "
       "%v: tensor<1x2x3x3xf64> {otc.param = \"v\", otc.trainable}",
       "  %y, %st = otc.attention %q, %k, %v {causal = true, scale = 0.7 : f64} : tensor<1x4x3x2xf64>, "
       "tensor<1x2x3x2xf64>, tensor<1x2x3x3xf64> -> tensor<1x4x3x3xf64>, tensor<1x4x3x2xf32>",
       "tensor<1x4x3x3xf64>", {1, 4, 3, 3}},
      // The same in the projections' layout (bthd): q [B, T, H, D].
      {"attention_bthd_gqa", "%q: tensor<1x3x4x2xf64> {otc.param = \"q\", otc.trainable}, "
       "%k: tensor<1x3x2x2xf64> {otc.param = \"k\", otc.trainable}, "
       "%v: tensor<1x3x2x3xf64> {otc.param = \"v\", otc.trainable}",
       "  %y, %st = otc.attention %q, %k, %v {causal = true, scale = 0.7 : f64, layout = 1 : i32} : "
       "tensor<1x3x4x2xf64>, tensor<1x3x2x2xf64>, tensor<1x3x2x3xf64> -> tensor<1x3x4x3xf64>, tensor<1x4x3x2xf32>",
       "tensor<1x3x4x3xf64>", {1, 3, 4, 3}},
      {"attention_added_mask", "%q: tensor<2x1x2x3xf64> {otc.param = \"q\", otc.trainable}, "
       "%k: tensor<2x1x4x3xf64> {otc.param = \"k\", otc.trainable}, "
       "%v: tensor<2x1x4x2xf64> {otc.param = \"v\", otc.trainable}",
       "  %m = otc.constant dense<[[[[0.0, 0.0, -1.5, 0.0]]], [[[0.0, 0.0, -3.0e38, -3.0e38]]]]> : tensor<2x1x1x4xf64>\n"
       "  %y, %st = otc.attention %q, %k, %v mask %m {scale = 0.5 : f64} : tensor<2x1x2x3xf64>, "
       "tensor<2x1x4x3xf64>, tensor<2x1x4x2xf64>, tensor<2x1x1x4xf64> -> tensor<2x1x2x2xf64>, tensor<2x1x2x2xf32>",
       "tensor<2x1x2x2xf64>", {2, 1, 2, 2}},
      {"attention_keep_mask", "%q: tensor<1x2x3x2xf64> {otc.param = \"q\", otc.trainable}, "
       "%k: tensor<1x2x4x2xf64> {otc.param = \"k\", otc.trainable}, "
       "%v: tensor<1x2x4x2xf64> {otc.param = \"v\", otc.trainable}",
       "  %m = otc.constant dense<[[true, false, true, true], [false, false, false, false], [true, true, false, true]]> : tensor<3x4xi1>\n"
       "  %y, %st = otc.attention %q, %k, %v mask %m {scale = 1.0 : f64, fill = -3.4028234663852886e38 : f64} : "
       "tensor<1x2x3x2xf64>, tensor<1x2x4x2xf64>, tensor<1x2x4x2xf64>, tensor<3x4xi1> -> tensor<1x2x3x2xf64>, tensor<1x2x3x2xf32>",
       "tensor<1x2x3x2xf64>", {1, 2, 3, 2}},
      // Where with a condition computed from the parameter itself (away
      // from the boundary), and a broadcast right-hand side.
      {"where_compare", kA23 + ", " + kB3,
       "  %z = otc.constant dense<0.0> : tensor<f64>\n"
       "  %c = otc.compare gt, %a, %z : " + t23 + ", tensor<f64> -> tensor<2x3xi1>\n"
       "  %y = otc.where %c, %a, %b : tensor<2x3xi1>, " + t23 + ", tensor<3xf64> -> " + t23,
       t23, {2, 3}},
      // Strided slices, and concat: each input's gradient is its slice.
      {"slice_strided", "%a: tensor<4x5xf64> {otc.param = \"a\", otc.trainable}",
       "  %y = otc.slice %a [1, 0] [2, 2] : tensor<4x5xf64> -> tensor<2x3xf64>",
       t23, {2, 3}},
      {"concat_axis1", "%a: tensor<2x1xf64> {otc.param = \"a\", otc.trainable}, "
       "%b: tensor<2x2xf64> {otc.param = \"b\", otc.trainable}",
       "  %y = otc.concat %a, %b {axis = 1 : i64} : tensor<2x1xf64>, tensor<2x2xf64> -> " + t23,
       t23, {2, 3}},
      // A fixed mask (seed 0, micro-batch 0) for both sides of the difference.
      {"dropout", kA23,
       "  %y, %m = otc.dropout %a {ratio = 0.5 : f64, stream = 7 : i64} : " + t23 + " -> " + t23 +
       ", tensor<2x3xi1>", t23, {2, 3}},
      {"normalize_rows", kA23, "  %y = otc.normalize %a {axis = 1 : i64, epsilon = 1.0e-05 : f64} : " + t23, t23, {2, 3}},
      {"normalize_whole", kA23, "  %y = otc.normalize %a {axis = 0 : i64, epsilon = 0.1 : f64} : " + t23, t23, {2, 3}},
      {"rms_normalize_rows", kA23, "  %y = otc.normalize %a {axis = 1 : i64, epsilon = 1.0e-05 : f64, center = false} : " + t23, t23, {2, 3}},
      {"rms_normalize_whole", kA23, "  %y = otc.normalize %a {axis = 0 : i64, epsilon = 0.1 : f64, center = false} : " + t23, t23, {2, 3}},
      // The affine over the trailing dims: one [3] row, and a whole [2, 3]
      // plane (no row sums) without centering or bias.
      {"layer_norm_rows", kA23 + ", " + kB3 + ", %w: tensor<3xf64> {otc.param = \"w\", otc.trainable}",
       "  %y, %m, %r = otc.layer_norm %a, %w, %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : " + t23 +
       ", tensor<3xf64>, tensor<3xf64> -> tensor<2x1xf64>", t23, {2, 3}},
      {"rms_layer_norm_whole", kA23 + ", %w: tensor<2x3xf64> {otc.param = \"w\", otc.trainable}",
       "  %y, %m, %r = otc.layer_norm %a, %w {axis = 0 : i64, epsilon = 0.1 : f64, center = false} : " + t23 +
       ", " + t23 + " -> tensor<1x1xf64>", t23, {2, 3}},
      // Batch normalization over [2, 3, 2] (channel dim 1): its gradient is
      // composed (batch_norm_grad, and channel sums for the affine).
      {"batch_norm", "%a: tensor<2x3x2xf64> {otc.param = \"a\", otc.trainable}, " + kB3 +
       ", %w: tensor<3xf64> {otc.param = \"w\", otc.trainable}",
       "  %y, %m, %v = otc.batch_norm %a, %w, %b {epsilon = 1.0e-05 : f64} : tensor<2x3x2xf64>, "
       "tensor<3xf64>, tensor<3xf64> -> tensor<1x3x1xf64>", "tensor<2x3x2xf64>", {2, 3, 2}},
      {"softmax_last_axis", kA23, "  %y = otc.softmax %a {axis = 1 : i64} : " + t23, t23, {2, 3}},
      {"log_softmax_first_axis", kA23, "  %y = otc.log_softmax %a {axis = 0 : i64} : " + t23, t23, {2, 3}},
      // log and sqrt of a^2, which the inputs keep at 0.09 or more.
      {"log", kA23, "  %s = otc.mul %a, %a : " + t23 + ", " + t23 + " -> " + t23 +
       "\n  %y = otc.log %s : " + t23, t23, {2, 3}},
      {"sqrt", kA23, "  %s = otc.mul %a, %a : " + t23 + ", " + t23 + " -> " + t23 +
       "\n  %y = otc.sqrt %s : " + t23, t23, {2, 3}},
      {"gemm_transB_bias", "%x: tensor<2x4xf64> {otc.param = \"x\", otc.trainable}, "
       "%w: tensor<3x4xf64> {otc.param = \"w\", otc.trainable}, " + kB3,
       "  %y = otc.gemm %x, %w, %b {trans_b = true, alpha = 0.5, beta = 2.0} : "
       "(tensor<2x4xf64>, tensor<3x4xf64>, tensor<3xf64>) -> " + t23, t23, {2, 3}},
      {"gemm_transA_matrix_c", "%x: tensor<4x2xf64> {otc.param = \"x\", otc.trainable}, "
       "%v: tensor<4x3xf64> {otc.param = \"v\", otc.trainable}, "
       "%c: tensor<2x1xf64> {otc.param = \"c\", otc.trainable}",
       "  %y = otc.gemm %x, %v, %c {trans_a = true} : "
       "(tensor<4x2xf64>, tensor<4x3xf64>, tensor<2x1xf64>) -> " + t23, t23, {2, 3}},
      {"gemm_both_transposed", "%x: tensor<4x2xf64> {otc.param = \"x\", otc.trainable}, "
       "%v: tensor<3x4xf64> {otc.param = \"v\", otc.trainable}",
       "  %y = otc.gemm %x, %v {trans_a = true, trans_b = true, alpha = 1.5} : "
       "(tensor<4x2xf64>, tensor<3x4xf64>) -> " + t23, t23, {2, 3}},
      {"matmul_shared_rhs", "%x: tensor<2x3x4xf64> {otc.param = \"x\", otc.trainable}, "
       "%v: tensor<4x5xf64> {otc.param = \"v\", otc.trainable}",
       "  %y = otc.matmul %x, %v : tensor<2x3x4xf64>, tensor<4x5xf64> -> tensor<2x3x5xf64>",
       "tensor<2x3x5xf64>", {2, 3, 5}},
      {"matmul_batched", "%x: tensor<2x3x4xf64> {otc.param = \"x\", otc.trainable}, "
       "%v: tensor<2x4x5xf64> {otc.param = \"v\", otc.trainable}",
       "  %y = otc.matmul %x, %v : tensor<2x3x4xf64>, tensor<2x4x5xf64> -> tensor<2x3x5xf64>",
       "tensor<2x3x5xf64>", {2, 3, 5}},
      {"reshape", kA23, "  %y = otc.reshape %a : " + t23 + " -> tensor<3x2xf64>",
       "tensor<3x2xf64>", {3, 2}},
      {"transpose", "%x: tensor<2x3x4xf64> {otc.param = \"x\", otc.trainable}",
       "  %y = otc.transpose %x [2, 0, 1] : tensor<2x3x4xf64> -> tensor<4x2x3xf64>",
       "tensor<4x2x3xf64>", {4, 2, 3}},
      {"broadcast_to", kB3, "  %y = otc.broadcast_to %b : tensor<3xf64> -> " + t23, t23, {2, 3}},
      {"reduce_sum", "%x: tensor<2x3x4xf64> {otc.param = \"x\", otc.trainable}",
       "  %y = otc.reduce_sum %x [1] : tensor<2x3x4xf64> -> tensor<2x4xf64>",
       "tensor<2x4xf64>", {2, 4}},
      {"reduce_mean_keepdims", "%x: tensor<2x3x4xf64> {otc.param = \"x\", otc.trainable}",
       "  %y = otc.reduce_mean %x [0, 2] {keepdims = true} : tensor<2x3x4xf64> -> tensor<1x3x1xf64>",
       "tensor<1x3x1xf64>", {1, 3, 1}},
      // Windows: uneven strides, asymmetric pads and a dilation; pools whose
      // windows overlap, with ceil-mode outputs that hang off the input.
      {"im2col", "%x: tensor<2x2x5x4xf64> {otc.param = \"x\", otc.trainable}",
       "  %y = otc.im2col %x {kernel = array<i64: 2, 3>, strides = array<i64: 2, 1>, "
       "pads = array<i64: 1, 0, 0, 2>, dilations = array<i64: 1, 2>} : "
       "tensor<2x2x5x4xf64> -> tensor<2x2x3x2x3x2xf64>",
       "tensor<2x2x3x2x3x2xf64>", {2, 2, 3, 2, 3, 2}},
      // col2im, ConvTranspose's scatter: its gradient is im2col.
      {"col2im", "%x: tensor<2x2x3x2x3x2xf64> {otc.param = \"x\", otc.trainable}",
       "  %y = otc.col2im %x {kernel = array<i64: 2, 3>, strides = array<i64: 2, 1>, "
       "pads = array<i64: 1, 0, 0, 2>, dilations = array<i64: 1, 2>} : "
       "tensor<2x2x3x2x3x2xf64> -> tensor<2x2x5x4xf64>",
       "tensor<2x2x5x4xf64>", {2, 2, 5, 4}},
      {"max_pool_overlapping_ceil", "%x: tensor<1x2x5x6xf64> {otc.param = \"x\", otc.trainable}",
       "  %y, %i = otc.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, "
       "pads = array<i64: 1, 0, 1, 0>, dilations = array<i64: 1, 1>} : "
       "tensor<1x2x5x6xf64> -> tensor<1x2x3x3xf64>, tensor<1x2x3x3xi64>",
       "tensor<1x2x3x3xf64>", {1, 2, 3, 3}},
      {"max_pool_dilated_ceil", "%x: tensor<1x1x5x6xf64> {otc.param = \"x\", otc.trainable}",
       "  %y, %i = otc.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, "
       "pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 1>} : "
       "tensor<1x1x5x6xf64> -> tensor<1x1x2x3xf64>, tensor<1x1x2x3xi64>",
       "tensor<1x1x2x3xf64>", {1, 1, 2, 3}},
      {"avg_pool_count_pad", "%x: tensor<1x2x5x5xf64> {otc.param = \"x\", otc.trainable}",
       "  %y = otc.avg_pool %x {kernel = array<i64: 3, 2>, strides = array<i64: 2, 2>, "
       "pads = array<i64: 1, 0, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = true} : "
       "tensor<1x2x5x5xf64> -> tensor<1x2x3x3xf64>", "tensor<1x2x3x3xf64>", {1, 2, 3, 3}},
      {"avg_pool_exclude_pad_ceil", "%x: tensor<1x2x5x6xf64> {otc.param = \"x\", otc.trainable}",
       "  %y = otc.avg_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, "
       "pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>, count_include_pad = false} : "
       "tensor<1x2x5x6xf64> -> tensor<1x2x3x4xf64>", "tensor<1x2x3x4xf64>", {1, 2, 3, 4}},
      {"softmax_cross_entropy", "%x: tensor<4x3xf64> {otc.param = \"x\", otc.trainable}, "
       "%labels: tensor<4xi64> {otc.input = \"labels\"}",
       "  %y = otc.softmax_cross_entropy %x, %labels {ignore_index = -100 : i64} : "
       "tensor<4x3xf64>, tensor<4xi64> -> tensor<f64>",
       "tensor<f64>", {}, {0, 2, -100, 1}},
  };
}

INSTANTIATE_TEST_SUITE_P(Ops, GradientTest, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return std::string(info.param.name); });

} // namespace
