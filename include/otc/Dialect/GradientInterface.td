#ifndef OTC_GRADIENT_INTERFACE
#define OTC_GRADIENT_INTERFACE

include "mlir/IR/OpBase.td"

def Otc_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let description = [{
    An operation that knows its own vector-Jacobian product. Given the
    gradient of the loss with respect to each result (a null Value where no
    gradient flows), it builds the gradient with respect to each operand,
    writing a null Value for operands that are not differentiable (integer
    labels, for example).
  }];
  let cppNamespace = "::otc";
  let methods = [
    InterfaceMethod<
      "Builds the gradients of the operands at the builder's insertion point.",
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$b, "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // OTC_GRADIENT_INTERFACE
