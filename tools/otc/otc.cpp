// otc: compiles an ONNX forward graph into a training executable.
//
//   otc compile model.onnx -o train [--target cuda|cpu]
//       [--optimizer sgd|momentum|adam|adamw] [--micro-batch N] [--loss SPEC]
//       [--emit mlir|program|source] [--forward-only]
//   otc import model.onnx [--micro-batch N] [--loss SPEC]
//   otc kernel function.mlir -o run [--target cuda|cpu] [--emit program|source]
#include "AutoFit.h"
#include "HostCompiler.h"
#include "Plot.h"
#include "../../runtime/SafeFile.h"
#include "otc/Codegen/Codegen.h"
#include "otc/Frontend/Import.h"
#include "otc/Passes/Passes.h"
#include "otc/runtime/limits.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

using namespace mlir;

namespace {

const char kUsage[] =
    "usage: otc compile MODEL.onnx -o OUTPUT [flags]   a training executable\n"
    "       otc compile MODEL.onnx --forward-only -o OUTPUT [flags]\n"
    "       otc import MODEL.onnx [--micro-batch N] [--loss SPEC]   print the imported IR\n"
    "       otc kernel FUNCTION.mlir -o OUTPUT [--target cuda|cpu] [--emit program|source]\n"
    "           (one func of otc ops; OUTPUT DIR reads DIR/argN.npy, writes DIR/resultN.npy)\n"
    "       otc plot METRICS.jsonl -o RUN.svg [--title TEXT]   a run's --log as a picture\n"
    "       otc --version\n"
    "\n"
    "compile flags:\n"
    "  -o OUTPUT                       the executable to write\n"
    "  --target cuda|cpu               CUDA C++ with cuBLAS, or C++ with OpenBLAS (default: cuda)\n"
    "  --optimizer sgd|momentum|adam|adamw|adafactor|adamw8bit   the update the executable runs (default: sgd)\n"
    "  --min-8bit-size N               adamw8bit: smaller tensors keep float32 moments (default: 4096)\n"
    "  --lora RANK                     insert LoRA adapters of this rank, freeze their weights (default: off)\n"
    "  --lora-alpha A                  the adapters' scale is A / RANK (default: 1)\n"
    "  --lora-targets REGEX            weights adapted, by parameter name (default: every matrix product's)\n"
    "  --lora-dropout P                dropout on the adapters' input, as PEFT's lora_dropout (default: 0)\n"
    "  --micro-batch N|auto            samples per step call; auto fits --memory-budget (default: 1)\n"
    "  --dim NAME=N                    a symbolic input dimension (a dynamic axis) of this size (repeatable)\n"
    "  --loss cross-entropy:OUT|mse:OUT|bce:OUT|span:START,END   a loss of output OUT and a labels input,\n"
    "                      or a question-answering span's (default: the model's scalar output)\n"
    "  --forward-only                  an executable that runs the graph and writes its outputs\n"
    "  --embed-weights                 carry the initial parameters (default: read from MODEL at start)\n"
    "  --conv-op                       convolutions as one op each (cuDNN on CUDA), not im2col and a GEMM\n"
    "  --batch-norm train|as-exported  BatchNorm with batch statistics (model.train()), or as the export wrote it\n"
    "  --emit mlir|program|source      print the IR after the passes, the kernel program or the source\n"
    "  --freeze NAME|PATTERN*          do not train these parameters (repeatable; default: none)\n"
    "  --fixed-rows NAME=ROW,...       rows of an embedding that get no gradient (padding_idx)\n"
    "  --tie KEEP=COPY                 train COPY as the same tensor as KEEP (repeatable)\n"
    "  --precision fp32|fp16|bf16      compute precision; weights stay float32 (default: fp32)\n"
    "  --keep-fp32 OPTYPE|NODE         ops kept in float32 under fp16/bf16 (repeatable)\n"
    "  --loss-scale none|static:S|dynamic   loss scaling (default: dynamic for fp16, else none)\n"
    "  --init-scale S                  the dynamic scale's start (default: 65536)\n"
    "  --scale-window N                good steps before the scale doubles (default: 2000)\n"
    "  --scale-hysteresis N            overflows tolerated before it halves (default: 1)\n"
    "  --min-scale S                   the scale's floor (default: 0)\n"
    "  --recompute none|selective|blocks|sqrt|budget   activation checkpointing (default: none)\n"
    "  --checkpoint-boundary REGEX     node names that start a block for --recompute blocks\n"
    "  --memory-budget BYTES[K|M|G]    choose micro-batch and recompute to fit (default: off)\n"
    "  --global-batch B                with --memory-budget: samples per optimizer step\n"
    "  --memory-report TIMELINE.svg    write the memory timeline and print the plan\n"
    "  --data-parallel                 run as ranks under mpirun: gradients all-reduced (default: off)\n"
    "  --help                          this text\n";

[[noreturn]] void fail(const std::string &message, int code = 1) {
  llvm::errs() << "otc: error: " << message
               << (code == 2 ? " (see otc --help)" : "") << "\n";
  std::exit(code);
}

/// The compile's options, and what only the command line has.
struct Args : otc::CompileOptions {
  std::string command, output, target = "cuda", optimizer = "sgd", emit;
  std::string memoryReport; // the timeline picture's path
  int64_t memoryBudget = 0, globalBatch = 0; // auto-fit
  bool microBatchAuto = false, microBatchGiven = false, recomputeGiven = false;
  bool lossScaleGiven = false;
  bool scalingFlags = false; // any of the options that need a scaler
  bool loraFlags = false;    // --lora-alpha, --lora-targets or --lora-dropout
  bool dataParallel = false; // link the collective backend: ranks under mpirun
};

double positiveNumber(const std::string &flag, const std::string &v, bool allowZero) {
  char *end;
  errno = 0;
  double x = std::strtod(v.c_str(), &end);
  // A scale below float32's normal range would make 1/scale infinite.
  if (v.empty() || *end || errno == ERANGE || !std::isfinite(float(x)) ||
      !(allowZero ? x >= 0 : x > 0) || (x != 0 && float(x) < FLT_MIN))
    fail(flag + " expects a " + (allowZero ? "non-negative" : "positive") +
             " number within float32's normal range, got '" + v.substr(0, 40) + "'",
         2);
  return x;
}

/// --fixed-rows NAME=ROW[,ROW...]: the name may itself hold '='.
std::pair<std::string, std::vector<int64_t>> fixedRows(const std::string &v) {
  size_t eq = v.rfind('=');
  std::vector<int64_t> rows;
  if (eq != std::string::npos && eq > 0) {
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(v).substr(eq + 1).split(parts, ',');
    for (llvm::StringRef p : parts) {
      long long r;
      if (p.getAsInteger(10, r)) {
        rows.clear();
        break;
      }
      rows.push_back(r);
    }
  }
  if (rows.empty())
    fail("--fixed-rows expects NAME=ROW[,ROW...] with integer rows, got '" + v.substr(0, 80) + "'",
         2);
  return {v.substr(0, eq), rows};
}

/// --dim NAME=N, split at the last '=' (a dim_param may hold one).
std::pair<std::string, int64_t> dimSize(const std::string &v) {
  size_t eq = v.rfind('=');
  long long n = 0;
  if (eq == std::string::npos || eq == 0 ||
      llvm::StringRef(v).substr(eq + 1).getAsInteger(10, n) || n < 1 || n > OTC_MAX_MICRO_BATCH)
    fail("--dim expects NAME=N with N from 1 to " + std::to_string(OTC_MAX_MICRO_BATCH) +
             ", got '" + v.substr(0, 80) + "'",
         2);
  return {v.substr(0, eq), n};
}

/// --tie KEEP=COPY, split at the first '='.
std::pair<std::string, std::string> tiePair(const std::string &v) {
  size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
    fail("--tie expects KEEP=COPY (two initializer names), got '" + v.substr(0, 80) + "'", 2);
  return {v.substr(0, eq), v.substr(eq + 1)};
}

/// An integer flag value from 1 to `max` (spelled `maxText` in the error).
int64_t count(const std::string &flag, const std::string &v, long long max = 1LL << 40,
              const std::string &maxText = "2^40") {
  char *end;
  errno = 0;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno == ERANGE || n < 1 || n > max)
    fail(flag + " expects an integer from 1 to " + maxText + ", got '" + v.substr(0, 40) + "'",
         2);
  return n;
}

