#include "otc/Dialect/OtcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace otc;

#include "otc/Dialect/GradientInterface.cpp.inc"
#include "otc/Dialect/OtcOpsDialect.cpp.inc"

void OtcDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "otc/Dialect/OtcOps.cpp.inc"
      >();
}

Operation *OtcDialect::materializeConstant(OpBuilder &b, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(b, loc, elements);
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

#define GET_OP_CLASSES
#include "otc/Dialect/OtcOps.cpp.inc"
