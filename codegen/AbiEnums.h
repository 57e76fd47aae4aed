//===- AbiEnums.h - The IR's policy enums as abi.h's ----------------------===//
//
// The policy enum attributes (OtcEnums.td) and abi.h's C enums have the same
// cases, value for value, so one converts to the other by a cast and the
// generated code names a case by the IR's spelling.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_CODEGEN_ABIENUMS_H
#define OTC_CODEGEN_ABIENUMS_H

#include "otc/Dialect/OtcDialect.h"
#include "otc/runtime/abi.h"

#include <string>

namespace otc {

#define OTC_ABI_SAME(IR, C) static_assert(int(IR) == int(C), #IR " is not " #C)
OTC_ABI_SAME(LossScaleMode::None, OTC_LOSS_SCALE_NONE);
OTC_ABI_SAME(LossScaleMode::Static, OTC_LOSS_SCALE_STATIC);
OTC_ABI_SAME(LossScaleMode::Dynamic, OTC_LOSS_SCALE_DYNAMIC);
OTC_ABI_SAME(Precision::Fp32, OTC_PRECISION_FP32);
OTC_ABI_SAME(Precision::Fp16, OTC_PRECISION_FP16);
OTC_ABI_SAME(Precision::Bf16, OTC_PRECISION_BF16);
OTC_ABI_SAME(RecomputePolicy::None, OTC_RECOMPUTE_NONE);
OTC_ABI_SAME(RecomputePolicy::Selective, OTC_RECOMPUTE_SELECTIVE);
OTC_ABI_SAME(RecomputePolicy::Blocks, OTC_RECOMPUTE_BLOCKS);
OTC_ABI_SAME(RecomputePolicy::Sqrt, OTC_RECOMPUTE_SQRT);
OTC_ABI_SAME(RecomputePolicy::Budget, OTC_RECOMPUTE_BUDGET);
#undef OTC_ABI_SAME

inline otc_loss_scale_mode toAbi(LossScaleMode m) { return otc_loss_scale_mode(m); }
inline otc_precision toAbi(Precision p) { return otc_precision(p); }
inline otc_recompute_policy toAbi(RecomputePolicy p) { return otc_recompute_policy(p); }

/// The C name of a case: the prefix and the IR's spelling in capitals
/// ("OTC_PRECISION_" and "bf16" give OTC_PRECISION_BF16).
inline std::string abiName(const char *prefix, llvm::StringRef spelling) {
  return prefix + spelling.upper();
}
inline std::string abiName(otc_loss_scale_mode m) {
  return abiName("OTC_LOSS_SCALE_", stringifyLossScaleMode(LossScaleMode(m)));
}
inline std::string abiName(otc_precision p) {
  return abiName("OTC_PRECISION_", stringifyPrecision(Precision(p)));
}
inline std::string abiName(otc_recompute_policy p) {
  return abiName("OTC_RECOMPUTE_", stringifyRecomputePolicy(RecomputePolicy(p)));
}

} // namespace otc

#endif // OTC_CODEGEN_ABIENUMS_H
