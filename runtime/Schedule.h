// The learning rate of each optimizer step: Hugging Face's schedulers
// (get_{constant,linear,cosine}_schedule_with_warmup, and the min-lr floor of
// get_cosine_with_min_lr_schedule_with_warmup), which nanoGPT's match.
#ifndef OTC_RUNTIME_SCHEDULE_H
#define OTC_RUNTIME_SCHEDULE_H

#include "Options.h"

namespace otc {

/// The rate of the step taken after `taken` steps (the scheduler advances
/// only on steps taken) in a run of `total` steps: warmup from 0 to --lr
/// over --warmup-steps, then constant, or a linear or half-cosine decay to
/// --min-lr at step `total`.
double learningRate(const TrainOptions &o, int64_t taken, int64_t total);

} // namespace otc

#endif
