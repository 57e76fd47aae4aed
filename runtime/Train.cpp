// The training executable's main: loads the data, loops over micro-batches,
// steps the optimizer, reports progress and saves the trained model.
#include "Backend.h"
#include "LossScaler.h"
#include "ModelFile.h"
#include "Npy.h"
#include "Options.h"
#include "ExecutableMain.h"
#include "TensorFiles.h"
#include "SafeFile.h"
#include "otc/runtime/abi.h"

#include <chrono>
#include <map>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace otc {
namespace {

[[noreturn]] void die(const std::string &message) { throw Fatal{message}; }

/// One array per graph input, all with the same number of samples.
struct Dataset {
  std::vector<NpyArray> arrays;
  std::vector<size_t> sampleBytes;
  int64_t samples = -1;
};

Dataset loadDataset(const std::string &dir, const otc_program &prog) {
  Dataset ds;
  TensorFileNames files("inputs", "read");
  for (int i = 0; i < prog.num_inputs; ++i) {
    const otc_tensor_desc &d = prog.inputs[i];
    std::string path = dir + "/" + files.claim(d.name);
    NpyArray a;
    std::string error;
    if (!readNpy(path, a, error))
      die(error + " (the data for input '" + d.name + "')");
    if (d.dtype == OTC_I64)
      widenIntegers(a, path);
    const char *want = npyDtypeFor(d.dtype);
    if (a.dtype != want)
      die("'" + path + "' has dtype " + a.dtype + ", but input '" + d.name +
          "' needs " + want +
          (d.dtype == OTC_F32 ? " (float32)" : d.dtype == OTC_BOOL ? " (bool)" : " (int64, or a narrower integer type)"));
    bool ok = (int)a.shape.size() == d.rank;
    for (int k = 1; ok && k < d.rank; ++k)
      ok = a.shape[k] == d.shape[k];
    if (!ok) {
      die("'" + path + "' has shape " + shapeText(a.shape.data(), a.shape.size()) +
          ", but input '" + d.name + "' needs samples of shape " +
          shapeText(d.shape + 1, d.rank - 1) + " along axis 0");
    }
    if (ds.samples >= 0 && a.shape[0] != ds.samples)
      die("'" + path + "' has " + std::to_string(a.shape[0]) + " samples, but '" +
          fileNameFor(prog.inputs[0].name) + "' has " + std::to_string(ds.samples));
    // With a loss scaler a non-finite sample is a skipped step, as in
    // PyTorch AMP; without one it could only stop the run later.
    checkValues(d, a, path, /*requireFinite=*/prog.loss_scale_mode == OTC_LOSS_SCALE_NONE);
    ds.samples = a.shape[0];
    ds.sampleBytes.push_back(ds.samples ? a.data.size() / ds.samples : 0);
    ds.arrays.push_back(std::move(a));
  }
  return ds;
}

OptimizerStep stepScalars(otc_optimizer kind, const TrainOptions &o, int64_t t) {
  OptimizerStep s{};
  s.kind = kind;
  s.lr = float(o.lr);
  s.weightDecay = float(o.weightDecay);
  s.momentum = float(o.momentum);
  s.beta1 = float(o.beta1);
  s.oneMinusBeta1 = float(1.0 - o.beta1);
  s.beta2 = float(o.beta2);
  s.oneMinusBeta2 = float(1.0 - o.beta2);
  s.eps = float(o.eps);
  s.stepSize = float(o.lr / (1.0 - std::pow(o.beta1, double(t))));
  s.biasCorr2Sqrt = float(std::sqrt(1.0 - std::pow(o.beta2, double(t))));
  s.decayFactor = float(1.0 - o.lr * o.weightDecay);
  s.firstStep = t == 1;
  s.gradScale = 1.0f;
  return s;
}

struct Param {
  const otc_tensor_desc *desc;
  int64_t count;
  float *value, *grad = nullptr, *m = nullptr, *v = nullptr;
  void *low = nullptr; // the 16-bit copy the step reads, or null
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
  Dataset ds;
  int64_t N = 0, K = 0, M = 0, total = 0, steps = 0;
  std::unique_ptr<Backend> backend;
  std::vector<Param> params;
  std::vector<float *> paramPtrs, gradPtrs;
  std::vector<void *> lowPtrs, inputPtrs;
  std::vector<Backend::Span> gradSpans;
  otc_step_args args{};
  // Painted, so that the bytes the steps wrote can be told from the rest at
  // the end: the arena's measured high-water mark, against the plan's.
  static constexpr unsigned char kPaint = 0xA5;
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> logFile{nullptr, std::fclose};
  int64_t updates = 0, skipped = 0; // Adam's step count advances on updates only
  double firstLoss = 0, lastLoss = 0;

