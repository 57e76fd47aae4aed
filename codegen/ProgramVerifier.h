// Checks a lowered kernel program before it is emitted: what the lowering
// promises the emitters and the arena planner. A failure is a compiler bug.
#ifndef OTC_CODEGEN_PROGRAMVERIFIER_H
#define OTC_CODEGEN_PROGRAMVERIFIER_H

#include "Program.h"

#include <string>

namespace otc {

/// An empty string, or one line naming the step and buffer at fault:
/// - a buffer read before any step writes it (inputs, parameters, gradient
///   buffers, the loss and constants are written before the step runs);
/// - element types that disagree: a load or store and its buffer, a node
///   and its operands, a GEMM's operands;
/// - an access (strides, offset, gather extent, GEMM batch strides) outside
///   its buffer;
/// - two arena buffers live at the same step sharing bytes.
std::string verifyProgram(const Program &program);

} // namespace otc

#endif
