// mlir-opt for the otc dialect: runs any otc or core pass alone.
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  otc::registerOtcPassesAndPipelines();
  mlir::DialectRegistry registry;
  registry.insert<otc::OtcDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "otc optimizer driver\n", registry));
}