  /// Reads the data and sizes the run: micro-batches per epoch and in all.
  void loadData() {
    // Refuse an unwritable --save before hours of training, not after.
    std::string error;
    if (!opt.save.empty() && !checkReplaceable(opt.save, error))
      die("--save: " + error);
    ds = loadDataset(opt.data, prog);
    N = prog.micro_batch, K = opt.accumSteps;
    M = ds.samples / N;
    if (M == 0)
      die("the data holds " + std::to_string(ds.samples) +
          " samples, fewer than one micro-batch of " + std::to_string(N));
    total = opt.steps * K; // the option parser bounds this product
    if (opt.epochs && (!otc_mul_count(opt.epochs, M, &total) || total > OTC_MAX_MICRO_BATCHES))
      die("--epochs " + std::to_string(opt.epochs) + " of " + std::to_string(M) +
          " micro-batches exceeds 2^40 micro-batches");
    if (ds.samples % N)
      std::fprintf(stderr, "train: note: skipping the last %lld samples, fewer than a micro-batch\n",
                   (long long)(ds.samples % N));
    steps = (total + K - 1) / K;
  }

  /// Parameters from the embedded model, their 16-bit copies, gradient
  /// buffers and optimizer state on the device.
  void loadParams() {
    std::map<std::string, int64_t> counts;
    for (int i = 0; i < prog.num_params; ++i)
      counts[prog.params[i].name] = elements(prog.params[i]);
    std::map<std::string, std::vector<float>> values;
    std::string error;
    if (!readInitializers(counts, values, error))
      die(error);
    gradPtrs.resize(prog.num_grads);
    for (int i = 0; i < prog.num_params; ++i) {
      Param p{&prog.params[i], elements(prog.params[i]), nullptr};
      p.value = (float *)backend->alloc(p.count * sizeof(float));
      backend->toDevice(p.value, values[p.desc->name].data(), p.count * sizeof(float));
      if (p.desc->low_dtype == OTC_F16 || p.desc->low_dtype == OTC_BF16) {
        std::vector<uint16_t> bits = lowCopy(values[p.desc->name], p.desc->low_dtype);
        p.low = backend->alloc(bits.size() * sizeof(uint16_t));
        backend->toDevice(p.low, bits.data(), bits.size() * sizeof(uint16_t));
      }
      if (prog.grad_index[i] >= 0) {
        p.grad = gradPtrs[prog.grad_index[i]] = (float *)backend->alloc(p.count * sizeof(float));
        // State as the optimizer needs it: none for SGD, m for momentum, m
        // and v for Adam (the memory report counts the same).
        if (kind != OTC_SGD)
          p.m = (float *)backend->alloc(p.count * sizeof(float));
        if (kind == OTC_ADAM || kind == OTC_ADAMW)
          p.v = (float *)backend->alloc(p.count * sizeof(float));
      }
      paramPtrs.push_back(p.value);
      lowPtrs.push_back(p.low);
      params.push_back(p);
    }
    for (const Param &p : params)
      if (p.grad)
        gradSpans.push_back({p.grad, p.count});
  }