/// Bytes, with an optional binary unit: 512, 64K, 1.5GiB.
int64_t byteCount(const std::string &flag, const std::string &v) {
  char *end;
  errno = 0;
  double x = std::strtod(v.c_str(), &end);
  std::string unit = end;
  static const std::map<std::string, double> units = {
      {"", 1},         {"B", 1},          {"K", 1024.0},      {"KiB", 1024.0},
      {"M", 1048576.0}, {"MiB", 1048576.0}, {"G", 1073741824.0}, {"GiB", 1073741824.0},
      {"T", 1099511627776.0}, {"TiB", 1099511627776.0}};
  auto u = units.find(unit);
  if (v.empty() || end == v.c_str() || u == units.end() || errno == ERANGE || !(x > 0) ||
      x * u->second >= 9.2e18 || x * u->second < 1)
    fail(flag + " expects a positive number of bytes with an optional unit (K, M, G, T: "
                "powers of 1024), got '" + v.substr(0, 40) + "'",
         2);
  return int64_t(x * u->second);
}

void checkArgs(Args &a);

Args parseArgs(int argc, char **argv) {
  if (argc < 2)
    fail("missing command", 2);
  Args a;
  a.command = argv[1];
  if (a.command == "--help" || a.command == "-h") {
    llvm::outs() << kUsage;
    std::exit(0);
  }
  if (a.command == "--version") {
    llvm::outs() << "otc " OTC_VERSION " (ONNX Training Compiler)\n"
                 << "built with MLIR/LLVM " LLVM_VERSION_STRING "\n"
                 << "targets: cpu (OpenBLAS)" << (OTC_CUDA_ENABLED ? ", cuda (cuBLAS, sm_90)" : "")
                 << "\n"
                 << "data parallel: "
                 << (!OTC_MPI_ENABLED                    ? "not built (no MPI)"
                     : std::string(OTC_NCCL_LINK).empty() ? "MPI (cpu)"
                                                          : "MPI (cpu), NCCL (cuda)")
                 << "\n";
    std::exit(0);
  }
  if (a.command != "compile" && a.command != "import" && a.command != "kernel")
    fail("unknown command '" + a.command + "'", 2);
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("-", 0) != 0) {
      if (!a.model.empty())
        fail("unexpected argument '" + arg.substr(0, 200) + "'", 2);
      a.model = arg;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      llvm::outs() << kUsage;
      std::exit(0);
    }
    if (arg == "--forward-only") {
      a.import.forwardOnly = true;
      continue;
    }
    if (arg == "--data-parallel") {
      a.dataParallel = true;
      continue;
    }
    if (arg == "--embed-weights") {
      a.import.embedWeights = true;
      continue;
    }
    if (arg == "--conv-op") {
      a.import.convOp = true;
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
    else if (arg == "--memory-report") a.memoryReport = v;
    else if (arg == "--recompute") {
      auto policy = otc::symbolizeRecomputePolicy(v);
      if (!policy)
        fail("unknown --recompute '" + v.substr(0, 40) +
                 "' (expected none, selective, blocks, sqrt or budget)",
             2);
      a.recompute.policy = *policy;
      a.recomputeGiven = true;
    } else if (arg == "--checkpoint-boundary") {
      a.recompute.boundary = v;
    }
    else if (arg == "--freeze") a.import.freeze.push_back(v);
    else if (arg == "--fixed-rows") a.import.fixedRows.push_back(fixedRows(v));
    else if (arg == "--tie") a.import.ties.push_back(tiePair(v));
    else if (arg == "--dim") a.import.dims.push_back(dimSize(v));
    else if (arg == "--batch-norm") {
      if (v != "train" && v != "as-exported")
        fail("unknown --batch-norm '" + v.substr(0, 40) + "' (expected train or as-exported)", 2);
      a.import.batchNormTrain = v == "train";
    }
    else if (arg == "--precision") {
      auto precision = otc::symbolizePrecision(v);
      if (!precision)
        fail("unknown --precision '" + v.substr(0, 40) + "' (expected fp32, fp16 or bf16)", 2);
      a.precision.precision = *precision;
    } else if (arg == "--keep-fp32") {
      a.precision.keepFp32.push_back(v);
    } else if (arg == "--loss-scale") {
      a.lossScaleGiven = true;
      if (v == "none" || v == "dynamic") {
        a.scaling.mode = *otc::symbolizeLossScaleMode(v);
      } else if (v.rfind("static:", 0) == 0) {
        a.scaling.mode = otc::LossScaleMode::Static;
        a.scaling.initScale = positiveNumber("--loss-scale static:S", v.substr(7), false);
      } else {
        fail("unknown --loss-scale '" + v.substr(0, 40) + "' (expected none, static:S or dynamic)",
             2);
      }
    } else if (arg == "--init-scale") {
      a.scaling.initScale = positiveNumber(arg, v, false);
      a.scalingFlags = true;
    } else if (arg == "--scale-window") {
      a.scaling.window = count(arg, v);
      a.scalingFlags = true;
    } else if (arg == "--scale-hysteresis") {
      a.scaling.hysteresis = count(arg, v);
      a.scalingFlags = true;
    } else if (arg == "--min-scale") {
      a.scaling.minScale = positiveNumber(arg, v, true);
      a.scalingFlags = true;
    } else if (arg == "--micro-batch") {
      a.microBatchGiven = true;
      a.microBatchAuto = v == "auto"; // the last --micro-batch wins
      if (!a.microBatchAuto)
        a.import.microBatch =
            count(arg, v, OTC_MAX_MICRO_BATCH, std::to_string(OTC_MAX_MICRO_BATCH));
    } else if (arg == "--memory-budget") {
      a.memoryBudget = byteCount(arg, v);
    } else if (arg == "--global-batch") {
      a.globalBatch = count(arg, v, OTC_MAX_MICRO_BATCHES, "2^40");
    } else if (arg == "--lora") {
      a.lora.rank = count(arg, v, 1 << 16, "65536");
    } else if (arg == "--lora-alpha") {
      a.lora.alpha = positiveNumber(arg, v, false);
      a.loraFlags = true;
    } else if (arg == "--lora-targets") {
      a.lora.targets = v;
      a.loraFlags = true;
    } else if (arg == "--lora-dropout") {
      a.lora.dropout = positiveNumber(arg, v, true);
      if (a.lora.dropout >= 1)
        fail("--lora-dropout expects a probability in [0, 1), got '" + v.substr(0, 40) + "'", 2);
      a.loraFlags = true;
    } else if (arg == "--min-8bit-size") {
      a.codegen.min8bitSize = count(arg, v, OTC_MAX_MICRO_BATCHES, "2^40");
    } else {
      fail("unknown flag '" + arg.substr(0, 40) + "'", 2);
    }
  }
  checkArgs(a);
  return a;
}

