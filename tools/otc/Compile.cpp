#include "Compile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "otc/Passes/Passes.h"
#include "llvm/ADT/StringSet.h"

#include <set>

using namespace mlir;

namespace otc {

namespace {

std::string firstLine(const std::string &s) { return s.substr(0, s.find('\n')); }

/// `otc kernel`'s input: a module holding exactly one func.func.
bool parseKernel(MLIRContext &ctx, const CompileOptions &o, const std::string &diagnostic,
                 CompileResult &r, std::string &error) {
  ctx.allowUnregisteredDialects(false);
  r.module = parseSourceFile<ModuleOp>(o.model, &ctx);
  if (!r.module) {
    error = "cannot parse '" + o.model + "': " + firstLine(diagnostic);
    return false;
  }
  auto funcs = r.module->getOps<func::FuncOp>();
  if (std::distance(funcs.begin(), funcs.end()) != 1) {
    error = "'" + o.model + "' must hold exactly one func.func";
    return false;
  }
  r.func = *funcs.begin();
  return true;
}

/// A pair of equal parameters that both train is a tie the export may have
/// lost: warn once per pair (auto-fit compiles again), naming both.
void warnEqualParams(ModuleOp module, func::FuncOp step) {
  auto pairs = module->getAttrOfType<ArrayAttr>(attr::kEqualParams);
  if (!pairs)
    return;
  llvm::StringSet<> trained;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (auto name = step.getArgAttrOfType<StringAttr>(i, attr::kParam))
      if (step.getArgAttr(i, attr::kTrainable))
        trained.insert(name.getValue());
  static std::set<std::string> told;
  for (auto pair : pairs.getAsRange<ArrayAttr>()) {
    auto a = cast<StringAttr>(pair[0]).str(), b = cast<StringAttr>(pair[1]).str();
    if (trained.contains(a) && trained.contains(b) && told.insert(a + "=" + b).second)
      llvm::errs() << "otc: warning: parameters '" << a << "' and '" << b
                   << "' hold equal values and train as two tensors; if the model shares one, pass --tie "
                   << a << "=" << b << "\n";
  }
}

/// The training executable's evaluation function: the same import with
/// ImportOptions::evaluation, the forward pipeline, and a plain function.
bool compileEval(MLIRContext &ctx, const CompileOptions &o, std::string &diagnostic,
                 std::string &source, std::string &error) {
  ImportOptions eval = o.import;
  eval.evaluation = true;
  OwningOpRef<ModuleOp> module = importOnnxModel(ctx, o.model, eval, error, nullptr);
  if (!module)
    return false;
  PassManager pm(&ctx);
  InsertLoraOptions lora = o.lora;
  lora.dropout = 0; // evaluation keeps every input, as PEFT's eval mode
  buildForwardPipeline(pm, o.precision, lora);
  if (failed(pm.run(*module))) {
    error = "the evaluation function's pipeline failed: " + firstLine(diagnostic);
    return false;
  }
  CodegenOptions c = o.codegen;
  c.training = false;
  CodegenOutput out;
  if (!emitCode(module->lookupSymbol<func::FuncOp>("train_step"), c, out, error)) {
    error = "the evaluation function: " + error;
    return false;
  }
  const std::string getter = "const otc_function *otc_get_function(void)";
  size_t at = out.source.rfind(getter);
  if (at == std::string::npos) {
    error = "the evaluation function's source has no getter";
    return false;
  }
  source = out.source.replace(at, getter.size(), "const otc_function *otc_get_eval(void)");
  return true;
}

} // namespace

bool compile(MLIRContext &ctx, const CompileOptions &o, Stage stage, CompileResult &r,
             std::string &error) {
  std::string diagnostic;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (diagnostic.empty())
      diagnostic = d.str();
    return success();
  });
  bool forward = o.import.forwardOnly;
  if (o.kernel) {
    if (!parseKernel(ctx, o, diagnostic, r, error))
      return false;
  } else {
    r.module = importOnnxModel(ctx, o.model, o.import, error,
                               stage == Stage::Source ? &r.embedded : nullptr);
    if (!r.module)
      return false;
    if (stage == Stage::Import)
      return true;
    PassManager pm(&ctx);
    forward ? buildForwardPipeline(pm, o.precision)
            : buildTrainingPipeline(pm, o.scaling, o.precision, o.recompute, o.lora);
    if (failed(pm.run(*r.module))) {
      error = std::string(forward ? "the forward" : "the training") +
              " pipeline failed: " + firstLine(diagnostic);
      return false;
    }
    r.func = r.module->lookupSymbol<func::FuncOp>(forward ? "forward" : "train_step");
    if (!forward)
      warnEqualParams(*r.module, r.func);
  }
  if (stage == Stage::Passes)
    return true;
  CodegenOptions c = o.codegen;
  c.training = !o.kernel && !forward;
  c.planOnly = stage == Stage::Plan;
  if (!emitCode(r.func, c, r.out, error))
    return false;
  if (c.training && stage == Stage::Source)
    return compileEval(ctx, o, diagnostic, r.evalSource, error);
  return true;
}

} // namespace otc
