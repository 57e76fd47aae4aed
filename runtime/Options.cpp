#include "Options.h"
#include "NamePattern.h"

#include "otc/runtime/limits.h"

#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>

namespace otc {
namespace {

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

/// An integer in [least, 2^40].
bool count(const std::string &flag, const char *text, int64_t &out, std::string &error,
           int64_t least = 1) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || errno == ERANGE || v < least || v > OTC_MAX_MICRO_BATCHES) {
    error = flag + " expects an integer from " + std::to_string(least) + " to 2^40, got " +
            shown(text);
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

/// One flag: its value's name (null: a switch), one line of help, and its
/// default as shown by --help (null: none).
struct Flag {
  const char *name, *value, *help, *byDefault;
  std::function<bool(TrainOptions &, const char *, std::string &)> set;
};

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::vector<Flag> flags(otc_optimizer kind, bool &weightDecayGiven) {
  auto real = [](const char *flag, double TrainOptions::*field) {
    return [=](TrainOptions &o, const char *v, std::string &e) { return number(flag, v, o.*field, e); };
  };
  auto integer = [](const char *flag, int64_t TrainOptions::*field, int64_t least = 1) {
    return [=](TrainOptions &o, const char *v, std::string &e) { return count(flag, v, o.*field, e, least); };
  };
  auto text = [](std::string TrainOptions::*field) {
    return [=](TrainOptions &o, const char *v, std::string &) { o.*field = v; return true; };
  };
  static const std::string decayDefault[] = {"0", "0.01"};
  return {
      {"--data", "DIR", "training data: DIR/NAME.npy per graph input", nullptr, text(&TrainOptions::data)},
      {"--tokens", "FILE",
       "token stream (.npy of uint16/int32/int64, or .bin as nanoGPT or llm.c write): each sample "
       "a random window of T+1 tokens",
       nullptr, text(&TrainOptions::tokens)},
      {"--token-input", "NAME", "the graph input a token window's first T tokens feed", nullptr,
       text(&TrainOptions::tokenInput)},
      {"--token-labels", "NAME", "the graph input its last T tokens (the shifted labels) feed",
       nullptr, text(&TrainOptions::tokenLabels)},
      {"--steps", "S", "optimizer steps to take", nullptr, integer("--steps", &TrainOptions::steps)},
      {"--epochs", "E", "passes over --data (instead of --steps)", nullptr,
       integer("--epochs", &TrainOptions::epochs)},
      {"--accum-steps", "K", "micro-batches per optimizer step", "compiled in",
       integer("--accum-steps", &TrainOptions::accumSteps)},
      {"--shuffle", nullptr, "a new seeded order of the samples every epoch", "in file order",
       [](TrainOptions &o, const char *, std::string &) { return o.shuffle = true; }},
      {"--seed", "S", "seed of dropout, the shuffle and the token windows", "0",
       [](TrainOptions &o, const char *v, std::string &e) {
         char *end = nullptr;
         errno = 0;
         unsigned long long s = std::strtoull(v, &end, 10);
         if (*v && *v != '-' && !*end && errno != ERANGE)
           return o.seed = s, true;
         e = "--seed expects an integer from 0 to 2^64-1, got " + shown(v);
         return false;
       }},
      {"--lr", "X", "peak learning rate", "0.001", real("--lr", &TrainOptions::lr)},
      {"--lr-schedule", "constant|linear|cosine",
       "after warmup: hold, or decay linearly or by half a cosine to --min-lr at the last step",
       "constant",
       [](TrainOptions &o, const char *v, std::string &e) {
         std::string s = v;
         if (s == "constant" || s == "linear" || s == "cosine") {
           o.schedule = s == "constant" ? LrSchedule::Constant
                        : s == "linear" ? LrSchedule::Linear
                                        : LrSchedule::Cosine;
           return true;
         }
         e = "--lr-schedule expects constant, linear or cosine, got " + shown(v);
         return false;
       }},
      {"--warmup-steps", "N", "steps of linear warmup from 0 to --lr", "0",
       integer("--warmup-steps", &TrainOptions::warmupSteps, 0)},
      {"--min-lr", "X", "where linear and cosine decay end", "0", real("--min-lr", &TrainOptions::minLr)},
      {"--clip-grad-norm", "X",
       "scale gradients down to this global L2 norm (after unscaling; as clip_grad_norm_)", "off",
       [](TrainOptions &o, const char *v, std::string &e) {
         if (!number("--clip-grad-norm", v, o.clipGradNorm, e))
           return false;
         if (o.clipGradNorm > 0)
           return true;
         e = "--clip-grad-norm expects a positive number, got " + shown(v);
         return false;
       }},
      {"--weight-decay", "X", "weight decay (decoupled for AdamW)",
       decayDefault[kind == OTC_ADAMW || kind == OTC_ADAMW8BIT].c_str(),
       [&weightDecayGiven](TrainOptions &o, const char *v, std::string &e) {
         return weightDecayGiven = number("--weight-decay", v, o.weightDecay, e);
       }},
      {"--no-decay", "REGEX",
       "no weight decay for parameters whose name matches (repeatable; e.g. 'bias$')", "none",
       [](TrainOptions &o, const char *v, std::string &e) {
         NamePattern check;
         if (std::string why; !check.compile(v, why)) {
           e = "--no-decay expects a POSIX extended regular expression, got " + shown(v) + ": " + why;
           return false;
         }
         o.noDecay.push_back(v);
         return true;
       }},
      {"--momentum", "X", "SGD momentum (--optimizer momentum)", "0", real("--momentum", &TrainOptions::momentum)},
      {"--beta1", "X", "Adam's first-moment decay (Adafactor: keep a first moment with this decay)", "0.9", real("--beta1", &TrainOptions::beta1)},
      {"--beta2", "X", "Adam's second-moment decay", "0.999", real("--beta2", &TrainOptions::beta2)},
      {"--eps", "X", "Adam's denominator term", "1e-08", real("--eps", &TrainOptions::eps)},
      {"--scale-parameter", nullptr, "Adafactor: step size times max(1e-3, RMS(param))", "off",
       [](TrainOptions &o, const char *, std::string &) { return o.scaleParameter = true; }},
      {"--relative-step", nullptr, "Adafactor: step size min(1e-2, 1/sqrt(t)) instead of --lr",
       "off", [](TrainOptions &o, const char *, std::string &) { return o.relativeStep = true; }},
      {"--warmup-init", nullptr, "Adafactor with --relative-step: min(1e-6 t, 1/sqrt(t))", "off",
       [](TrainOptions &o, const char *, std::string &) { return o.warmupInit = true; }},
      {"--loss-average", "tokens|micro-batch",
       "a window's loss: the mean over its counted labels, or the mean of micro-batch means",
       "tokens",
       [](TrainOptions &o, const char *v, std::string &e) {
         std::string s = v;
         if (s == "tokens" || s == "micro-batch") {
           o.lossAverage = s == "tokens" ? LossAverage::Tokens : LossAverage::MicroBatch;
           return true;
         }
         e = "--loss-average expects tokens or micro-batch, got " + shown(v);
         return false;
       }},
      {"--eval-data", "DIR", "held-out data: DIR/NAME.npy per input; its mean loss is logged", nullptr,
       text(&TrainOptions::evalData)},
      {"--eval-every", "N", "evaluate after every N steps (and at the end)", "only at the end",
       integer("--eval-every", &TrainOptions::evalEvery)},
      {"--checkpoint", "DIR", "save the run's whole state to DIR/checkpoint.otc", nullptr,
       text(&TrainOptions::checkpoint)},
      {"--checkpoint-every", "N", "checkpoint after every N steps (and at the end)", "only at the end",
       integer("--checkpoint-every", &TrainOptions::checkpointEvery)},
      {"--resume", "DIR", "continue the run checkpointed in DIR, bit for bit", nullptr,
       text(&TrainOptions::resume)},
      {"--init", "MODEL.onnx",
       "initial parameters from this ONNX model (same names, shapes, float32) instead of the compiled one's",
       nullptr, text(&TrainOptions::init)},
      {"--save", "FILE", "write the trained model (ONNX; with LoRA, merged) at the end", nullptr,
       text(&TrainOptions::save)},
      {"--save-adapter", "DIR", "LoRA: write the adapters alone, as PEFT saves them", nullptr,
       text(&TrainOptions::saveAdapter)},
      {"--log", "FILE", "one JSON line of metrics per step (otc plot draws it)", nullptr,
       text(&TrainOptions::log)},
      {"--collective-timeout", "S",
       "data parallel: seconds a rank waits for the others (and for rank 0's checkpoint writes) before stopping with an error",
       "600",
       [](TrainOptions &o, const char *v, std::string &e) {
         if (number("--collective-timeout", v, o.collectiveTimeout, e) && o.collectiveTimeout > 0 &&
             o.collectiveTimeout <= 1e6)
           return true;
         e = "--collective-timeout expects seconds above 0, at most 1e6, got " + shown(v);
         return false;
       }},
      {"--shard-optimizer", nullptr,
       "data parallel: each rank keeps and updates 1/W of the optimizer state (ZeRO-1)", "off",
       [](TrainOptions &o, const char *, std::string &) { return o.shardOptimizer = true; }},
      {"--bucket-mb", "X",
       "data parallel: MiB of gradients per all-reduce, started as the backward finishes them",
       "4",
       [](TrainOptions &o, const char *v, std::string &e) {
         if (number("--bucket-mb", v, o.bucketMb, e) && o.bucketMb > 0 && o.bucketMb <= 1e6)
           return true;
         e = "--bucket-mb expects a number of MiB above 0, got " + shown(v);
         return false;
       }},
      {"--trace", "FILE",
       "write the run's spans (micro-batches, all-reduces, updates) for chrome://tracing or Perfetto",
       nullptr, text(&TrainOptions::trace)},
      {"--profile", "FILE",
       "time each step of the compiled program and the optimizer update (the median over the "
       "micro-batches after the first), write them with each step's bytes and FLOPs as JSON, "
       "and print the time by op; waits after every micro-batch and runs no CUDA graph",
       nullptr, text(&TrainOptions::profile)},
      {"--cuda-graphs", nullptr,
       "CUDA: capture a micro-batch's kernels once per input buffer set and first flag, and "
       "replay them as a CUDA graph (bitwise the same run, fewer launches); ignored on the CPU "
       "and on the last micro-batch of a data-parallel window",
       "off",
       [](TrainOptions &o, const char *, std::string &) { return o.cudaGraphs = true; }},
      {"--threads", "N", "CPU threads", "OMP_NUM_THREADS, else all cores",
       [](TrainOptions &o, const char *v, std::string &e) {
         if (count("--threads", v, o.threads, e) && o.threads <= 4096)
           return true;
         e = "--threads expects an integer from 1 to 4096, got " + shown(v);
         return false;
       }},
  };
}

std::string usage(const char *prog, const std::vector<Flag> &table, int64_t accumSteps) {
  std::string text = "usage: " + std::string(prog).substr(0, 200) +
                     " (--data DIR | --tokens FILE ...) (--steps S | --epochs E) [flags]\n\n";
  for (const Flag &f : table) {
    std::string left = "  " + std::string(f.name) + (f.value ? " " + std::string(f.value) : "");
    left.resize(std::max<size_t>(left.size() + 2, 34), ' ');
    std::string def = f.byDefault ? f.byDefault : "";
    if (std::string(f.name) == "--accum-steps")
      def = std::to_string(accumSteps);
    text += left + f.help + (def.empty() ? "" : " (default: " + def + ")") + "\n";
  }
  text += "  --help                          this text\n";
  return text;
}

} // namespace

ParseResult parseTrainOptions(int argc, const char *const *argv, otc_optimizer kind,
                              TrainOptions &o, std::string &error,
                              int64_t defaultAccumSteps) {
  o = TrainOptions();
  o.accumSteps = defaultAccumSteps >= 1 ? defaultAccumSteps : 1;
  bool weightDecayGiven = false;
  std::set<std::string> given;
  std::vector<Flag> table = flags(kind, weightDecayGiven);
  const char *prog = argc > 0 && argv[0] ? argv[0] : "train";
  for (int i = 1; i < argc; ++i) {
    std::string name = argv[i];
    if (name == "--help" || name == "-h") {
      error = usage(prog, table, o.accumSteps);
      return ParseResult::Help;
    }
    if (name.rfind("--", 0) != 0) {
      error = "unexpected argument " + shown(argv[i]);
      return ParseResult::Error;
    }
    const Flag *flag = nullptr;
    for (const Flag &f : table)
      if (name == f.name)
        flag = &f;
    if (!flag) {
      error = "unknown flag " + shown(argv[i]);
      return ParseResult::Error;
    }
    if (flag->value && i + 1 >= argc) {
      error = shown(argv[i]) + " needs a value";
      return ParseResult::Error;
    }
    if (!flag->set(o, flag->value ? argv[++i] : "", error))
      return ParseResult::Error;
    given.insert(flag->name);
  }
  bool ranges = inRange("--lr", o.lr, false, error) &&
                (!weightDecayGiven || inRange("--weight-decay", o.weightDecay, false, error)) &&
                inRange("--momentum", o.momentum, false, error) &&
                inRange("--beta1", o.beta1, true, error) &&
                inRange("--beta2", o.beta2, true, error) && inRange("--eps", o.eps, false, error) &&
                inRange("--min-lr", o.minLr, false, error);
  bool stream = !o.tokens.empty();
  if (!ranges)
    ;
  else if (o.data.empty() == !stream)
    error = "give exactly one of --data and --tokens";
  else if (stream && (o.tokenInput.empty() || o.tokenLabels.empty()))
    error = "--tokens needs --token-input and --token-labels";
  else if (!stream && (!o.tokenInput.empty() || !o.tokenLabels.empty()))
    error = "--token-input and --token-labels go with --tokens";
  else if (stream && o.epochs > 0)
    error = "a token stream has no epochs: give --steps";
  else if (stream && o.shuffle)
    error = "--shuffle is for --data; token windows are already random";
  else if ((o.steps > 0) == (o.epochs > 0))
    error = "give exactly one of --steps and --epochs";
  else if (o.steps > 0 && o.steps > OTC_MAX_MICRO_BATCHES / o.accumSteps)
    error = "--steps times --accum-steps exceeds 2^40 micro-batches";
  else if (o.evalEvery > 0 && o.evalData.empty())
    error = "--eval-every needs --eval-data DIR";
  else if (o.checkpointEvery > 0 && o.checkpoint.empty())
    error = "--checkpoint-every needs --checkpoint DIR";
  else if (kind != OTC_ADAFACTOR && (o.scaleParameter || o.relativeStep || o.warmupInit))
    error = "--scale-parameter, --relative-step and --warmup-init are Adafactor's (otc compile --optimizer adafactor)";
  else if (kind == OTC_ADAFACTOR && (given.count("--beta2") || given.count("--eps") ||
                                     given.count("--momentum")))
    error = "Adafactor takes none of --beta2, --eps and --momentum (its second-moment decay is 1 - t^-0.8)";
  else if (o.relativeStep && (given.count("--lr") || given.count("--lr-schedule") ||
                              given.count("--warmup-steps") || given.count("--min-lr")))
    error = "--relative-step sets the step size itself: give no --lr or schedule (as Hugging Face refuses lr with relative_step)";
  else if (o.warmupInit && !o.relativeStep)
    error = "--warmup-init goes with --relative-step";
  else if (o.minLr > o.lr)
    error = "--min-lr " + number(o.minLr) + " exceeds --lr " + number(o.lr);
  o.firstMoment = kind == OTC_ADAFACTOR && given.count("--beta1");
  if (!error.empty())
    return ParseResult::Error;
  if (!weightDecayGiven) // PyTorch's defaults: AdamW decays, the others do not
    o.weightDecay = kind == OTC_ADAMW || kind == OTC_ADAMW8BIT ? 0.01 : 0.0;
  if (kind != OTC_MOMENTUM)
    o.momentum = 0;
  return ParseResult::Ok;
}

} // namespace otc
