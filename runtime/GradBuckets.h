// Data parallelism's gradient buckets: the gradient buffers laid out in one
// block in the order the step has done with them (otc_program.grad_order),
// cut into buckets of about --bucket-mb. On the window's last micro-batch,
// the step's grad_ready callback marks buffers done; each bucket's sum is
// started as soon as its last buffer is, in bucket order (every rank starts
// the same sums in the same order), so the all-reduce overlaps the rest of
// the backward.
#ifndef OTC_RUNTIME_GRADBUCKETS_H
#define OTC_RUNTIME_GRADBUCKETS_H

#include "Collective.h"
#include "Trace.h"

#include <cstdint>
#include <string>
#include <vector>

namespace otc {

class GradBuckets {
public:
  /// Offsets (in floats, 16-float aligned) of gradients with `counts` in
  /// the block when laid out in `order`, and the block's size.
  static std::vector<int64_t> layout(const std::vector<int64_t> &counts, const int *order,
                                     int64_t &total);

  GradBuckets(const std::vector<int64_t> &counts, const int *order, float *block,
              size_t capBytes);
  float *grad(int g) const { return block + offset[size_t(g)]; }
  size_t buckets() const { return spans.size(); }

  /// A window's reduction begins: nothing is done yet.
  void begin(Collective *comm, Trace *trace, const std::string &where);
  /// Gradient `g` is final: starts the buckets that are now complete.
  void done(int g);
  /// Every gradient not yet done is; waits for all the sums.
  void finish();
  /// grad_ready's C entry point (ctx: a GradBuckets).
  static void onReady(void *ctx, int g) { static_cast<GradBuckets *>(ctx)->done(g); }

private:
  void startReady();
  void poll();
  /// Bucket `b`'s span, from its start to now, when tracing.
  void traceBucket(size_t b);

  float *block;
  std::vector<int64_t> offset;          // per gradient
  std::vector<int> bucketOf;            // per gradient
  std::vector<Collective::Span> spans;  // per bucket
  std::vector<int> size;                // gradients per bucket
  // Per window:
  Collective *comm = nullptr;
  Trace *trace = nullptr;
  std::string where;
  std::vector<bool> isDone;
  std::vector<int> left;                // per bucket: gradients not done
  std::vector<int> id;                  // per bucket: its sum's id, or -1
  std::vector<double> startedAt;
  size_t next = 0;                      // the next bucket to start
  size_t pending = 0;                   // the oldest bucket not known complete
};

} // namespace otc

#endif
