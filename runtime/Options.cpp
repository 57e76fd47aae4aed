#include "Options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace otc {
namespace {

const char kUsage[] =
    "usage: %s --data DIR (--steps S | --epochs E) [--accum-steps K] [--lr X]\n"
    "          [--weight-decay X] [--momentum X] [--beta1 X] [--beta2 X] [--eps X]\n"
    "          [--save trained.onnx] [--log metrics.jsonl]\n";

[[noreturn]] void usageError(const char *prog, const std::string &message) {
  std::fprintf(stderr, "train: error: %s (see %s --help)\n", message.c_str(), prog);
  std::exit(2);
}

double number(const char *prog, const std::string &flag, const char *text) {
  char *end = nullptr;
  double v = std::strtod(text, &end);
  if (!*text || *end)
    usageError(prog, flag + " expects a number, got '" + text + "'");
  return v;
}

int64_t count(const char *prog, const std::string &flag, const char *text) {
  double v = number(prog, flag, text);
  if (v < 1 || v != (int64_t)v)
    usageError(prog, flag + " expects a positive integer, got '" + text + "'");
  return (int64_t)v;
}

} // namespace

TrainOptions parseTrainOptions(int argc, char **argv, OptimizerKind kind) {
  TrainOptions o;
  const char *prog = argv[0];
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf(kUsage, prog);
      std::exit(0);
    }
    if (flag.rfind("--", 0) != 0)
      usageError(prog, "unexpected argument '" + flag + "'");
    if (i + 1 >= argc)
      usageError(prog, flag + " needs a value");
    const char *v = argv[++i];
    if (flag == "--data") o.data = v;
    else if (flag == "--save") o.save = v;
    else if (flag == "--log") o.log = v;
    else if (flag == "--steps") o.steps = count(prog, flag, v);
    else if (flag == "--epochs") o.epochs = count(prog, flag, v);
    else if (flag == "--accum-steps") o.accumSteps = count(prog, flag, v);
    else if (flag == "--lr") o.lr = number(prog, flag, v);
    else if (flag == "--weight-decay") o.weightDecay = number(prog, flag, v);
    else if (flag == "--momentum") o.momentum = number(prog, flag, v);
    else if (flag == "--beta1") o.beta1 = number(prog, flag, v);
    else if (flag == "--beta2") o.beta2 = number(prog, flag, v);
    else if (flag == "--eps") o.eps = number(prog, flag, v);
    else usageError(prog, "unknown flag '" + flag + "'");
  }
  if (o.data.empty())
    usageError(prog, "--data is required");
  if ((o.steps > 0) == (o.epochs > 0))
    usageError(prog, "give exactly one of --steps and --epochs");
  if (o.weightDecay < 0) // PyTorch's defaults: AdamW decays, the others do not
    o.weightDecay = kind == OptimizerKind::AdamW ? 0.01 : 0.0;
  if (kind != OptimizerKind::Momentum)
    o.momentum = 0;
  return o;
}

} // namespace otc
