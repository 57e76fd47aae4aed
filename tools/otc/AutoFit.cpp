#include "AutoFit.h"

#include "otc/runtime/limits.h"


#include <algorithm>
#include <cstdio>

using namespace mlir;

namespace otc {

bool planStep(MLIRContext &ctx, const CompileOptions &o, Plan &plan) {
  plan.microBatch = o.import.microBatch;
  plan.recompute = o.recompute;
  CompileResult r;
  if (!compile(ctx, o, Stage::Plan, r, plan.error))
    return false;
  plan.planned = r.out.plannedBytes;
  plan.kept = r.out.keptBytes;
  plan.traffic = r.out.traffic;
  plan.steps = r.out.steps;
  plan.flops = countFlops(r.func);
  auto summary = r.func->getAttrOfType<StringAttr>(kRecomputeSummary);
  plan.summary = summary ? summary.str() : stringifyRecomputePolicy(o.recompute.policy).str();
  if (auto n = r.func->getAttrOfType<IntegerAttr>(kRecomputeLayers))
    plan.candidates = n.getInt();
  return true;
}

namespace {

/// The throughput model: a roofline per micro-batch plus a fixed cost per
/// kernel launch (the compiler's FLOP and byte counts; the rates are
/// nominal: an H100's dense tensor-core and CUDA-core rates, HBM3, and a
/// two-core CPU with OpenBLAS; 16-bit GEMMs on the CPU are plain loops).
double estimateSeconds(const Plan &p, Target target, Precision precision) {
  bool gpu = target == Target::Cuda, low = precision != Precision::Fp32;
  double flops = gpu ? (low ? 400e12 : 50e12) : (low ? 5e9 : 1e11);
  double bandwidth = gpu ? 2.5e12 : 1.5e10;
  double launch = gpu ? 4e-6 : 1e-6;
  return double(p.accum) * (double(p.flops.total) / flops + double(p.traffic) / bandwidth +
                            double(p.steps) * launch);
}

struct Fitter {
  MLIRContext &ctx;
  const CompileOptions &base;
  const FitRequest &request;
  int64_t trials = 0;

  bool fits(const Plan &p) const { return p.error.empty() && p.planned <= request.budget; }

  Plan trial(int64_t n, const RecomputeOptions &r) {
    CompileOptions s = base;
    s.import.microBatch = n;
    s.recompute = r;
    Plan p;
    planStep(ctx, s, p);
    ++trials;
    return p;
  }

  /// At micro-batch n: the given policy, or the plan with the fewest
  /// recomputed FLOPs that fits: none, else the budget policy with the
  /// fewest layers that fits (found by bisection; the layers are ordered so
  /// that more layers means a lower peak), else sqrt or blocks. When
  /// nothing fits, the plan with the smallest peak (`fits` false).
  Plan atMicroBatch(int64_t n) {
    if (request.policyGiven)
      return trial(n, base.recompute);
    Plan none = trial(n, {RecomputePolicy::None, "", 0});
    if (fits(none) || !none.error.empty())
      return none;
    Plan most = trial(n, {RecomputePolicy::Budget, "", int64_t(1) << 30});
    if (!fits(most)) {
      Plan best = most.error.empty() && most.planned < none.planned ? most : none;
      for (RecomputePolicy policy : {RecomputePolicy::Sqrt, RecomputePolicy::Blocks}) {
        Plan p = trial(n, {policy, base.recompute.boundary, 0});
        if (p.error.empty() && p.planned < best.planned)
          best = p;
      }
      return best;
    }
    int64_t lo = 0, hi = std::max<int64_t>(most.candidates, 0);
    Plan best = most;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      Plan p = trial(n, {RecomputePolicy::Budget, "", mid});
      if (fits(p))
        best = p, hi = mid;
      else
        lo = mid + 1;
    }
    return best;
  }
};

} // namespace

