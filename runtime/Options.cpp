#include "Options.h"

#include "otc/runtime/limits.h"

#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace otc {
namespace {

const char kUsage[] =
    "usage: %s --data DIR (--steps S | --epochs E) [--accum-steps K] [--lr X]\n"
    "          [--weight-decay X] [--momentum X] [--beta1 X] [--beta2 X] [--eps X]\n"
    "          [--save trained.onnx] [--log metrics.jsonl] [--threads N] [--seed S]\n";


std::string shown(const char *text) {
  std::string s;
  for (const char *c = text; *c && s.size() < 64; ++c)
    s += (unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f ? *c : '?';
  return "'" + s + (std::char_traits<char>::length(text) > 64 ? "...'" : "'");
}

/// A float32-representable finite number, or an error.
bool number(const std::string &flag, const char *text, double &out, std::string &error) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(text, &end);
  if (!*text || *end || std::isspace((unsigned char)*text)) {
    error = flag + " expects a number, got " + shown(text);
    return false;
  }
  if (!std::isfinite(v) || std::fabs(v) > FLT_MAX || (errno == ERANGE && v != 0)) {
    error = flag + " expects a finite float32 number, got " + shown(text);
    return false;
  }
  out = v;
  return true;
}

bool count(const std::string &flag, const char *text, int64_t &out, std::string &error) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || errno == ERANGE || v < 1 || v > OTC_MAX_MICRO_BATCHES) {
    error = flag + " expects an integer from 1 to 2^40, got " + shown(text);
    return false;
  }
  out = v;
  return true;
}

/// PyTorch's optimizer argument checks: v >= 0, and v < 1 for the betas.
bool inRange(const std::string &flag, double v, bool belowOne, std::string &error) {
  if (v >= 0 && (!belowOne || v < 1))
    return true;
  error = flag + (belowOne ? " must lie in [0, 1)" : " must not be negative") +
          ", got " + std::to_string(v);
  return false;
}

} // namespace

ParseResult parseTrainOptions(int argc, const char *const *argv, otc_optimizer kind,
                              TrainOptions &o, std::string &error,
                              int64_t defaultAccumSteps) {
  o = TrainOptions();
  o.accumSteps = defaultAccumSteps >= 1 ? defaultAccumSteps : 1;
  bool weightDecayGiven = false;
  const char *prog = argc > 0 && argv[0] ? argv[0] : "train";
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      char buf[sizeof kUsage + 256];
      std::snprintf(buf, sizeof buf, kUsage, std::string(prog).substr(0, 200).c_str());
      error = buf;
      error += "          (--accum-steps defaults to " +
               std::to_string(defaultAccumSteps >= 1 ? defaultAccumSteps : 1) + ")\n";
      return ParseResult::Help;
    }
    if (flag.rfind("--", 0) != 0) {
      error = "unexpected argument " + shown(argv[i]);
      return ParseResult::Error;
    }
    if (i + 1 >= argc) {
      error = shown(argv[i]) + " needs a value";
      return ParseResult::Error;
    }
    const char *v = argv[++i];
    bool ok = true;
    if (flag == "--data") o.data = v;
    else if (flag == "--save") o.save = v;
    else if (flag == "--log") o.log = v;
    else if (flag == "--steps") ok = count(flag, v, o.steps, error);
    else if (flag == "--epochs") ok = count(flag, v, o.epochs, error);
    else if (flag == "--accum-steps") ok = count(flag, v, o.accumSteps, error);
    else if (flag == "--seed") {
      char *end = nullptr;
      errno = 0;
      unsigned long long s = std::strtoull(v, &end, 10);
      ok = *v && *v != '-' && !*end && errno != ERANGE;
      if (ok)
        o.seed = s;
      else
        error = "--seed expects an integer from 0 to 2^64-1, got " + shown(v);
    } else if (flag == "--threads") {
      ok = count(flag, v, o.threads, error) && o.threads <= 4096;
      if (!ok)
        error = "--threads expects an integer from 1 to 4096, got " + shown(v);
    }
    else if (flag == "--lr") ok = number(flag, v, o.lr, error);
    else if (flag == "--weight-decay") ok = weightDecayGiven = number(flag, v, o.weightDecay, error);
    else if (flag == "--momentum") ok = number(flag, v, o.momentum, error);
    else if (flag == "--beta1") ok = number(flag, v, o.beta1, error);
    else if (flag == "--beta2") ok = number(flag, v, o.beta2, error);
    else if (flag == "--eps") ok = number(flag, v, o.eps, error);
    else {
      error = "unknown flag " + shown(argv[i - 1]);
      ok = false;
    }
    if (!ok)
      return ParseResult::Error;
  }
  bool ranges = inRange("--lr", o.lr, false, error) &&
                (!weightDecayGiven || inRange("--weight-decay", o.weightDecay, false, error)) &&
                inRange("--momentum", o.momentum, false, error) &&
                inRange("--beta1", o.beta1, true, error) &&
                inRange("--beta2", o.beta2, true, error) && inRange("--eps", o.eps, false, error);
  if (ranges && o.data.empty())
    error = "--data is required";
  else if (ranges && (o.steps > 0) == (o.epochs > 0))
    error = "give exactly one of --steps and --epochs";
  else if (ranges && o.steps > 0 && o.steps > OTC_MAX_MICRO_BATCHES / o.accumSteps)
    error = "--steps times --accum-steps exceeds 2^40 micro-batches";
  if (!error.empty())
    return ParseResult::Error;
  if (!weightDecayGiven) // PyTorch's defaults: AdamW decays, the others do not
    o.weightDecay = kind == OTC_ADAMW ? 0.01 : 0.0;
  if (kind != OTC_MOMENTUM)
    o.momentum = 0;
  return ParseResult::Ok;
}

} // namespace otc