  /// The step's arguments: staged inputs, the painted arena, the loss.
  void prepareStep() {
    for (size_t i = 0; i < ds.arrays.size(); ++i)
      inputPtrs.push_back(backend->alloc(ds.sampleBytes[i] * N));
    args.arena = (char *)backend->alloc(prog.arena_bytes);
    backend->fill(args.arena, kPaint, prog.arena_bytes);
    args.inputs = inputPtrs.data();
    args.params = paramPtrs.data();
    args.low_params = lowPtrs.data();
    args.grads = gradPtrs.data();
    args.loss = (float *)backend->alloc(sizeof(float));
    args.blas = backend->blas();
  }

  /// Runs window `s`'s k micro-batches; returns the summed loss.
  float runWindow(int64_t s, int64_t k, const LossScaler &scaler) {
    for (int64_t j = 0; j < k; ++j) {
      int64_t first = ((s * K + j) % M) * N;
      for (size_t i = 0; i < ds.arrays.size(); ++i)
        backend->toDevice(inputPtrs[i], ds.arrays[i].data.data() + first * ds.sampleBytes[i],
                          ds.sampleBytes[i] * N);
      args.seed = float(double(scaler.scale()) / double(k));
      args.first = j == 0;
      args.rng_seed = opt.seed;
      args.rng_offset = uint64_t(s * K + j); // the micro-batch's index in the run
      prog.step(&args);
    }
    // The step summed the window's loss on the device: one read per step.
    float lossSum;
    backend->toHost(&lossSum, args.loss, sizeof(float));
    return lossSum;
  }

  /// Whether window `s` overflowed. Without loss scaling, training stops at
  /// the first non-finite value and nothing is saved. With it, such a step
  /// is skipped whole, as GradScaler skips optimizer.step(): weights and
  /// moments untouched.
  bool overflowed(int64_t s, float lossSum, const LossScaler &scaler) {
    std::string where = "step " + std::to_string(s + 1);
    // As GradScaler, only the gradients decide: a non-finite loss with finite
    // gradients (a term no parameter reaches) still steps.
    // One check of all gradient buffers (one kernel and one read on CUDA);
    // the culprit is looked up only when there is one.
    bool badGrad = backend->anyNonFinite(gradSpans);
    const Param *bad = badGrad && !scaler.enabled() ? firstNonFinite(*backend, params, true) : nullptr;
    bool overflow = scaler.enabled() ? badGrad : !std::isfinite(lossSum) || badGrad;
    if (overflow && !scaler.enabled()) {
      if (!std::isfinite(lossSum))
        die(where + ": the loss is " + (std::isnan(lossSum) ? "nan" : lossSum < 0 ? "-inf" : "inf") +
            "; stopping without saving (is --lr too large?)");
      die(where + ": the gradient of '" + (bad ? bad->desc->name : std::string("?")) +
          "' is not finite; stopping without saving");
    }
    return overflow;
  }

  /// The --log line and, every twentieth of the run, the progress line.
  void report(int64_t s, double loss, double rate, float scaleUsed, bool overflow,
              const LossScaler &scaler) {
    if (std::FILE *log = logFile.get()) { // JSON has no inf or nan: a skipped step's loss is null
      std::fprintf(log, "{\"step\": %lld, \"loss\": %s, \"lr\": %.9g, \"samples_per_second\": %.6g",
                   (long long)(s + 1), jsonNumber(loss).c_str(), opt.lr, rate);
      if (scaler.enabled())
        std::fprintf(log, ", \"loss_scale\": %.9g, \"skipped\": %s", double(scaleUsed),
                     overflow ? "true" : "false");
      std::fputs("}\n", log);
    }
    int64_t every = std::max<int64_t>(1, steps / 20);
    if ((s + 1) % every == 0 || s + 1 == steps) {
      std::fprintf(stderr, "step %lld/%lld  loss %.6f  %.0f samples/s", (long long)(s + 1),
                   (long long)steps, loss, rate);
      if (scaler.enabled())
        std::fprintf(stderr, "  scale %g  skipped %lld", double(scaler.scale()), (long long)skipped);
      std::fputc('\n', stderr);
    }
  }

