// otc: compiles an ONNX forward graph into a training executable.
//
//   otc compile model.onnx -o train [--target cuda|cpu]
//       [--optimizer sgd|momentum|adam|adamw] [--micro-batch N] [--loss SPEC]
//       [--emit mlir|source]
//   otc import model.onnx [--micro-batch N] [--loss SPEC]
#include "Driver.h"
#include "otc/Codegen/Codegen.h"
#include "otc/Frontend/Import.h"
#include "otc/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <map>

using namespace mlir;

namespace {

const char kUsage[] =
    "usage: otc compile MODEL.onnx -o OUTPUT [--target cuda|cpu]\n"
    "           [--optimizer sgd|momentum|adam|adamw] [--micro-batch N]\n"
    "           [--loss cross-entropy:OUT|mse:OUT] [--emit mlir|source]\n"
    "       otc import MODEL.onnx [--micro-batch N] [--loss SPEC]\n";

[[noreturn]] void fail(const std::string &message, int code = 1) {
  llvm::errs() << "otc: error: " << message
               << (code == 2 ? " (see otc --help)" : "") << "\n";
  std::exit(code);
}

struct Args {
  std::string command, model, output, target = "cuda", optimizer = "sgd", emit;
  otc::ImportOptions import;
};

Args parseArgs(int argc, char **argv) {
  if (argc < 2)
    fail("missing command", 2);
  Args a;
  a.command = argv[1];
  if (a.command == "--help" || a.command == "-h") {
    llvm::outs() << kUsage;
    std::exit(0);
  }
  if (a.command != "compile" && a.command != "import")
    fail("unknown command '" + a.command + "'", 2);
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("-", 0) != 0) {
      if (!a.model.empty())
        fail("unexpected argument '" + arg + "'", 2);
      a.model = arg;
      continue;
    }
    if (i + 1 >= argc)
      fail(arg + " needs a value", 2);
    std::string v = argv[++i];
    if (arg == "-o") a.output = v;
    else if (arg == "--target") a.target = v;
    else if (arg == "--optimizer") a.optimizer = v;
    else if (arg == "--loss") a.import.loss = v;
    else if (arg == "--emit") a.emit = v;
    else if (arg == "--micro-batch") {
      char *end;
      long long n = std::strtoll(v.c_str(), &end, 10);
      if (*end || n < 1)
        fail("--micro-batch expects a positive integer, got '" + v + "'", 2);
      a.import.microBatch = n;
    } else {
      fail("unknown flag '" + arg + "'", 2);
    }
  }
  if (a.model.empty())
    fail("no model given", 2);
  if (a.command == "compile" && a.output.empty() && a.emit.empty())
    fail("no output given (-o)", 2);
  if (a.target != "cuda" && a.target != "cpu")
    fail("unknown --target '" + a.target + "' (expected cuda or cpu)", 2);
  if (!a.emit.empty() && a.emit != "mlir" && a.emit != "source")
    fail("unknown --emit '" + a.emit + "' (expected mlir or source)", 2);
  return a;
}

} // namespace

int main(int argc, char **argv) {
  Args args = parseArgs(argc, argv);
  static const std::map<std::string, otc::Optimizer> optimizers = {
      {"sgd", otc::Optimizer::Sgd}, {"momentum", otc::Optimizer::Momentum},
      {"adam", otc::Optimizer::Adam}, {"adamw", otc::Optimizer::AdamW}};
  auto optimizer = optimizers.find(args.optimizer);
  if (optimizer == optimizers.end())
    fail("unknown --optimizer '" + args.optimizer + "'", 2);

  MLIRContext ctx;
  ctx.loadDialect<otc::OtcDialect, func::FuncDialect>();
  std::string diagnostic;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (diagnostic.empty())
      diagnostic = d.str();
    return success();
  });

  std::string error;
  OwningOpRef<ModuleOp> module = otc::importOnnxModel(ctx, args.model, args.import, error);
  if (!module)
    fail(error);
  if (args.command == "import") {
    module->print(llvm::outs());
    return 0;
  }

  PassManager pm(&ctx);
  otc::buildTrainingPipeline(pm);
  if (failed(pm.run(*module)))
    fail("the training pipeline failed: " + diagnostic);
  if (args.emit == "mlir") {
    module->print(llvm::outs());
    return 0;
  }

  auto func = module->lookupSymbol<func::FuncOp>("train_step");
  otc::Target target = args.target == "cpu" ? otc::Target::Cpu : otc::Target::Cuda;
  std::string source;
  if (!otc::emitTrainingStep(func, target, args.import.microBatch, optimizer->second,
                             source, error))
    fail(error);
  if (args.emit == "source") {
    llvm::outs() << source;
    return 0;
  }
  if (!otc::buildExecutable(source, args.model, target, args.output, error))
    fail(error);
  llvm::errs() << "otc: wrote " << args.output << " (" << args.target << ", "
               << args.optimizer << ", micro-batch " << args.import.microBatch << ")\n";
  return 0;
}
