// State written back by the forward pass (BatchNormalization's running
// statistics): the target must be a parameter argument of the function.
#include "otc/Dialect/OtcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace otc;

LogicalResult AssignOp::verify() {
  auto arg = dyn_cast<BlockArgument>(getTarget());
  auto func = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
  // "otc.param" is attr::kParam of otc/Passes/Passes.h, above this library.
  if (!func || !func.getArgAttr(arg.getArgNumber(), "otc.param"))
    return emitOpError("target must be a parameter argument of the function");
  for (Operation *user : getTarget().getUsers())
    if (user != *this && user->getBlock() == (*this)->getBlock() &&
        (*this)->isBeforeInBlock(user))
      return emitOpError("target is read after it is assigned");
  return success();
}