bool autoFit(MLIRContext &ctx, CompileOptions &o, const FitRequest &request, std::string &error,
             llvm::raw_ostream &log) {
  Fitter fit{ctx, o, request};
  std::vector<Plan> plans;
  auto add = [&](int64_t n) -> const Plan & {
    for (const Plan &p : plans)
      if (p.microBatch == n)
        return p;
    Plan p = fit.atMicroBatch(n);
    p.microBatch = n;
    p.accum = request.globalBatch ? request.globalBatch / n : 1;
    p.seconds = estimateSeconds(p, o.codegen.target, o.precision.precision);
    plans.push_back(p);
    return plans.back();
  };
  if (request.globalBatch) {
    for (int64_t n = std::min<int64_t>(request.globalBatch, OTC_MAX_MICRO_BATCH); n >= 1; --n)
      if (request.globalBatch % n == 0)
        add(n);
  } else if (!request.microBatchAuto) {
    add(o.import.microBatch); // the policy only
  } else {
    // The largest micro-batch that fits: doubling, then bisection.
    int64_t good = 0, bad = 0;
    for (int64_t n = 1; n <= OTC_MAX_MICRO_BATCH; n *= 2) {
      const Plan &p = add(n);
      if (!p.error.empty() && !good)
        continue; // a fixed batch dimension larger than n
      if (!fit.fits(p)) {
        bad = n;
        break;
      }
      good = n;
    }
    if (good && bad) {
      while (bad - good > 1) {
        int64_t mid = good + (bad - good) / 2;
        (fit.fits(add(mid)) ? good : bad) = mid;
      }
    }
  }
  // A micro-batch the model cannot take (a fixed batch dimension) drops
  // out; when none compiles, the first reason is the error.
  std::vector<Plan> compiled;
  std::string firstError;
  for (const Plan &p : plans)
    if (p.error.empty())
      compiled.push_back(p);
    else if (firstError.empty())
      firstError = "micro-batch " + std::to_string(p.microBatch) + ": " + p.error;
  if (compiled.empty()) {
    error = firstError;
    return false;
  }
  if (compiled.size() < plans.size())
    log << "otc: auto-fit: " << plans.size() - compiled.size()
        << " micro-batch sizes do not compile (first: " << firstError << ")\n";
  plans = std::move(compiled);
  // Fitting plans by estimated time (the largest micro-batch for
  // --micro-batch auto); then the rest by peak.
  std::stable_sort(plans.begin(), plans.end(), [&](const Plan &a, const Plan &b) {
    if (fit.fits(a) != fit.fits(b))
      return fit.fits(a);
    if (!fit.fits(a))
      return a.planned < b.planned;
    return request.microBatchAuto ? a.microBatch > b.microBatch : a.seconds < b.seconds;
  });
  const Plan &best = plans.front();
  if (!fit.fits(best)) {
    const Plan &smallest = best; // none fits: sorted by peak
    error = "the memory budget " + std::to_string(request.budget) + " bytes (" +
            humanBytes(double(request.budget)) + ") is below the smallest planned peak, " +
            std::to_string(smallest.planned) + " bytes (" + humanBytes(double(smallest.planned)) +
            ", micro-batch " + std::to_string(smallest.microBatch) + ", recompute " +
            smallest.summary + ")";
    return false;
  }
  log << "otc: auto-fit to " << request.budget << " bytes (" << humanBytes(double(request.budget))
      << ")";
  if (request.globalBatch)
    log << ", global batch " << request.globalBatch;
  log << ": " << fit.trials << " plans; estimated time per "
      << (request.globalBatch ? "global batch" : "micro-batch") << " on "
      << (o.codegen.target == Target::Cuda ? "an H100-class GPU" : "a CPU")
      << " from the compiler's FLOP and byte counts\n";
  char line[512];
  std::snprintf(line, sizeof line, "     %11s %6s %14s %15s %12s %10s  %s\n", "micro-batch",
                "accum", "planned peak", "kept activ.", "+FLOPs", "est. ms", "recompute policy");
  log << line;
  for (size_t i = 0; i < plans.size() && i < 6; ++i) {
    const Plan &p = plans[i];
    std::snprintf(line, sizeof line, "  %s %11lld %6lld %14lld %15lld %11.1f%% %10.3f  %s%s\n",
                  i == 0 ? "->" : "  ", (long long)p.microBatch, (long long)p.accum,
                  (long long)p.planned, (long long)p.kept, p.flops.addedPercent(), p.seconds * 1e3,
                  p.summary.c_str(), fit.fits(p) ? "" : " (over the budget)");
    log << line;
  }
  o.import.microBatch = best.microBatch;
  o.recompute = best.recompute;
  o.codegen.defaultAccumSteps = best.accum;
  log << "otc: chose micro-batch " << best.microBatch << ", accumulation " << best.accum
      << (request.globalBatch ? " (./train's default --accum-steps)" : "") << ", recompute "
      << best.summary << ": planned peak " << best.planned << " bytes ("
      << humanBytes(double(best.planned)) << ")\n";
  return true;
}

} // namespace otc