/// The flags' combinations: one error naming the flags, exit code 2.
void checkArgs(Args &a) {
  if (a.model.empty())
    fail("no model given", 2);
  if (a.import.forwardOnly && a.command != "compile" && a.command != "import")
    fail("--forward-only applies to otc compile and otc import", 2);
  if (a.import.forwardOnly && !a.import.freeze.empty())
    fail("--freeze does not apply to a forward-only executable", 2);
  if (a.import.forwardOnly && !a.import.fixedRows.empty())
    fail("--fixed-rows does not apply to a forward-only executable", 2);
  if (a.import.forwardOnly && a.import.batchNormTrain)
    fail("--batch-norm train does not apply to a forward-only executable", 2);
  // fp16's narrow range needs scaling by default, as AMP's GradScaler.
  if (!a.lossScaleGiven && a.precision.precision == otc::Precision::Fp16 &&
      !a.import.forwardOnly)
    a.scaling.mode = otc::LossScaleMode::Dynamic;
  if (a.scalingFlags && a.scaling.mode != otc::LossScaleMode::Dynamic)
    fail("--init-scale, --scale-window, --scale-hysteresis and --min-scale need "
         "--loss-scale dynamic",
         2);
  if (a.scaling.minScale > a.scaling.initScale)
    fail("--min-scale must not exceed the initial scale", 2);
  if (a.loraFlags && a.lora.rank == 0)
    fail("--lora-alpha, --lora-targets and --lora-dropout need --lora RANK", 2);
  if (a.lora.rank > 0 && (a.command != "compile" || a.import.forwardOnly))
    fail("--lora applies to otc compile of a training step", 2);
  if (std::string why; a.lora.rank > 0 && !llvm::Regex(a.lora.targets).isValid(why))
    fail("--lora-targets: bad regex '" + a.lora.targets.substr(0, 80) + "': " + why, 2);
  if (a.import.forwardOnly && a.scaling.mode != otc::LossScaleMode::None)
    fail("--loss-scale does not apply to a forward-only executable", 2);
  if (a.import.embedWeights && a.command != "compile")
    fail("--embed-weights applies to otc compile", 2);
  if (a.dataParallel && (a.command != "compile" || a.import.forwardOnly))
    fail("--data-parallel applies to otc compile of a training step", 2);
  if (a.command != "import" && a.output.empty() && a.emit.empty() && a.memoryReport.empty())
    fail("no output given (-o)", 2);
  using Policy = otc::RecomputePolicy;
  if (a.recompute.policy != Policy::None && (a.command != "compile" || a.import.forwardOnly))
    fail("--recompute applies to otc compile of a training step", 2);
  if (!a.memoryReport.empty() && (a.command != "compile" || a.import.forwardOnly))
    fail("--memory-report applies to otc compile of a training step", 2);
  bool training = a.command == "compile" && !a.import.forwardOnly;
  if ((a.memoryBudget || a.globalBatch || a.microBatchAuto) && !training)
    fail("--memory-budget, --global-batch and --micro-batch auto apply to otc compile of a "
         "training step",
         2);
  if ((a.globalBatch || a.microBatchAuto || a.recompute.policy == Policy::Budget) &&
      !a.memoryBudget)
    fail(std::string(a.globalBatch ? "--global-batch" : a.microBatchAuto ? "--micro-batch auto"
                                                                         : "--recompute budget") +
             " needs --memory-budget",
         2);
  if (a.globalBatch && a.microBatchGiven && !a.microBatchAuto)
    fail("--global-batch chooses the micro-batch: give --micro-batch auto or none", 2);
  // The boundary names blocks for --recompute blocks, or for auto-fit when
  // it chooses the policy.
  bool policyChosen =
      a.memoryBudget && (!a.recomputeGiven || a.recompute.policy == Policy::Budget);
  if (!a.recompute.boundary.empty() && a.recompute.policy != Policy::Blocks && !policyChosen)
    fail("--checkpoint-boundary applies to --recompute blocks", 2);
  if (std::string why; !a.recompute.boundary.empty() &&
                       !llvm::Regex(a.recompute.boundary).isValid(why))
    fail("--checkpoint-boundary: bad regex '" + a.recompute.boundary.substr(0, 80) + "': " + why,
         2);
  if (a.target != "cuda" && a.target != "cpu")
    fail("unknown --target '" + a.target + "' (expected cuda or cpu)", 2);
  if (!a.emit.empty() && a.emit != "mlir" && a.emit != "source" && a.emit != "program")
    fail("unknown --emit '" + a.emit + "' (expected mlir, program or source)", 2);
  if (a.emit == "mlir" && a.command == "kernel")
    fail("--emit mlir applies to otc compile", 2);
}

