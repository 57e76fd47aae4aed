// The otc dialect: statically shaped tensor operations with gradient rules.
#ifndef OTC_DIALECT_OTCDIALECT_H
#define OTC_DIALECT_OTCDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "otc/Dialect/GradientInterface.h.inc"
#include "otc/Dialect/OpFacts.h"
#include "otc/Dialect/OtcOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "otc/Dialect/OtcOps.h.inc"

#endif // OTC_DIALECT_OTCDIALECT_H
