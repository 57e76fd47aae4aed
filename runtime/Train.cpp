// The training executable's main: loads the data, loops over micro-batches,
// steps the optimizer, reports progress and saves the trained model.
#include "Backend.h"
#include "Checkpoint.h"
#include "Collective.h"
#include "GradBuckets.h"
#include "Profile.h"
#include "Trace.h"
#include "Data.h"
#include "otc/runtime/hash.h"
#include "Schedule.h"
#include "LossScaler.h"
#include "ModelFile.h"
#include "NamePattern.h"
#include "Npy.h"
#include "Options.h"
#include "ExecutableMain.h"
#include "TensorFiles.h"
#include "SafeFile.h"
#include "otc/runtime/abi.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <cstdarg>
#include <fstream>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/// The evaluation function otc compile links into training executables
/// (absent from older ones).
extern "C" const otc_function *otc_get_eval(void) __attribute__((weak));

namespace otc {
namespace {

[[noreturn]] void die(const std::string &message) { throw Fatal{message}; }

/// A parameter the runtime initialises (otc_init): zeros, or PEFT's
/// kaiming_uniform_(a=sqrt(5)) of LoRA's A, uniform in +-1/sqrt(fan_in),
/// drawn from splitmix64 of (seed, FNV-1a of the name, element): element
/// i is bound (2 u - 1), u = the top 24 bits of mix(h + i) / 2^24, with
/// h = mix(seed ^ fnv1a(name)).
std::vector<float> initialValues(const otc_tensor_desc &d, uint64_t seed) {
  std::vector<float> v(size_t(elements(d)), 0.0f);
  if (d.init != OTC_INIT_KAIMING_UNIFORM)
    return v;
  uint64_t h = splitmix64(seed ^ fingerprint(d.name, std::strlen(d.name)));
  double bound = 1.0 / std::sqrt(double(d.rank == 2 ? d.shape[1] : 1));
  for (size_t i = 0; i < v.size(); ++i) {
    double u = double(splitmix64(h + i) >> 40) / double(1 << 24);
    v[i] = float(bound * (2 * u - 1));
  }
  return v;
}

/// The update's scalars for optimizer step `t` at learning rate `lr`.
OptimizerStep stepScalars(otc_optimizer kind, const TrainOptions &o, int64_t t, double lr,
                          double weightDecay) {
  OptimizerStep s{};
  s.kind = kind;
  s.lr = float(lr);
  s.weightDecay = float(weightDecay);
  s.momentum = float(o.momentum);
  s.beta1 = float(o.beta1);
  s.oneMinusBeta1 = float(1.0 - o.beta1);
  s.beta2 = float(o.beta2);
  s.oneMinusBeta2 = float(1.0 - o.beta2);
  s.eps = float(o.eps);
  s.stepSize = float(lr / (1.0 - std::pow(o.beta1, double(t))));
  s.biasCorr2Sqrt = float(std::sqrt(1.0 - std::pow(o.beta2, double(t))));
  s.decayFactor = float(1.0 - lr * weightDecay);
  s.firstStep = t == 1;
  s.gradScale = 1.0f;
  return s;
}

struct Param {
  const otc_tensor_desc *desc;
  int64_t count;
  float *value, *grad = nullptr, *m = nullptr, *v = nullptr;
  void *low = nullptr; // the 16-bit copy the step reads, or null
  int64_t mCount = 0, vCount = 0; // elements of m and v
  uint8_t *q1 = nullptr, *q2 = nullptr; // adamw8bit: the moments' codes (m, v: their scales)
  float *m1 = nullptr; // Adafactor's first moment (--beta1), or null
  bool quantized = false, firstMoment = false; // has q1/q2, has m1 (where it is kept)
  int owner = -1; // --shard-optimizer: the rank keeping the state (-1: every rank)
  bool mine(int rank) const { return owner < 0 || owner == rank; }
  bool decays = true;  // not matched by --no-decay
  float *saved = nullptr; // an assigned parameter's value before the window
  /// A frozen base stored only in 16 bits on the device (low_only, value
  /// null): its float32 values, for --save's merge.
  std::vector<float> host;
  bool frozen() const { return !grad && !desc->assigned; }
};

/// `values` rounded to nearest even in the 16-bit type `dtype`, as bytes:
/// the parameter's low-precision copy before the first update writes it.
std::vector<uint16_t> lowCopy(const std::vector<float> &values, int dtype) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == OTC_F16) {
      otc_f16 h;
      otc_store(&h, values[i]);
      bits[i] = h.bits;
    } else {
      otc_bf16 b;
      otc_store(&b, values[i]);
      bits[i] = b.bits;
    }
  }
  return bits;
}

/// The --log file. Opened non-blocking, so a FIFO nobody reads is an error
/// rather than a hang; a pipe or terminal (/dev/stdout) still works.
const char *precisionName(otc_precision p) {
  switch (p) {
  case OTC_PRECISION_FP32: return "fp32";
  case OTC_PRECISION_FP16: return "fp16";
  case OTC_PRECISION_BF16: return "bf16";
  }
  return "an unknown precision";
}

const char *recomputeName(otc_recompute_policy p) {
  switch (p) {
  case OTC_RECOMPUTE_NONE: return "none";
  case OTC_RECOMPUTE_SELECTIVE: return "selective";
  case OTC_RECOMPUTE_BLOCKS: return "blocks";
  case OTC_RECOMPUTE_SQRT: return "sqrt";
  case OTC_RECOMPUTE_BUDGET: return "budget";
  }
  return "unknown";
}

std::FILE *openLog(const std::string &path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0)
    return nullptr;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::FILE *f = fdopen(fd, "w");
  if (!f)
    close(fd);
  return f;
}

/// The first parameter whose values (or gradients) hold a NaN or infinity.
const Param *firstNonFinite(Backend &backend, const std::vector<Param> &params,
                            bool grads) {
  for (const Param &p : params)
    if ((grads ? p.grad : p.value) &&
        backend.anyNonFinite(grads ? p.grad : p.value, p.count))
      return &p;
  return nullptr;
}

