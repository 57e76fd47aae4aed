// The training executable's command line.
#ifndef OTC_RUNTIME_OPTIONS_H
#define OTC_RUNTIME_OPTIONS_H

#include "otc/kernels/optimizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace otc {

enum class LrSchedule { Constant, Linear, Cosine };

/// How a window's micro-batch losses combine: weighted by their counted
/// labels (the mean over every counted token of the window), or the plain
/// mean of the micro-batches' means.
enum class LossAverage { Tokens, MicroBatch };

struct TrainOptions {
  std::string data, save, log;
  std::string saveAdapter; // LoRA: DIR for adapter_model.safetensors and adapter_config.json
  // The token stream: one flat file of token ids, windows of T + 1 tokens.
  std::string tokens, tokenInput, tokenLabels;
  std::string evalData;
  std::string checkpoint, resume;
  std::string init; // --init: initial parameters from this ONNX file
  int64_t steps = 0, epochs = 0, accumSteps = 1;
  int64_t evalEvery = 0, checkpointEvery = 0;
  int64_t threads = 0; // 0: OMP_NUM_THREADS, else all cores
  uint64_t seed = 0;   // dropout's generator, the shuffle and the token windows
  bool shuffle = false;
  double lr = 1e-3, weightDecay = -1, momentum = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  LrSchedule schedule = LrSchedule::Constant;
  int64_t warmupSteps = 0;
  double minLr = 0;
  double clipGradNorm = 0; // 0: no clipping
  std::vector<std::string> noDecay; // regexes of parameter names
  LossAverage lossAverage = LossAverage::Tokens;
  // Adafactor's switches (Hugging Face's scale_parameter, relative_step,
  // warmup_init; all off: the fine-tuning setting).
  bool scaleParameter = false, relativeStep = false, warmupInit = false;
  bool firstMoment = false; // Adafactor given --beta1: HF's beta1 is not None
  // Data parallelism (otc compile --data-parallel, launched with mpirun).
  double collectiveTimeout = 600; // seconds any rank waits for the others
  bool shardOptimizer = false;    // ZeRO-1: each rank keeps its share of the state
  double bucketMb = 4;            // gradients all-reduced together, MiB
  std::string trace;              // --trace FILE: Chrome trace of the run's spans
  std::string profile;            // --profile FILE: per-step times of the program
  bool cudaGraphs = false;        // CUDA: replay each micro-batch's kernels as a graph
};

enum class ParseResult { Ok, Help, Error };

/// Parses and range-checks argv. On Error, `error` holds one line naming the
/// flag; on Help, `error` holds the usage text. `defaultAccumSteps` is the
/// K that otc compile's auto-fit embedded.
ParseResult parseTrainOptions(int argc, const char *const *argv, otc_optimizer kind,
                              TrainOptions &out, std::string &error,
                              int64_t defaultAccumSteps = 1);

} // namespace otc

#endif
