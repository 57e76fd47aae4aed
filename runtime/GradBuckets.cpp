#include "GradBuckets.h"

#include <algorithm>
#include <cstdio>

namespace otc {

std::vector<int64_t> GradBuckets::layout(const std::vector<int64_t> &counts, const int *order,
                                         int64_t &total) {
  std::vector<int64_t> offset(counts.size(), 0);
  total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    int g = order ? order[i] : int(i);
    offset[size_t(g)] = total;
    total += (counts[size_t(g)] + 15) / 16 * 16; // 16-float offsets within the block
  }
  return offset;
}

GradBuckets::GradBuckets(const std::vector<int64_t> &counts, const int *order, float *block,
                         size_t capBytes)
    : block(block) {
  int64_t total;
  offset = layout(counts, order, total);
  bucketOf.assign(counts.size(), 0);
  int64_t begin = 0, end = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    int g = order ? order[i] : int(i);
    if (end > begin && size_t(end - begin) * sizeof(float) >= capBytes) {
      spans.push_back({block + begin, end - begin});
      begin = end;
    }
    if (spans.size() == size.size())
      size.push_back(0);
    bucketOf[size_t(g)] = int(spans.size());
    ++size.back();
    end = offset[size_t(g)] + (counts[size_t(g)] + 15) / 16 * 16;
  }
  if (end > begin)
    spans.push_back({block + begin, end - begin});
}

void GradBuckets::begin(Collective *c, Trace *t, const std::string &w) {
  comm = c, trace = t, where = w;
  isDone.assign(bucketOf.size(), false);
  left = size;
  id.assign(spans.size(), -1);
  startedAt.assign(spans.size(), 0);
  next = pending = 0;
}

void GradBuckets::done(int g) {
  if (g < 0 || size_t(g) >= isDone.size() || isDone[size_t(g)])
    return;
  isDone[size_t(g)] = true;
  --left[size_t(bucketOf[size_t(g)])];
  startReady();
  poll();
}

void GradBuckets::startReady() {
  for (; next < spans.size() && left[next] == 0; ++next) {
    if (trace)
      startedAt[next] = trace->now();
    id[next] = comm->startSum(spans[next], where + "'s gradients");
  }
}

void GradBuckets::traceBucket(size_t b) {
  if (trace)
    trace->span("all-reduce bucket " + std::to_string(b) + " (" +
                    std::to_string(spans[b].count * int64_t(sizeof(float))) + " bytes)",
                Trace::Collectives, startedAt[b]);
}

void GradBuckets::poll() {
  // Sums complete in the order they start: test the oldest pending only.
  for (; pending < next && comm->progress(id[pending]); ++pending) {
    traceBucket(pending);
  }
}

void GradBuckets::finish() {
  for (size_t g = 0; g < isDone.size(); ++g)
    if (!isDone[g]) {
      isDone[g] = true;
      --left[size_t(bucketOf[g])];
    }
  startReady();
  poll();
  comm->finishSums(where + "'s gradients");
  for (size_t b = pending; b < spans.size(); ++b)
    traceBucket(b);
}

} // namespace otc