std::string jsonNumber(double v) {
  if (!std::isfinite(v))
    return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

/// One training run: its options, data, device buffers and progress.
struct Trainer {
  const otc_program &prog = *otc_get_program();
  otc_optimizer kind = static_cast<otc_optimizer>(prog.optimizer);
  TrainOptions opt;
  std::unique_ptr<DataSource> data;
  int64_t N = 0, K = 0, M = 0, total = 0, steps = 0;
  bool tokenWeighted = false; // micro-batches weighted by their counted labels
  std::unique_ptr<Backend> backend;
  std::vector<Param> params;
  std::vector<float *> paramPtrs, gradPtrs;
  std::vector<void *> lowPtrs;
  std::vector<std::vector<void *>> inputSets; // the step's input buffers, used in turn
  int64_t staged = 0;                          // micro-batches staged so far
  std::vector<Backend::Span> gradSpans;
  std::unique_ptr<GradBuckets> buckets; // the gradient buffers, in one block
  float *gradBlock = nullptr;
  int64_t gradFloats = 0;
  Trace trace;
  std::unique_ptr<Profile> profile; // --profile, on the lead rank
  /// What the step's marks reach: the backend's clock on the step's stream.
  struct MarkClock {
    Backend *backend;
    void *stream;
  } clock{};
  otc_step_args args{};
  // Painted, so that the bytes the steps wrote can be told from the rest at
  // the end: the arena's measured high-water mark, against the plan's.
  static constexpr unsigned char kPaint = 0xA5;
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> logFile{nullptr, std::fclose};
  int64_t updates = 0, skipped = 0; // Adam's step count advances on updates only
  int64_t startStep = 0;
  double firstLoss = 0, lastLoss = 0;
  LossScaler scaler{prog.loss_scale_mode, prog.init_scale, prog.scale_window,
                    prog.scale_hysteresis, prog.min_scale};
  // --eval-data: the evaluation function, its data and its arguments.
  const otc_function *evalFn = nullptr;
  std::unique_ptr<DataSource> evalData;
  std::vector<void *> evalArgs;
  std::vector<int> evalInputArg; // per evaluation input: its argument
  otc_function_args evalCall{};
  float *evalLoss = nullptr;
  int evalTokenLabels = -1;
  double lastEval = NAN;
  // Data parallelism: the group (null for one process), this rank and the
  // group's size; only the lead rank (0) writes and reports.
  std::unique_ptr<Collective> comm;
  int W = 1, R = 0;
  bool lead = true;
  std::vector<int64_t> stateOnRank; // --shard-optimizer: each rank's optimizer state bytes
  std::string initFingerprint; // the initial parameters' FNV-1a

  /// Progress and notes, from the lead rank only (errors come from any).
  __attribute__((format(printf, 2, 3))) void say(const char *format, ...) const {
    if (!lead)
      return;
    va_list ap;
    va_start(ap, format);
    std::vfprintf(stderr, format, ap);
    va_end(ap);
  }

  /// Joins the launcher's group when this executable has a collective
  /// backend (otc compile --data-parallel); refuses a launch as ranks
  /// without one, where each would train alone.
  void joinRanks() {
    if (!joinGroup) {
      if (launchedAsRanks())
        die("started as one of several ranks, but this executable was built without "
            "--data-parallel: each rank would train alone (build it with otc compile "
            "--data-parallel)");
      if (opt.shardOptimizer)
        die("--shard-optimizer needs an executable built with otc compile --data-parallel");
      return;
    }
    if (!launchedAsGroup()) { // run alone: the plain run, no MPI or NCCL at all
      if (opt.shardOptimizer)
        say("train: note: --shard-optimizer has no other rank to share with\n");
      return;
    }
    comm = joinGroup(*backend, opt.collectiveTimeout);
    W = comm->size(), R = comm->rank(), lead = R == 0;
  }

  /// Opens --eval-data and binds the evaluation function's arguments: data
  /// inputs to buffers of their own, parameters to the training ones.
  void prepareEval() {
    if (opt.evalData.empty())
      return;
    evalFn = otc_get_eval ? otc_get_eval() : nullptr;
    if (!evalFn)
      die("--eval-data: this executable has no evaluation function; build it again with otc compile");
    if (evalFn->num_results != 1 || evalFn->results[0].rank != 0 || evalFn->results[0].dtype != OTC_F32)
      die("--eval-data: the evaluation function does not return one float32 loss");
    InputSet set;
    set.microBatch = evalFn->micro_batch;
    evalArgs.resize(size_t(evalFn->num_args));
    for (int i = 0; i < evalFn->num_args; ++i) {
      const otc_tensor_desc &d = evalFn->args[i];
      if (evalFn->arg_roles[i] == OTC_ARG_INPUT) {
        if (prog.token_labels >= 0 && std::strcmp(d.name, prog.inputs[prog.token_labels].name) == 0)
          evalTokenLabels = int(set.inputs.size());
        set.inputs.push_back(&d);
        evalInputArg.push_back(i);
        evalArgs[i] = backend->alloc(size_t(elements(d)) * storageBytes(d.dtype));
        continue;
      }
      auto p = std::find_if(params.begin(), params.end(),
                            [&](const Param &q) { return std::strcmp(q.desc->name, d.name) == 0; });
      if (p == params.end() || d.dtype != OTC_F32 || elements(d) != p->count)
        die("--eval-data: the evaluation function's argument '" + std::string(d.name) +
            "' is not a parameter of the step");
      evalArgs[i] = p->value;
    }
    set.tokenLabels = tokenWeighted ? evalTokenLabels : -1;
    set.padWithIgnored = true;
    evalData = openArrays(opt.evalData, set, false, 0);
    if (evalData->samples() % set.microBatch && set.tokenLabels < 0)
      say("train: note: evaluation skips the last %lld samples, fewer than a micro-batch\n",
                   (long long)(evalData->samples() % set.microBatch));
    if (evalData->microBatchesPerEpoch() == 0)
      die("--eval-data holds " + std::to_string(evalData->samples()) +
          " samples, fewer than one micro-batch of " + std::to_string(set.microBatch));
    evalLoss = (float *)backend->alloc(sizeof(float));
    evalCall.arena = (char *)backend->alloc(size_t(evalFn->arena_bytes));
    evalCall.args = evalArgs.data();
    evalCall.results = reinterpret_cast<void *const *>(&evalLoss);
    evalCall.blas = backend->blas();
    evalCall.blas_workspace = backend->blasWorkspace();
  }

  /// The mean loss over every micro-batch of --eval-data (weighted by
  /// counted labels, as the training windows), in inference mode.
  double evaluate() {
    double sum = 0, weights = 0;
    // Rank r evaluates micro-batches r, r + W, ...; the sums are reduced.
    int64_t all = evalData->microBatchesPerEpoch();
    int64_t batches = all > R ? (all - R + W - 1) / W : 0;
    Prefetcher ahead([this](int64_t j, std::vector<HostBatch> &w) {
      w.resize(1);
      evalData->fill(R + W * j, w[0]);
    }, 0, batches);
    for (int64_t j = 0; j < batches; ++j) {
      const HostBatch &b = ahead.get(j)[0];
      double weight = evalTokenLabels >= 0 && tokenWeighted ? double(b.counted) : 1.0;
      if (weight == 0)
        continue;
      for (size_t i = 0; i < b.inputs.size(); ++i)
        backend->toDevice(evalArgs[size_t(evalInputArg[i])], b.inputs[i].data(), b.inputs[i].size());
      evalFn->run(&evalCall);
      float loss;
      backend->toHost(&loss, evalLoss, sizeof loss);
      sum += weight * double(loss);
      weights += weight;
    }
    if (comm) {
      double sums[2] = {sum, weights};
      comm->sumHost(sums, 2, "the evaluation's losses");
      sum = sums[0], weights = sums[1];
    }
    return weights > 0 ? sum / weights : NAN;
  }

  void logEval(int64_t s) {
    // Every rank evaluates with rank 0's running statistics, the saved
    // model's (DDP broadcasts buffers from rank 0 the same way).
    if (comm)
      for (Param &p : params)
        if (p.desc->assigned)
          comm->broadcast(p.value, size_t(p.count) * sizeof(float), 0,
                          "the buffer '" + std::string(p.desc->name) + "'");
    lastEval = evaluate();
    if (std::FILE *log = logFile.get()) {
      std::fprintf(log, "{\"step\": %lld, \"eval_loss\": %s}\n", (long long)(s + 1),
                   jsonNumber(lastEval).c_str());
      std::fflush(log);
    }
    say("step %lld/%lld  eval loss %.6f\n", (long long)(s + 1), (long long)steps,
                 lastEval);
  }

  /// Opens the data and sizes the run: micro-batches per epoch and in all.
  void loadData() {
    // Refuse an unwritable --save before hours of training, not after.
    std::string error;
    if (!lead) // rank 0 writes the model, the adapters, the log and the trace
      opt.save.clear(), opt.saveAdapter.clear(), opt.log.clear(), opt.trace.clear(),
          opt.profile.clear();
    if (!opt.save.empty() && !checkReplaceable(opt.save, error))
      die("--save: " + error);
    int64_t parameterBytes = 0;
    for (int i = 0; i < prog.num_params; ++i)
      parameterBytes += elements(prog.params[i]) * int64_t(sizeof(float));
    if (!opt.save.empty() && !checkSavable(parameterBytes, error))
      die("--save: " + error);
    if (!opt.trace.empty() && !checkReplaceable(opt.trace, error))
      die("--trace: " + error);
    if (!opt.profile.empty() && !checkReplaceable(opt.profile, error))
      die("--profile: " + error);
    if (!opt.profile.empty())
      profile = std::make_unique<Profile>(prog);
    if (!opt.saveAdapter.empty() && prog.num_lora == 0)
      die("--save-adapter: this executable has no LoRA adapters (otc compile --lora)");
    data = opt.tokens.empty() ? openArrays(opt.data, trainingInputs(prog), opt.shuffle, opt.seed)
                              : openTokens(opt, prog);
    N = prog.micro_batch, K = opt.accumSteps;
    M = data->microBatchesPerEpoch();
    if (opt.tokens.empty() && M == 0)
      die("the data holds " + std::to_string(data->samples()) +
          " samples, fewer than one micro-batch of " + std::to_string(N));
    // Micro-batches of the whole run, across ranks: a window is K of each
    // of the W ranks (opt.steps * K: the option parser bounds it).
    if (opt.steps && (!otc_mul_count(opt.steps * K, W, &total) || total > OTC_MAX_MICRO_BATCHES))
      die("--steps times --accum-steps times " + std::to_string(W) +
          " ranks exceeds 2^40 micro-batches");
    if (opt.epochs && (!otc_mul_count(opt.epochs, M, &total) || total > OTC_MAX_MICRO_BATCHES))
      die("--epochs " + std::to_string(opt.epochs) + " of " + std::to_string(M) +
          " micro-batches exceeds 2^40 micro-batches");
    if (opt.tokens.empty() && data->samples() % N)
      say("train: note: %s the last %lld samples%s, fewer than a micro-batch\n",
                   opt.shuffle ? "every epoch leaves out" : "skipping",
                   (long long)(data->samples() % N), opt.shuffle ? " of its order" : "");
    steps = (total + K * W - 1) / (K * W);
    tokenWeighted = prog.token_labels >= 0 && opt.lossAverage == LossAverage::Tokens;
  }

  /// Parameters from the embedded model, their 16-bit copies, gradient
  /// buffers and optimizer state on the device.
  void loadParams() {
    std::map<std::string, std::vector<int64_t>> shapes;
    for (int i = 0; i < prog.num_params; ++i)
      if (prog.params[i].init == OTC_INIT_MODEL) {
        const otc_tensor_desc &d = prog.params[i];
        shapes[d.name].assign(d.shape, d.shape + d.rank);
      }
    std::map<std::string, std::vector<float>> values;
    std::string error;
    uint64_t initHash = 0;
    if (!readInitialParameters(opt.init, shapes, values, initHash, error, !opt.save.empty()))
      die(error);
    char text[24];
    std::snprintf(text, sizeof text, "%016llx", (unsigned long long)initHash);
    initFingerprint = text;
    if (!opt.init.empty())
      say("train: initial parameters from %s\n", opt.init.c_str());
    for (int i = 0; i < prog.num_params; ++i)
      if (prog.params[i].init != OTC_INIT_MODEL)
        values[prog.params[i].name] = initialValues(prog.params[i], opt.seed);
    std::vector<NamePattern> noDecay(opt.noDecay.size());
    for (size_t i = 0; i < noDecay.size(); ++i)
      if (std::string why; !noDecay[i].compile(opt.noDecay[i], why))
        die("--no-decay " + opt.noDecay[i] + ": " + why);
    gradPtrs.resize(prog.num_grads);
    std::vector<int> owners = shardOwners();
    // The gradients in one block, in the order the step finishes them.
    std::vector<int64_t> gradCounts(size_t(prog.num_grads), 0);
    for (int i = 0; i < prog.num_params; ++i)
      if (prog.grad_index[i] >= 0)
        gradCounts[size_t(prog.grad_index[i])] = elements(prog.params[i]);
    GradBuckets::layout(gradCounts, prog.grad_order, gradFloats);
    gradBlock = (float *)backend->alloc(size_t(gradFloats) * sizeof(float));
    buckets = std::make_unique<GradBuckets>(gradCounts, prog.grad_order, gradBlock,
                                            size_t(opt.bucketMb * 1048576.0));
    for (int i = 0; i < prog.num_params; ++i) {
      Param p{&prog.params[i], elements(prog.params[i]), nullptr};
      // Evaluation reads every parameter in float32.
      if (!p.desc->low_only || !opt.evalData.empty())
        p.value = (float *)backend->alloc(p.count * sizeof(float));
      if (p.desc->low_dtype == OTC_F16 || p.desc->low_dtype == OTC_BF16)
        p.low = backend->alloc(p.count * sizeof(uint16_t));
      setValue(p, values[p.desc->name]);
      if (prog.grad_index[i] >= 0) {
        p.grad = gradPtrs[prog.grad_index[i]] = buckets->grad(prog.grad_index[i]);
        // State as the optimizer needs it (optimizerStateBytes, which
        // the memory report counts): none for SGD, m for momentum, m and v
        // for Adam; Adafactor's row factor (or full moment) in m and its
        // column factor in v.
        // With --shard-optimizer, only the owner holds and updates it.
        StateLayout st = stateLayout(*p.desc);
        p.mCount = st.m, p.vCount = st.v, p.quantized = st.codes, p.firstMoment = st.m1;
        p.owner = owners.empty() ? -1 : owners[size_t(i)];
        if (p.mine(R)) {
          if (st.m1)
            p.m1 = (float *)backend->alloc(size_t(p.count) * sizeof(float));
          if (st.codes) {
            p.q1 = (uint8_t *)backend->alloc(size_t(p.count));
            p.q2 = (uint8_t *)backend->alloc(size_t(p.count));
            // The codes of 0.0 (zeroed memory is code 0, the map's lowest value).
            std::vector<uint8_t> zero(size_t(p.count), nearestCode(kDynamicMapSigned, 0.0f));
            backend->toDevice(p.q1, zero.data(), zero.size());
            zero.assign(zero.size(), nearestCode(kDynamicMapUnsigned, 0.0f));
            backend->toDevice(p.q2, zero.data(), zero.size());
          }
          if (p.mCount)
            p.m = (float *)backend->alloc(size_t(p.mCount) * sizeof(float));
          if (p.vCount)
            p.v = (float *)backend->alloc(size_t(p.vCount) * sizeof(float));
        }
        for (const NamePattern &r : noDecay)
          p.decays = p.decays && !r.matches(p.desc->name);
      }
      // A skipped step restores what the step assigned (only a loss scaler
      // skips steps; without one the run stops instead).
      if (p.desc->assigned && scaler.enabled())
        p.saved = (float *)backend->alloc(p.count * sizeof(float));
      paramPtrs.push_back(p.value);
      lowPtrs.push_back(p.low);
      params.push_back(p);
    }
    for (const Param &p : params)
      if (p.grad)
        gradSpans.push_back({p.grad, p.count});
    if (!opt.noDecay.empty()) {
      int64_t kept = 0;
      for (const Param &p : params)
        kept += p.grad && !p.decays;
      say("train: no weight decay for %lld of %zu trained parameters\n",
                   (long long)kept, gradSpans.size());
    }
  }

  /// A trained parameter's optimizer state (optimizerStateBytes, which the
  /// memory report counts): none for SGD, m for momentum, m and v for Adam;
  /// Adafactor's row factor (or full moment) in m, its column factor in v
  /// and with --beta1 a first moment; 8-bit AdamW's codes and, in m and v,
  /// their per-block scales.
  struct StateLayout {
    int64_t m = 0, v = 0;
    bool codes = false, m1 = false;
    int64_t bytes(int64_t count) const {
      return (m + v + (m1 ? count : 0)) * int64_t(sizeof(float)) + (codes ? 2 * count : 0);
    }
  };
  StateLayout stateLayout(const otc_tensor_desc &d) const {
    StateLayout st;
    int64_t n = elements(d);
    if (kind == OTC_ADAFACTOR) {
      AdafactorShape sh = AdafactorShape::of(d.shape, d.rank);
      st.m = sh.factored ? sh.lead * sh.rows : sh.n;
      st.v = sh.factored ? sh.lead * sh.cols : 0;
      st.m1 = opt.firstMoment;
    } else if (kind == OTC_ADAMW8BIT && n >= prog.min_8bit_size) {
      st.codes = true;
      st.m = st.v = quantBlocks(n);
    } else {
      st.m = kind != OTC_SGD ? n : 0;
      st.v = kind == OTC_ADAM || kind == OTC_ADAMW || kind == OTC_ADAMW8BIT ? n : 0;
    }
    return st;
  }

  /// --shard-optimizer (ZeRO-1): the rank that keeps and updates each
  /// trained parameter's state, whole parameters dealt largest first to the
  /// least-loaded rank (the same on every rank); empty when not sharding.
  std::vector<int> shardOwners() {
    if (!opt.shardOptimizer || !comm)
      return {};
    std::vector<int> owner(size_t(prog.num_params), -1), order;
    for (int i = 0; i < prog.num_params; ++i)
      if (prog.grad_index[i] >= 0)
        order.push_back(i);
    auto weight = [&](int i) { return elements(prog.params[i]); };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return weight(a) > weight(b); });
    std::vector<int64_t> load(size_t(W), 0);
    stateOnRank.assign(size_t(W), 0);
    for (int i : order) {
      int r = int(std::min_element(load.begin(), load.end()) - load.begin());
      owner[size_t(i)] = r;
      load[size_t(r)] += weight(i);
      stateOnRank[size_t(r)] += stateLayout(prog.params[i]).bytes(weight(i));
    }
    return owner;
  }

  /// Every rank starts from rank 0's parameters and 16-bit copies.
  void shareParams() {
    if (!comm)
      return;
    for (Param &p : params) {
      std::string what = "the parameter '" + std::string(p.desc->name) + "'";
      if (p.value)
        comm->broadcast(p.value, size_t(p.count) * sizeof(float), 0, what);
      if (p.low)
        comm->broadcast(p.low, size_t(p.count) * sizeof(uint16_t), 0, what);
    }
  }

  /// Sets a parameter's value and its 16-bit copy from host values.
  void setValue(Param &p, const std::vector<float> &v) {
    if (p.value)
      backend->toDevice(p.value, v.data(), p.count * sizeof(float));
    else
      p.host = v;
    if (p.low) {
      std::vector<uint16_t> bits = lowCopy(v, p.desc->low_dtype);
      backend->toDevice(p.low, bits.data(), bits.size() * sizeof(uint16_t));
    }
  }

  /// The step's arguments: staged inputs, the painted arena, the loss.
  void prepareStep() {
    inputSets.resize(size_t(backend->inputSlots()));
    for (std::vector<void *> &set : inputSets)
      for (int i = 0; i < prog.num_inputs; ++i)
        set.push_back(backend->alloc(size_t(elements(prog.inputs[i])) *
                                     storageBytes(prog.inputs[i].dtype)));
    args.arena = (char *)backend->alloc(prog.arena_bytes);
    backend->fill(args.arena, kPaint, prog.arena_bytes);
    args.inputs = inputSets[0].data();
    args.params = paramPtrs.data();
    args.low_params = lowPtrs.data();
    args.grads = gradPtrs.data();
    args.loss = (float *)backend->alloc(sizeof(float));
    args.blas = backend->blas();
    args.blas_workspace = backend->blasWorkspace();
  }

  /// The compiled model's and parameter names' FNV-1a, hashed on first use
  /// and kept: the model may be gigabytes, and config() runs at every
  /// checkpoint.
  mutable std::string modelHash;
  const std::string &modelFingerprint() const {
    if (modelHash.empty()) {
      uint64_t h = compiledModelFingerprint();
      for (int i = 0; i < prog.num_params; ++i)
        h = fingerprint(prog.params[i].name, std::strlen(prog.params[i].name), h);
      char text[24];
      std::snprintf(text, sizeof text, "%016llx", (unsigned long long)h);
      modelHash = text;
    }
    return modelHash;
  }

  /// Everything a run must agree on to continue from a checkpoint.
  std::map<std::string, std::string> config() const {
    std::map<std::string, std::string> c;
    auto num = [](double v) {
      char t[32];
      std::snprintf(t, sizeof t, "%.17g", v);
      return std::string(t);
    };
    c["model"] = modelFingerprint();
    c["init"] = initFingerprint;
    static const char *const optimizers[] = {"sgd", "momentum", "adam", "adamw", "adafactor",
                                             "adamw8bit"};
    c["optimizer"] = prog.optimizer >= 0 && prog.optimizer < 6 ? optimizers[prog.optimizer] : "?";
    c["min-8bit-size"] = std::to_string(prog.min_8bit_size);
    c["adafactor"] = std::to_string(opt.scaleParameter) + std::to_string(opt.relativeStep) +
                     std::to_string(opt.warmupInit);
    c["micro-batch"] = std::to_string(N);
    c["precision"] = precisionName(prog.precision);
    // A window's micro-batches across ranks: the run is the same whether
    // W ranks take K each or one process K W (world size may change).
    c["accum-steps"] = std::to_string(K * W);
    c["micro-batches"] = std::to_string(total);
    c["samples"] = std::to_string(data->samples());
    c["data"] = opt.tokens.empty() ? "arrays" : "tokens";
    c["shuffle"] = opt.shuffle ? "yes" : "no";
    c["seed"] = std::to_string(opt.seed);
    c["lr"] = num(opt.lr);
    c["lr-schedule"] = std::to_string(int(opt.schedule));
    c["warmup-steps"] = std::to_string(opt.warmupSteps);
    c["min-lr"] = num(opt.minLr);
    c["clip-grad-norm"] = num(opt.clipGradNorm);
    c["weight-decay"] = num(opt.weightDecay);
    std::string nd;
    for (const std::string &r : opt.noDecay)
      nd += r + "\x1f";
    c["no-decay"] = std::to_string(fingerprint(nd.data(), nd.size()));
    c["momentum"] = num(opt.momentum);
    c["beta1"] = num(opt.beta1);
    std::string af;
    for (auto [on, name] : {std::pair<bool, const char *>{opt.firstMoment, "first-moment"},
                            {opt.scaleParameter, "scale-parameter"},
                            {opt.relativeStep, "relative-step"}, {opt.warmupInit, "warmup-init"}})
      if (on)
        af += (af.empty() ? "" : ",") + std::string(name);
    c["adafactor"] = af.empty() ? "plain" : af;
    c["beta2"] = num(opt.beta2);
    c["eps"] = num(opt.eps);
    c["loss-average"] = opt.lossAverage == LossAverage::Tokens ? "tokens" : "micro-batch";
    return c;
  }

  void checkpoint(int64_t nextStep) {
    Checkpoint c;
    c.config = config();
    c.nextStep = nextStep, c.updates = updates, c.skipped = skipped, c.firstLoss = firstLoss;
    LossScaler::State st = scaler.state();
    c.scale = st.current, c.goodSteps = st.goodSteps, c.hysteresisLeft = st.hysteresisLeft;
    // `bytes` bytes of p's state at `src` (on its owner) into the lead's
    // `out`; every rank takes part where the state is sharded.
    auto read = [&](const Param &p, const void *src, void *out, size_t bytes) {
      if (p.owner >= 0 && comm)
        comm->toRoot(src, out, bytes, p.owner, "the optimizer state of '" + std::string(p.desc->name) + "'");
      else if (lead)
        backend->toHost(out, src, bytes);
    };
    auto floats = [&](const Param &p, const float *src, int64_t n) {
      std::vector<float> values(lead ? size_t(n) : 0);
      read(p, src, values.data(), size_t(n) * sizeof(float));
      return values;
    };
    for (const Param &p : params) {
      std::string name = p.desc->name;
      // A frozen parameter is the model's, which the config's fingerprint
      // pins: LoRA's checkpoints hold the adapters, not the base.
      if (!p.frozen() && lead) {
        std::vector<float> &v = c.tensors["value/" + name];
        v.resize(size_t(p.count));
        backend->toHost(v.data(), p.value, v.size() * sizeof(float));
      }
      if (p.mCount)
        c.tensors["m/" + name] = floats(p, p.m, p.mCount);
      if (p.vCount)
        c.tensors["v/" + name] = floats(p, p.v, p.vCount);
      if (p.firstMoment)
        c.tensors["m1/" + name] = floats(p, p.m1, p.count);
      // 8-bit codes travel packed four to a float, bit for bit.
      if (p.quantized)
        for (auto [tag, q] : {std::pair<const char *, uint8_t *>{"q1/", p.q1}, {"q2/", p.q2}}) {
          std::vector<float> packed(lead ? size_t(p.count + 3) / 4 : 0, 0.0f);
          read(p, q, packed.data(), size_t(p.count));
          c.tensors[tag + name] = std::move(packed);
        }
    }
    if (lead)
      saveCheckpoint(opt.checkpoint, c);
  }

  /// --resume: the state of the checkpointed run, refused when it is not
  /// this run's.
  void resume() {
    Checkpoint c = loadCheckpoint(opt.resume);
    std::map<std::string, std::string> want = config();
    // Another model first: its parameters differ too.
    std::vector<std::pair<std::string, std::string>> order(want.begin(), want.end());
    std::stable_partition(order.begin(), order.end(), [](const auto &kv) { return kv.first == "model"; });
    for (const auto &[key, value] : order) {
      auto it = c.config.find(key);
      std::string had = it != c.config.end() ? it->second : "(none)";
      if (had == value)
        continue;
      bool compiled = key == "optimizer" || key == "micro-batch" || key == "precision";
      std::string what = key == "model" ? "a different model"
                             : compiled ? "a compile with --" + key + " " + had + " (this one has " + value + ")"
                             : key == "micro-batches" ? "a run of another length (--steps/--epochs)"
                             : key == "samples" ? "data of another size"
                             : key == "accum-steps" ? "--accum-steps times ranks " + had + " (this run has " + value + ")"
                             : key == "init" ? "a run that started from other parameters (FNV-1a " + had + "; this run's, from " + (opt.init.empty() ? "the compiled model" : "--init") + ", are " + value + ")"
                                                : "--" + key + " " + had + " (this run has " + value + ")";
      die("--resume: '" + checkpointFile(opt.resume) + "' is from " + what);
    }
    for (Param &p : params) {
      auto take = [&](const char *kind, float *dst, bool value, int64_t count) {
        auto it = c.tensors.find(std::string(kind) + "/" + p.desc->name);
        if (it == c.tensors.end() || int64_t(it->second.size()) != count)
          die("--resume: '" + checkpointFile(opt.resume) + "' lacks " + kind + " of '" +
              p.desc->name + "' in its size");
        if (value)
          setValue(p, it->second);
        else
          backend->toDevice(dst, it->second.data(), it->second.size() * sizeof(float));
      };
      if (!p.frozen())
        take("value", p.value, true, p.count);
      if (p.m)
        take("m", p.m, false, p.mCount);
      if (p.v)
        take("v", p.v, false, p.vCount);
      if (p.m1)
        take("m1", p.m1, false, p.count);
      for (auto [tag, q] : {std::pair<const char *, uint8_t *>{"q1", p.q1}, {"q2", p.q2}})
        if (q) {
          auto it = c.tensors.find(std::string(tag) + "/" + p.desc->name);
          if (it == c.tensors.end() || it->second.size() != size_t(p.count + 3) / 4)
            die("--resume: '" + checkpointFile(opt.resume) + "' lacks " + tag + " of '" +
                p.desc->name + "' in its size");
          backend->toDevice(q, it->second.data(), size_t(p.count));
        }
    }
    startStep = c.nextStep, updates = c.updates, skipped = c.skipped, firstLoss = c.firstLoss;
    scaler.restore({c.scale, c.goodSteps, c.hysteresisLeft});
    if (startStep > steps)
      die("--resume: the checkpoint is at step " + std::to_string(startStep) + " of " +
          std::to_string(steps));
    say("train: resumed from '%s' at step %lld\n",
                 checkpointFile(opt.resume).c_str(), (long long)startStep);
  }

  /// The run's index of this rank's micro-batch `j` of window `s`: the
  /// window holds micro-batches s K W ... s K W + K W - 1, and rank r takes
  /// r, r + W, ... of them, so that W ranks read what one process with K W
  /// micro-batches per step would (dropout's counter included).
  int64_t globalIndex(int64_t s, int64_t j) const { return s * K * W + R + W * j; }

  /// The micro-batches of window `s` that this rank reads.
  void fillWindow(int64_t s, std::vector<HostBatch> &out) {
    int64_t k = 0;
    while (k < K && globalIndex(s, k) < total)
      ++k;
    out.resize(size_t(k));
    for (int64_t j = 0; j < k; ++j)
      data->fill(globalIndex(s, j), out[size_t(j)]);
  }

  /// Runs window `s`'s micro-batches, each weighted by its share of the
  /// window's counted labels (or 1/k); returns the window's loss and sets
  /// the gradients' sum of squares. `empty`: no micro-batch has a counted
  /// label, so nothing ran.
  double runWindow(int64_t s, const std::vector<HostBatch> &window, bool &empty,
                   double &sumSquares) {
    int64_t k = int64_t(window.size());
    int64_t kAll = std::min(K * W, total - s * K * W); // across ranks
    double counted = 0;
    for (const HostBatch &b : window)
      counted += double(b.counted);
    std::string where = "step " + std::to_string(s + 1);
    if (comm && tokenWeighted)
      comm->sumHost(&counted, 1, where + "'s counted labels");
    empty = tokenWeighted && counted == 0;
    if (empty)
      return NAN;
    // On the last micro-batch this rank runs, the step reports each
    // gradient as it finishes it, and its bucket's all-reduce starts.
    int64_t last = -1;
    for (int64_t j = 0; j < k; ++j)
      if (!tokenWeighted || window[size_t(j)].counted > 0)
        last = j;
    if (comm)
      buckets->begin(comm.get(), trace.enabled() ? &trace : nullptr, where);
    bool first = true;
    for (int64_t j = 0; j < k; ++j) {
      const HostBatch &b = window[size_t(j)];
      // Such a micro-batch has no term in the window's mean.
      if (tokenWeighted && b.counted == 0)
        continue;
      // The inputs go to the next set of buffers, copied while the
      // micro-batch before computes.
      int slot = int(staged++ % int64_t(inputSets.size()));
      std::vector<const void *> src;
      std::vector<size_t> bytes;
      for (const auto &in : b.inputs)
        src.push_back(in.data()), bytes.push_back(in.size());
      backend->stageInputs(slot, inputSets[size_t(slot)].data(), src.data(), bytes.data(),
                           src.size());
      args.inputs = inputSets[size_t(slot)].data();
      double share = tokenWeighted ? double(b.counted) / counted : 1.0 / double(kAll);
      args.seed = float(double(scaler.scale()) * share);
      args.first = first;
      args.rng_seed = opt.seed;
      args.rng_offset = uint64_t(globalIndex(s, j)); // the micro-batch's index in the run
      args.grad_ready = comm && j == last ? &GradBuckets::onReady : nullptr;
      args.grad_ready_ctx = buckets.get();
      double began = trace.now();
      clock = {backend.get(), args.stream};
      args.mark = profile ? &onMark : nullptr;
      args.mark_ctx = &clock;
      backend->runStep(prog, args);
      if (profile)
        profile->addMicroBatch(backend->markedSeconds(prog.num_steps + 1));
      args.mark = nullptr;
      trace.span("micro-batch " + std::to_string(globalIndex(s, j)), Trace::Compute, began);
      first = false;
    }
    args.grad_ready = nullptr;
    if (comm) {
      // A rank that ran nothing (a short last window, or no counted labels)
      // adds zeros. The sum of the ranks' gradients is the window's: each
      // micro-batch's seed already holds its share of the whole window.
      if (first)
        backend->fill(gradBlock, 0, size_t(gradFloats) * sizeof(float));
      buckets->finish();
    }
    // The step summed seed x loss on the device; that and the gradients'
    // sum of squares (for skipping and clipping) are the step's one read.
    float scaled = 0;
    backend->readLossAndSumOfSquares(args.loss, gradSpans, scaled, sumSquares);
    if (first)
      scaled = 0;
    if (!comm)
      return double(scaled) / double(scaler.scale());
    double loss = scaled;
    comm->sumHost(&loss, 1, where + "'s loss");
    // Rounded as the one process's float32 accumulator rounds it.
    return double(float(loss)) / double(scaler.scale());
  }

  /// Whether window `s` overflowed, from the gradients' sum of squares.
  /// Without loss scaling, training stops at the first non-finite value and
  /// nothing is saved. With it, such a step is skipped whole, as GradScaler
  /// skips optimizer.step(): weights, moments and assigned buffers
  /// untouched.
  bool overflowed(int64_t s, double loss, double sumSquares) {
    std::string where = "step " + std::to_string(s + 1);
    // As GradScaler, only the gradients decide: a non-finite loss with finite
    // gradients (a term no parameter reaches) still steps.
    bool badGrad = !std::isfinite(sumSquares);
    bool overflow = scaler.enabled() ? badGrad : !std::isfinite(loss) || badGrad;
    if (overflow && !scaler.enabled()) {
      if (!std::isfinite(loss))
        die(where + ": the loss is " + (std::isnan(loss) ? "nan" : loss < 0 ? "-inf" : "inf") +
            "; stopping without saving (is --lr too large?)");
      const Param *bad = firstNonFinite(*backend, params, true);
      die(where + ": the gradient of '" + (bad ? bad->desc->name : std::string("?")) +
          "' is not finite; stopping without saving");
    }
    return overflow;
  }

  /// The --log line and, every twentieth of the run, the progress line.
  void report(int64_t s, double loss, double lr, double norm, double rate, float scaleUsed,
              bool overflow) {
    if (std::FILE *log = logFile.get()) { // JSON has no inf or nan: a skipped step's loss is null
      std::fprintf(log, "{\"step\": %lld, \"loss\": %s, \"lr\": %.17g, \"grad_norm\": %s, \"samples_per_second\": %.6g",
                   (long long)(s + 1), jsonNumber(loss).c_str(), lr, jsonNumber(norm).c_str(), rate);
      if (scaler.enabled())
        std::fprintf(log, ", \"loss_scale\": %.9g, \"skipped\": %s", double(scaleUsed),
                     overflow ? "true" : "false");
      std::fputs("}\n", log);
      std::fflush(log);
    }
    int64_t every = std::max<int64_t>(1, steps / 20);
    if ((s + 1) % every == 0 || s + 1 == steps) {
      say("step %lld/%lld  loss %.6f  lr %.3g  norm %.3g  %.0f samples/s",
                   (long long)(s + 1), (long long)steps, loss, lr, norm, rate);
      if (scaler.enabled())
        say("  scale %g  skipped %lld", double(scaler.scale()), (long long)skipped);
      say("\n");
    }
  }

  /// The log, opened for this run; a resumed run keeps the lines of the
  /// steps before its checkpoint and drops those after.
  void openLogFile() {
    if (opt.log.empty())
      return;
    std::vector<std::string> kept;
    if (startStep > 0) {
      std::ifstream in(opt.log);
      for (std::string line; std::getline(in, line);) {
        long long step = 0;
        if (std::sscanf(line.c_str(), "{\"step\": %lld", &step) == 1 && step <= startStep)
          kept.push_back(line);
      }
    }
    if (!(logFile.reset(openLog(opt.log)), logFile))
      die("cannot write the log '" + opt.log + "': " + std::strerror(errno));
    for (const std::string &line : kept)
      std::fprintf(logFile.get(), "%s\n", line.c_str());
  }

  void train() {
    openLogFile();
    if (!opt.trace.empty() && lead)
      trace.enable();
    say("train: %s, micro-batch %lld, %lld micro-batches per step, %lld steps on %s, %s, recompute %s%s\n",
                 data->describe().c_str(), (long long)N, (long long)K, (long long)steps,
                 backend->name(), precisionName(prog.precision), recomputeName(prog.recompute),
                 tokenWeighted ? ", loss averaged over the window's counted labels" : "");
    if (comm)
      say("train: data parallel over %d ranks (%s): %lld micro-batches of %lld per step in all%s\n",
          W, comm->name(), (long long)(K * W), (long long)N,
          opt.shardOptimizer ? ", optimizer state sharded (ZeRO-1)" : "");
    // The next windows are read on a thread of their own meanwhile.
    Prefetcher ahead([this](int64_t s, std::vector<HostBatch> &w) { fillWindow(s, w); },
                     startStep, steps);
    auto start = std::chrono::steady_clock::now();
    for (int64_t s = startStep; s < steps; ++s) {
      auto stepStart = std::chrono::steady_clock::now();
      const std::vector<HostBatch> &window = ahead.get(s);
      for (Param &p : params)
        if (p.saved)
          backend->copy(p.saved, p.value, size_t(p.count) * sizeof(float));
      bool empty = false;
      double sumSquares = 0;
      double loss = runWindow(s, window, empty, sumSquares);
      double lr = learningRate(opt, updates, steps), norm = NAN;
      float scaleUsed = scaler.scale();
      bool overflow = false;
      if (empty) {
        say("train: note: step %lld has no counted labels; no step taken\n",
                     (long long)(s + 1));
      } else {
        if (comm) { // every rank takes the same decision: skip, clip, step
          if (!std::isfinite(sumSquares))
            sumSquares = INFINITY; // MPI's max may drop a NaN
          comm->maxHost(&sumSquares, 1, "step " + std::to_string(s + 1) + "'s gradient norm");
        }
        overflow = overflowed(s, loss, sumSquares);
        // clip_grad_norm_'s norm, of the unscaled gradients.
        norm = std::sqrt(sumSquares) / double(scaleUsed);
        if (overflow) {
          ++skipped;
          for (Param &p : params)
            if (p.saved)
              backend->copy(p.value, p.saved, size_t(p.count) * sizeof(float));
        } else {
          double began = trace.now();
          if (profile)
            backend->markTime(0);
          step(lr, norm);
          if (profile) {
            backend->markTime(1);
            profile->addUpdate(backend->markedSeconds(2)[1], updateBytes());
          }
          trace.span("update " + std::to_string(s + 1), Trace::Compute, began);
        }
        scaler.update(overflow);
      }
      if (s == startStep && startStep == 0)
        firstLoss = loss;
      lastLoss = loss;
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - stepStart).count();
      double samples = double(std::min(K * W, total - s * K * W) * N); // across ranks
      report(s, loss, lr, norm, secs > 0 ? samples / secs : 0, scaleUsed, overflow);
      if (evalFn && ((opt.evalEvery > 0 && (s + 1) % opt.evalEvery == 0) || s + 1 == steps))
        logEval(s);
      if (!opt.checkpoint.empty() &&
          ((opt.checkpointEvery > 0 && (s + 1) % opt.checkpointEvery == 0) || s + 1 == steps))
        checkpoint(s + 1);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    say("train: done in %.2f s, loss %.6f -> %.6f", secs, firstLoss, lastLoss);
    if (scaler.enabled())
      say(", %lld of %lld steps skipped, final scale %g", (long long)skipped,
                   (long long)steps, double(scaler.scale()));
    if (evalFn)
      say(", eval loss %.6f", lastEval);
    say("\n");
    logFile.reset();
  }

  /// One optimizer update of every trained parameter at rate `lr`, the
  /// gradients unscaled and clipped to --clip-grad-norm as clip_grad_norm_
  /// does (in float32: coef = max_norm * 1/(norm + 1e-6), applied when < 1).
  void step(double lr, double norm) {
    OptimizerStep scalars = stepScalars(kind, opt, ++updates, lr, opt.weightDecay);
    OptimizerStep plain = stepScalars(kind, opt, updates, lr, 0.0);
    float gradScale = scaler.invScale();
    if (opt.clipGradNorm > 0) {
      float coef = float(opt.clipGradNorm) * (1.0f / (float(norm) + 1e-6f));
      if (coef < 1.0f)
        gradScale *= coef;
    }
    scalars.gradScale = plain.gradScale = gradScale;
    if (kind == OTC_ADAFACTOR)
      adafactor(lr, gradScale);
    else
      update(scalars, plain);
    gatherShards();
  }

  /// --shard-optimizer: each updated parameter (and its 16-bit copy) goes
  /// from its owner to every rank, the all-gather of ZeRO-1.
  void gatherShards() {
    if (!opt.shardOptimizer || !comm)
      return;
    for (Param &p : params) {
      if (!p.grad)
        continue;
      std::string what = "the updated parameter '" + std::string(p.desc->name) + "'";
      if (p.value)
        comm->broadcast(p.value, size_t(p.count) * sizeof(float), p.owner, what);
      if (p.low)
        comm->broadcast(p.low, size_t(p.count) * sizeof(uint16_t), p.owner, what);
    }
  }

  static void onMark(void *ctx, int k) {
    auto *c = static_cast<MarkClock *>(ctx);
    c->backend->markTime(k, c->stream);
  }

  /// The bytes one optimizer update must read and write at least: per
  /// element of a trained tensor this rank updates, the value, gradient and
  /// state read, the value and state written, and the 16-bit copy; 0 for
  /// Adafactor, whose factored state has no per-element count.
  int64_t updateBytes() const {
    if (kind == OTC_ADAFACTOR)
      return 0;
    int64_t floatState = kind == OTC_SGD ? 12 : kind == OTC_MOMENTUM ? 20 : 28;
    int64_t bytes = 0;
    for (const Param &p : params)
      if (p.grad && p.mine(R)) // 8-bit moments: one byte each, read and written
        bytes += p.count * ((p.q1 ? 16 : floatState) + (p.low ? 2 : 0));
    return bytes;
  }

  void update(const OptimizerStep &scalars, const OptimizerStep &plain) {
    std::vector<Backend::UpdateSpan> spans;
    for (Param &p : params) {
      if (!p.grad || !p.mine(R))
        continue;
      const OptimizerStep &s = p.decays ? scalars : plain;
      if (p.q1)
        backend->adamw8bit(s, p.value, p.grad, p.q1, p.q2, p.m, p.v, p.low, p.desc->low_dtype,
                           p.count);
      else
        spans.push_back({p.value, p.grad, p.m, p.v, p.low, p.desc->low_dtype, p.decays ? 1 : 0,
                         p.count});
    }
    backend->updateMany(scalars, plain, spans);
  }

  /// Hugging Face's Adafactor step `updates` (its lr, scale_parameter,
  /// relative_step and warmup_init; decay_rate -0.8, clip_threshold 1,
  /// eps (1e-30, 1e-3); a first moment when given --beta1), the scalars in
  /// double.
  void adafactor(double lr, float gradScale) {
    double t = double(updates);
    AdafactorStep s{};
    s.relStep = float(lr);
    if (opt.relativeStep) {
      double minStep = opt.warmupInit ? 1e-6 * t : 1e-2;
      s.relStep = float(std::min(minStep, 1.0 / std::sqrt(t)));
    }
    s.scaleParameter = opt.scaleParameter;
    s.eps1 = 1e-30f, s.eps2 = 1e-3f;
    double beta2t = 1.0 - std::pow(t, -0.8);
    s.beta2t = float(beta2t), s.oneMinusBeta2t = float(1.0 - beta2t);
    s.clipThreshold = 1.0f;
    s.gradScale = gradScale;
    s.beta1 = float(opt.beta1);
    for (Param &p : params) {
      if (!p.grad || !p.mine(R))
        continue;
      s.weightDecay = p.decays ? float(opt.weightDecay) : 0.0f;
      backend->adafactor(s, AdafactorShape::of(p.desc->shape, p.desc->rank), p.value, p.grad, p.m,
                         p.v, p.m1, p.low, p.desc->low_dtype);
    }
  }

  /// --save-adapter: the adapters as PEFT saves them, adapter_model.safetensors
  /// (tensors base_model.model.MODULE.lora_{A,B}.weight, float32) and
  /// adapter_config.json, each through replaceFile.
  void saveAdapter() {
    if (mkdir(opt.saveAdapter.c_str(), 0777) != 0 && errno != EEXIST)
      die("--save-adapter: cannot create '" + opt.saveAdapter + "': " + std::strerror(errno));
    std::string header = "{", modules;
    std::vector<std::pair<const Param *, size_t>> order;
    size_t offset = 0;
    double alpha = 0;
    bool fanInFanOut = false;
    for (int k = 0; k < prog.num_lora; ++k) {
      const otc_lora &l = prog.lora[k];
      std::string base = prog.params[l.base].name;
      std::string module = base.size() > 7 && base.compare(base.size() - 7, 7, ".weight") == 0
                               ? base.substr(0, base.size() - 7)
                               : base;
      modules += std::string(k ? ", " : "") + "\"" + module + "\"";
      alpha = l.scale * double(prog.params[l.a].shape[0]);
      fanInFanOut = !l.transposed;
      for (auto [which, index] : {std::pair<const char *, int>{"A", l.a}, {"B", l.b}}) {
        const Param &p = params[size_t(index)];
        size_t bytes = size_t(p.count) * sizeof(float);
        header += std::string(order.empty() ? "" : ",") + "\"base_model.model." + module + ".lora_" +
                  which + ".weight\":{\"dtype\":\"F32\",\"shape\":[" +
                  std::to_string(p.desc->shape[0]) + "," + std::to_string(p.desc->shape[1]) +
                  "],\"data_offsets\":[" + std::to_string(offset) + "," +
                  std::to_string(offset + bytes) + "]}";
        order.push_back({&p, bytes});
        offset += bytes;
      }
    }
    header += "}";
    header.resize((header.size() + 7) / 8 * 8, ' '); // safetensors pads its header to 8 bytes
    std::string error;
    bool ok = replaceFile(opt.saveAdapter + "/adapter_model.safetensors", 0666, [&](int fd) {
      uint64_t n = header.size();
      unsigned char len[8];
      for (int i = 0; i < 8; ++i)
        len[i] = (unsigned char)(n >> (8 * i));
      if (!writeAll(fd, reinterpret_cast<const char *>(len), 8) || !writeAll(fd, header.data(), n))
        return false;
      for (auto [p, bytes] : order) {
        std::vector<float> v(size_t(p->count));
        backend->toHost(v.data(), p->value, bytes);
        if (!writeAll(fd, reinterpret_cast<const char *>(v.data()), bytes))
          return false;
      }
      return true;
    }, error);
    char config[1024];
    std::snprintf(config, sizeof config,
                  "{\n  \"peft_type\": \"LORA\",\n  \"r\": %lld,\n  \"lora_alpha\": %.17g,\n"
                  "  \"target_modules\": [%s],\n  \"lora_dropout\": 0.0,\n  \"bias\": \"none\",\n"
                  "  \"fan_in_fan_out\": %s,\n  \"init_lora_weights\": true\n}\n",
                  (long long)prog.params[prog.lora[0].a].shape[0], alpha, modules.substr(0, 700).c_str(),
                  fanInFanOut ? "true" : "false");
    std::string text = config;
    ok = ok && replaceFile(opt.saveAdapter + "/adapter_config.json", 0666, [&](int fd) {
      return writeAll(fd, text.data(), text.size());
    }, error);
    if (!ok)
      die("--save-adapter: " + error);
    say("train: saved the adapters in %s\n", opt.saveAdapter.c_str());
  }

  /// Saves the trained model (never a non-finite one), then measures the
  /// arena's high-water mark.
  void finish() {
    if (const Param *p = firstNonFinite(*backend, params, /*grads=*/false))
      die("after step " + std::to_string(steps) + " parameter '" + p->desc->name +
          "' is not finite; stopping without saving (is --lr too large?)");
    if (!opt.saveAdapter.empty())
      saveAdapter();
    if (trace.enabled()) {
      std::string error;
      if (!trace.write(opt.trace, error))
        die("--trace: " + error);
      say("train: wrote the trace %s\n", opt.trace.c_str());
    }
    if (profile) {
      std::string error;
      double copy = backend->copyBytesPerSecond();
      profile->print(stderr, copy);
      if (!profile->write(opt.profile, backend->deviceName(), copy, error))
        die("--profile: " + error);
      say("train: wrote the profile %s\n", opt.profile.c_str());
    }
    if (!opt.save.empty()) {
      std::map<std::string, std::vector<float>> trained;
      for (Param &p : params) {
        std::vector<float> &v = trained[p.desc->name];
        v.resize(p.count);
        if (p.value)
          backend->toHost(v.data(), p.value, p.count * sizeof(float));
        else
          v = p.host;
      }
      // LoRA: the saved model is the merged one, W + scale B A, which loads
      // anywhere; the adapters themselves are not in it.
      for (int k = 0; k < prog.num_lora; ++k) {
        const otc_lora &l = prog.lora[k];
        const otc_tensor_desc &a = prog.params[l.a], &b = prog.params[l.b];
        std::vector<float> &w = trained[prog.params[l.base].name];
        const std::vector<float> &av = trained[a.name], &bv = trained[b.name];
        int64_t r = a.shape[0], in = a.shape[1], out = b.shape[0];
        for (int64_t o = 0; o < out; ++o)
          for (int64_t j = 0; j < in; ++j) {
            double d = 0;
            for (int64_t q = 0; q < r; ++q)
              d += double(bv[size_t(o * r + q)]) * double(av[size_t(q * in + j)]);
            float &target = l.transposed ? w[size_t(o * in + j)] : w[size_t(j * out + o)];
            target = float(double(target) + l.scale * d);
          }
      }
      for (int k = 0; k < prog.num_lora; ++k) {
        trained.erase(prog.params[prog.lora[k].a].name);
        trained.erase(prog.params[prog.lora[k].b].name);
      }
      std::string error;
      if (!writeTrainedModel(opt.save, trained, error))
        die(error);
      say("train: saved %s\n", opt.save.c_str());
    }
    // After saving, so nothing here can cost the trained weights. From the
    // top down, a chunk at a time: no second arena-sized buffer.
    size_t high = prog.arena_bytes;
    std::vector<unsigned char> chunk(std::min<size_t>(high, size_t(1) << 20));
    for (bool found = false; high > 0 && !found;) {
      size_t n = std::min(high, chunk.size());
      backend->toHost(chunk.data(), args.arena + (high - n), n);
      size_t i = n;
      while (i > 0 && chunk[i - 1] == kPaint)
        --i;
      found = i > 0;
      high -= n - i;
    }
    say("train: arena high-water mark %zu bytes (planned %lld)\n", high,
                 (long long)prog.arena_bytes);
    if (!stateOnRank.empty()) {
      std::string shares;
      int64_t all = 0;
      for (int r = 0; r < W; ++r) {
        shares += (r ? ", " : "") + std::to_string(stateOnRank[size_t(r)]);
        all += stateOnRank[size_t(r)];
      }
      say("train: optimizer state per rank (ZeRO-1): %s bytes, of %lld that every rank would "
          "hold unsharded\n", shares.c_str(), (long long)all);
    }
    std::string note = backend->deviceMemoryNote();
    say("train: memory: %zu bytes allocated%s%s\n", backend->allocatedBytes(),
                 note.empty() ? "" : "; ", note.c_str());
  }
};

