// The kernel program verifier accepts what the lowering builds and rejects
// each class of corruption with a message naming the step and the buffer.
#include "../../codegen/Lowering.h"
#include "../../codegen/ProgramVerifier.h"
#include "otc/Dialect/OtcDialect.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include <gtest/gtest.h>

using namespace mlir;
using otc::Buffer;
using otc::Program;
using otc::Step;

namespace {

// exp and tanh fuse into one step writing an arena buffer that the product
// reads; the product's arena result is live with it; relu writes the result.
const char *kFunction = R"(
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %e = otc.exp %a : tensor<4x8xf32>
  %t = otc.tanh %e : tensor<4x8xf32>
  %m = otc.matmul %t, %b : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  %s = otc.sigmoid %m : tensor<4x3xf32>
  %p = otc.mul %s, %m : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return %p : tensor<4x3xf32>
}
)";

class ProgramVerifierTest : public ::testing::Test {
protected:
  void SetUp() override {
    ctx.loadDialect<otc::OtcDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(kFunction, &ctx);
    ASSERT_TRUE(module);
    std::string error;
    otc::Lowering lowering(*module->getOps<func::FuncOp>().begin(), false, error);
    ASSERT_TRUE(lowering.run(program)) << error;
    for (size_t s = 0; s < program.steps.size(); ++s)
      if (program.steps[s].kind == Step::Gemm)
        gemm = (int)s;
    ASSERT_GT(gemm, 0);
    tanhBuffer = program.steps[gemm].gemm.a;
    productBuffer = program.steps[gemm].gemm.c;
    ASSERT_EQ(program.buffers[tanhBuffer].place, Buffer::Place::Arena);
    ASSERT_EQ(program.buffers[productBuffer].place, Buffer::Place::Arena);
  }

  /// The verifier's message, which must name `step` and `buffer`.
  std::string rejected(int step, int buffer) {
    std::string e = otc::verifyProgram(program);
    EXPECT_NE(e.find("step " + std::to_string(step) + " ("), std::string::npos) << e;
    EXPECT_NE(e.find("buffer b" + std::to_string(buffer) + " "), std::string::npos) << e;
    return e;
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  Program program;
  int gemm = -1, tanhBuffer = -1, productBuffer = -1;
};

TEST_F(ProgramVerifierTest, AcceptsTheLowering) {
  EXPECT_EQ(otc::verifyProgram(program), "");
}

TEST_F(ProgramVerifierTest, ReadBeforeWrite) {
  // The product runs before the step that writes its left operand.
  std::swap(program.steps[gemm - 1], program.steps[gemm]);
  EXPECT_NE(rejected(gemm - 1, tanhBuffer).find("is read before any step writes it"),
            std::string::npos);
}

TEST_F(ProgramVerifierTest, TypeMismatch) {
  program.buffers[tanhBuffer].type = otc::ElemType::I64;
  EXPECT_NE(rejected(gemm - 1, tanhBuffer).find("(i64) is stored from a f32 node"),
            std::string::npos);
}

TEST_F(ProgramVerifierTest, GemmOperandTypes) {
  program.buffers[tanhBuffer].type = otc::ElemType::F16;
  EXPECT_NE(rejected(gemm, productBuffer).find("is the product of f16 and f32 operands"),
            std::string::npos);
}

TEST_F(ProgramVerifierTest, StrideOutOfBounds) {
  Step &s = program.steps[gemm - 1];
  ASSERT_FALSE(s.stores.empty());
  s.stores[0].strides[0] += 1; // one past each row: the last row runs off the end
  EXPECT_NE(rejected(gemm - 1, s.stores[0].buffer).find("outside its 32"), std::string::npos);
}

TEST_F(ProgramVerifierTest, GemmBatchOutOfBounds) {
  program.steps[gemm].gemm.batch = 2;
  program.steps[gemm].gemm.strideA = 32;
  EXPECT_NE(rejected(gemm, tanhBuffer).find("is a GEMM operand of 2 x 32 elements"),
            std::string::npos);
}

TEST_F(ProgramVerifierTest, GemmLeadingDimensionIsThePitch) {
  // A padded operand read dense, then a leading dimension with no padding
  // behind it.
  program.buffers[tanhBuffer].pitch = 12;
  EXPECT_NE(rejected(gemm, tanhBuffer).find("leading dimension 0 and rows 12 apart"),
            std::string::npos);
  program.buffers[tanhBuffer].pitch = 0;
  program.steps[gemm].gemm.lda = 12;
  EXPECT_NE(rejected(gemm, tanhBuffer).find("leading dimension 12 and rows 0 apart"),
            std::string::npos);
}

TEST_F(ProgramVerifierTest, OverlappingLiveBuffers) {
  // The product's result and its operand are live together at the product.
  program.buffers[productBuffer].offset = program.buffers[tanhBuffer].offset;
  int later = std::max(tanhBuffer, productBuffer);
  EXPECT_NE(rejected(gemm, later).find("and both are live"), std::string::npos);
}

// Grouped-query attention in the projections' layout ([B, T, H, D]) with
// an additive [T, S] mask: one call of the kernel library, whose buffers
// the verifier checks against the kernel's extents (kernels/extents.h).
const char *kAttention = R"(
func.func @f(%q: tensor<2x4x6x8xf32>, %k: tensor<2x4x2x8xf32>, %m: tensor<4x4xf32>) -> tensor<2x4x6x8xf32> {
  %o, %s = otc.attention %q, %k, %k mask %m {scale = 0.5 : f64, layout = 1 : i32} : tensor<2x4x6x8xf32>, tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32>, tensor<4x4xf32> -> tensor<2x4x6x8xf32>, tensor<2x6x4x2xf32>
  return %o : tensor<2x4x6x8xf32>
}
)";