/// The step's FLOPs and what recompute did to them, and the kept bytes.
std::string stepSummary(func::FuncOp func, const otc::CodegenOutput &out) {
  otc::StepFlops f = otc::countFlops(func);
  auto policy = func->getAttrOfType<StringAttr>(otc::kRecomputeSummary);
  char line[256];
  std::snprintf(line, sizeof line,
                "step: %lld FLOPs, %lld of them recomputed (+%.2f%%); recompute %s; "
                "activations kept for the backward %lld bytes\n",
                (long long)f.total, (long long)f.recomputed, f.addedPercent(), policy ? policy.str().c_str() : "none", (long long)out.keptBytes);
  return line;
}

/// Writes the executable, or prints what --emit asks for.
int finish(const Args &args, otc::CompileResult &r) {
  std::string error;
  const otc::CodegenOutput &out = r.out;
  bool forward = args.import.forwardOnly;
  if (!args.memoryReport.empty()) {
    if (!otc::replaceFile(args.memoryReport, 0666,
                          [&](int fd) {
                            return otc::writeAll(fd, out.timeline.data(), out.timeline.size());
                          },
                          error))
      fail("--memory-report: " + error);
    llvm::errs() << out.memory << out.peak << stepSummary(r.func, out)
                 << "otc: wrote the timeline " << args.memoryReport << "\n";
    if (args.output.empty() && args.emit.empty())
      return 0;
  }
  if (args.emit == "source" || args.emit == "program") {
    llvm::outs() << (args.emit == "source" ? out.source : out.program);
    return 0;
  }
  auto kind = args.kernel ? otc::ExecutableKind::Function
              : forward   ? otc::ExecutableKind::Forward
                          : otc::ExecutableKind::Train;
  if (!otc::buildExecutable(out.source, r.evalSource, r.embedded, args.codegen.target, kind,
                            args.dataParallel, args.output, error))
    fail(error);
  if (args.kernel) {
    llvm::errs() << "otc: wrote " << args.output << " (" << args.target << ")\n";
    return 0;
  }
  llvm::errs() << "otc: wrote " << args.output << " (" << args.target << ", "
               << (forward ? "forward only" : args.optimizer) << ", "
               << otc::stringifyPrecision(args.precision.precision) << ", micro-batch "
               << args.import.microBatch
               << (args.codegen.defaultAccumSteps > 1
                       ? ", accumulation " + std::to_string(args.codegen.defaultAccumSteps)
                       : std::string())
               << ")\n"
               << out.memory << (forward ? std::string() : stepSummary(r.func, out));
  return 0;
}

