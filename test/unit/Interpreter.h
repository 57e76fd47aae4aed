// A float64 reference evaluator for otc functions, used to check gradient
// rules against finite differences independently of code generation.
#ifndef OTC_TEST_UNIT_INTERPRETER_H
#define OTC_TEST_UNIT_INTERPRETER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include <vector>

namespace otc::test {

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;
};

/// Evaluates `func` on `args` (integer tensors hold their values as doubles).
std::vector<Tensor> evaluate(mlir::func::FuncOp func, const std::vector<Tensor> &args);

} // namespace otc::test

#endif