class LibraryCallVerifierTest : public ::testing::Test {
protected:
  void SetUp() override {
    ctx.loadDialect<otc::OtcDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(kAttention, &ctx);
    ASSERT_TRUE(module);
    std::string error;
    otc::Lowering lowering(*module->getOps<func::FuncOp>().begin(), false, error);
    ASSERT_TRUE(lowering.run(program)) << error;
    for (size_t s = 0; s < program.steps.size(); ++s)
      if (program.steps[s].kind == Step::LibraryCall)
        step = (int)s;
    ASSERT_GE(step, 0);
    ASSERT_EQ(call().buffers.size(), 6u); // q, k, v, mask, out, stats
  }

  otc::LibraryCall &call() { return program.steps[step].call; }

  /// The verifier's message for buffer `arg` of the call.
  std::string rejected(int arg) {
    std::string e = otc::verifyProgram(program);
    EXPECT_NE(e.find("step " + std::to_string(step) + " ("), std::string::npos) << e;
    EXPECT_NE(e.find("buffer b" + std::to_string(call().buffers[arg]) + " "), std::string::npos)
        << e;
    return e;
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  Program program;
  int step = -1;
};

TEST_F(LibraryCallVerifierTest, AcceptsTheLowering) {
  EXPECT_EQ(otc::verifyProgram(program), "");
  // B 2, H 6, G 3, T 4, S 4, D 8, DV 8: q and out 384 elements, k and v
  // 128, the mask 16, stats 96.
  EXPECT_EQ(otc::kernelExtents(call()), (std::vector<int64_t>{384, 128, 128, 16, 384, 96}));
}

TEST_F(LibraryCallVerifierTest, BufferSmallerThanTheKernelReads) {
  program.buffers[call().buffers[1]].shape = {2, 4, 2, 7};
  EXPECT_NE(rejected(1).find("as argument 1, which spans 128 elements from element 0, and the "
                             "buffer holds 112"),
            std::string::npos);
}

TEST_F(LibraryCallVerifierTest, RowPitchPastTheEnd) {
  // Query rows 56 apart (a packed projection's slice) need 7 x 56 + 48.
  call().constants[14] = 56;
  EXPECT_NE(rejected(0).find("spans 440 elements"), std::string::npos);
}

TEST_F(LibraryCallVerifierTest, ViewOffsetPastTheEnd) {
  call().offsets = {0, 8, 0, 0, 0, 0};
  EXPECT_NE(rejected(1).find("spans 128 elements from element 8, and the buffer holds 128"),
            std::string::npos);
}

TEST_F(LibraryCallVerifierTest, MaskStridePastTheEnd) {
  call().constants[11] = 5; // the mask's t stride: 3 x 5 + 3 + 1 elements
  EXPECT_NE(rejected(3).find("spans 19 elements"), std::string::npos);
}

TEST_F(LibraryCallVerifierTest, NoSuchForm) {
  call().constants.pop_back();
  std::string e = otc::verifyProgram(program);
  EXPECT_NE(e.find("attention_forward has no form with 19 constants and 6 buffers"),
            std::string::npos)
      << e;
  call().constants.push_back(0);
  call().constants[8] = 0; // no mask, yet a sixth buffer
  e = otc::verifyProgram(program);
  EXPECT_NE(e.find("has no form with 20 constants and 6 buffers"), std::string::npos) << e;
}

} // namespace
