// The kernel program: what one training step runs, in order, with every
// buffer placed in the arena or bound to a runtime-owned tensor.
#ifndef OTC_CODEGEN_PROGRAM_H
#define OTC_CODEGEN_PROGRAM_H

#include <cstdint>
#include <string>
#include <vector>

namespace otc {

/// One element per index `i` in [0, count): `body` is C code that both
/// targets compile. `count == 1` with a loop-free body is a serial kernel.
struct LoopKernel {
  int64_t count;
  std::string body;
};

/// Row-major C = alpha * op(A) * op(B) + beta * C, `batch` times.
struct GemmCall {
  bool transA, transB;
  int64_t m, n, k, batch;
  int64_t strideA, strideB, strideC;
  double alpha;
  std::string beta; // an expression: 0, 1, or chosen per micro-batch
  std::string a, b, c;
};

struct Step {
  enum Kind { Loop, Gemm } kind;
  std::string comment; // the op it came from, for readers of the source
  LoopKernel loop;
  GemmCall gemm;
};

struct TensorDesc {
  std::string name;
  bool isFloat;
  std::vector<int64_t> shape;
  int64_t numClasses = 0; // > 0 for the labels of a cross-entropy
  bool hasIgnoreIndex = false;
  int64_t ignoreIndex = 0;
};

/// A field of the pointer table every kernel receives.
struct PointerField {
  std::string name;
  std::string cType;
};

struct Program {
  std::vector<Step> steps;
  int64_t arenaBytes = 0;
  int64_t microBatch = 0;
  std::vector<TensorDesc> inputs, params;
  std::vector<int> gradIndex;
  int numGrads = 0;
  std::vector<PointerField> fields;
};

} // namespace otc

#endif