int run(int argc, char **argv) {
  Trainer t;
  std::string error;
  switch (parseTrainOptions(argc, argv, t.kind, t.opt, error, t.prog.default_accum_steps)) {
  case ParseResult::Help:
    std::fputs(error.c_str(), stdout);
    return 0;
  case ParseResult::Error:
    std::fprintf(stderr, "train: error: %s (see %s --help)\n", error.c_str(), argv[0]);
    return 2;
  case ParseResult::Ok:
    break;
  }
  try {
    if (t.opt.threads > 0 && t.prog.set_threads)
      t.prog.set_threads(int(t.opt.threads));
    t.backend = makeBackend();
    t.backend->setUpdateKernel(t.prog.update);
    if (t.opt.cudaGraphs && !t.opt.profile.empty())
      std::fprintf(stderr, "train: note: --profile times each step, so no CUDA graph runs\n");
    t.backend->useGraphs(t.opt.cudaGraphs && t.opt.profile.empty());
    t.joinRanks();
    t.loadData();
    t.loadParams();
    t.prepareStep();
    t.prepareEval();
    if (!t.opt.resume.empty())
      t.resume();
    t.shareParams();
    t.train();
    t.finish();
  } catch (const Fatal &f) {
    if (!t.comm)
      throw;
    // Named by rank, then the whole group ends: no rank waits for this one.
    std::fprintf(stderr, "train: rank %d: error: %s\n", t.R, f.message.c_str());
    t.comm->abort(f.code);
  } catch (const std::bad_alloc &) {
    if (!t.comm)
      throw;
    std::fprintf(stderr, "train: rank %d: error: out of host memory\n", t.R);
    t.comm->abort(1);
  } catch (const std::exception &e) {
    if (!t.comm)
      throw;
    std::fprintf(stderr, "train: rank %d: error: %s\n", t.R, e.what());
    t.comm->abort(1);
  }
  return 0;
}

} // namespace
} // namespace otc

int main(int argc, char **argv) {
  return otc::executableMain("train", otc::run, argc, argv, otc_get_program()->set_threads);
}