/// Auto-fit (--memory-budget): sets the micro-batch, the recompute policy
/// and the executable's default accumulation.
void fitToBudget(MLIRContext &ctx, Args &args) {
  otc::CompileOptions step = args;
  otc::FitRequest request;
  request.budget = args.memoryBudget;
  request.globalBatch = args.globalBatch;
  request.microBatchAuto = args.microBatchAuto && !args.globalBatch;
  // The recompute policy is chosen too, unless one was named (other than
  // budget); --micro-batch auto alone keeps the given policy, none by default.
  request.policyGiven = args.recompute.policy != otc::RecomputePolicy::Budget &&
                        (args.recomputeGiven || request.microBatchAuto);
  std::string error;
  if (!otc::autoFit(ctx, step, request, error, llvm::errs()))
    fail(error);
  args.import.microBatch = step.import.microBatch;
  args.recompute = step.recompute;
  args.codegen.defaultAccumSteps = step.codegen.defaultAccumSteps;
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && std::string(argv[1]) == "plot")
    return otc::plotCommand(argc, argv);
  Args args = parseArgs(argc, argv);
  static const std::map<std::string, otc_optimizer> optimizers = {
      {"sgd", OTC_SGD}, {"momentum", OTC_MOMENTUM},
      {"adam", OTC_ADAM}, {"adamw", OTC_ADAMW}, {"adafactor", OTC_ADAFACTOR},
      {"adamw8bit", OTC_ADAMW8BIT}};
  auto optimizer = optimizers.find(args.optimizer);
  if (optimizer == optimizers.end())
    fail("unknown --optimizer '" + args.optimizer + "'", 2);

  MLIRContext ctx;
  ctx.loadDialect<otc::OtcDialect, func::FuncDialect>();
  std::string error;
  bool writesExecutable = args.command != "import" && args.emit.empty() && !args.output.empty();
  if (writesExecutable && !otc::checkReplaceable(args.output, error))
    fail("-o: " + error);
  if (!args.memoryReport.empty() && !otc::checkReplaceable(args.memoryReport, error))
    fail("--memory-report: " + error);
  args.kernel = args.command == "kernel";
  args.codegen.target = args.target == "cpu" ? otc::Target::Cpu : otc::Target::Cuda;
  args.codegen.optimizer = optimizer->second;
  if (args.memoryBudget)
    fitToBudget(ctx, args);
  args.codegen.title = "otc memory per step: " + args.model.substr(args.model.rfind('/') + 1) +
                       ", " + otc::stringifyPrecision(args.precision.precision).str() +
                       ", micro-batch " +
                       std::to_string(args.import.microBatch) + ", " + args.optimizer;

  otc::Stage stage = args.command == "import" ? otc::Stage::Import
                     : args.emit == "mlir"     ? otc::Stage::Passes
                                               : otc::Stage::Source;
  otc::CompileResult result;
  if (!otc::compile(ctx, args, stage, result, error))
    fail(error);
  if (stage != otc::Stage::Source) {
    result.module->print(llvm::outs());
    return 0;
  }
  return finish(args, result);
}