  void train() {
    if (!opt.log.empty() && !(logFile.reset(openLog(opt.log)), logFile))
      die("cannot write the log '" + opt.log + "': " + std::strerror(errno));
    std::fprintf(stderr, "train: %lld samples, micro-batch %lld, %lld micro-batches per step, %lld steps on %s, %s, recompute %s\n",
                 (long long)ds.samples, (long long)N, (long long)K, (long long)steps, backend->name(),
                 precisionName(prog.precision), recomputeName(prog.recompute));
    LossScaler scaler(prog.loss_scale_mode, prog.init_scale,
                      prog.scale_window, prog.scale_hysteresis, prog.min_scale);
    auto start = std::chrono::steady_clock::now();
    for (int64_t s = 0; s < steps; ++s) {
      auto stepStart = std::chrono::steady_clock::now();
      int64_t k = std::min(K, total - s * K); // a partial last window counts 1/k
      float lossSum = runWindow(s, k, scaler);
      bool overflow = overflowed(s, lossSum, scaler);
      float scaleUsed = scaler.scale();
      if (overflow) {
        ++skipped;
      } else {
        OptimizerStep scalars = stepScalars(kind, opt, ++updates);
        scalars.gradScale = scaler.invScale();
        for (Param &p : params)
          if (p.grad)
            backend->update(scalars, p.value, p.grad, p.m, p.v, p.low, p.desc->low_dtype, p.count);
      }
      scaler.update(overflow);
      double loss = double(lossSum) / double(k);
      if (s == 0)
        firstLoss = loss;
      lastLoss = loss;
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - stepStart).count();
      report(s, loss, secs > 0 ? double(k * N) / secs : 0, scaleUsed, overflow, scaler);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "train: done in %.2f s, loss %.6f -> %.6f", secs, firstLoss, lastLoss);
    if (scaler.enabled())
      std::fprintf(stderr, ", %lld of %lld steps skipped, final scale %g", (long long)skipped,
                   (long long)steps, double(scaler.scale()));
    std::fputc('\n', stderr);
    logFile.reset();
  }

  /// Saves the trained model (never a non-finite one), then measures the
  /// arena's high-water mark.
  void finish() {
    if (const Param *p = firstNonFinite(*backend, params, /*grads=*/false))
      die("after step " + std::to_string(steps) + " parameter '" + p->desc->name +
          "' is not finite; stopping without saving (is --lr too large?)");
    if (!opt.save.empty()) {
      std::map<std::string, std::vector<float>> trained;
      for (Param &p : params) {
        std::vector<float> &v = trained[p.desc->name];
        v.resize(p.count);
        backend->toHost(v.data(), p.value, p.count * sizeof(float));
      }
      std::string error;
      if (!writeTrainedModel(opt.save, trained, error))
        die(error);
      std::fprintf(stderr, "train: saved %s\n", opt.save.c_str());
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
    std::fprintf(stderr, "train: arena high-water mark %zu bytes (planned %lld)\n", high,
                 (long long)prog.arena_bytes);
    std::string note = backend->deviceMemoryNote();
    std::fprintf(stderr, "train: memory: %zu bytes allocated%s%s\n", backend->allocatedBytes(),
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
  t.loadData();
  if (t.opt.threads > 0 && t.prog.set_threads)
    t.prog.set_threads(int(t.opt.threads));
  t.backend = makeBackend();
  t.backend->setUpdateKernel(t.prog.update);
  t.loadParams();
  t.prepareStep();
  t.train();
  t.finish();
  return 0;
}

} // namespace
} // namespace otc

int main(int argc, char **argv) {
  return otc::executableMain("train", otc::run, argc, argv, otc_get_program()->set_threads);
}
