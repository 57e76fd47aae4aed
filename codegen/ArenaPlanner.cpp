// Arena placement: greedy first fit, in a few orders (largest buffers first,
// largest size x lifetime first, earliest first); the smallest arena wins.
// Which order packs best depends on the program: a buffer whose life was
// stretched (a value stored early, in its producer's step) can leave a gap
// under largest-first that another order fills.
#include "Lowering.h"

#include <algorithm>

namespace otc {
namespace {

constexpr int64_t kAlign = 64; // a cache line; cuBLAS and 16-byte vector loads need 16

/// First fit in `order`; sets the offsets and returns the arena's end.
int64_t firstFit(std::vector<Interval> &intervals, const std::vector<size_t> &order) {
  std::vector<size_t> placed;
  int64_t arena = 0;
  for (size_t i : order) {
    Interval &cur = intervals[i];
    int64_t size = (cur.bytes + kAlign - 1) / kAlign * kAlign;
    // Live-overlapping neighbours, by offset; slide past each that collides.
    std::vector<const Interval *> live;
    for (size_t j : placed)
      if (intervals[j].begin <= cur.end && cur.begin <= intervals[j].end)
        live.push_back(&intervals[j]);
    std::sort(live.begin(), live.end(),
              [](const Interval *a, const Interval *b) { return a->offset < b->offset; });
    int64_t offset = 0;
    for (const Interval *o : live) {
      int64_t oSize = (o->bytes + kAlign - 1) / kAlign * kAlign;
      if (offset + size <= o->offset)
        break;
      int64_t end;
      offset = __builtin_add_overflow(o->offset, oSize, &end) ? INT64_MAX : std::max(offset, end);
    }
    cur.offset = offset;
    // The arena ends at the last byte a buffer uses, not at its padding, so
    // the plan's size is the high-water mark the runtime can measure.
    // Saturate rather than wrap: the caller rejects arenas past its limit.
    int64_t end;
    arena = __builtin_add_overflow(offset, cur.bytes, &end) ? INT64_MAX : std::max(arena, end);
    placed.push_back(i);
  }
  return arena;
}

} // namespace

int64_t placeBuffers(std::vector<Interval> &intervals) {
  std::vector<size_t> identity(intervals.size());
  for (size_t i = 0; i < identity.size(); ++i)
    identity[i] = i;
  auto life = [&](size_t i) {
    return double(intervals[i].bytes) * double(intervals[i].end - intervals[i].begin + 1);
  };
  std::vector<std::vector<size_t>> orders(3, identity);
  std::stable_sort(orders[0].begin(), orders[0].end(), [&](size_t a, size_t b) {
    return intervals[a].bytes > intervals[b].bytes;
  });
  std::stable_sort(orders[1].begin(), orders[1].end(),
                   [&](size_t a, size_t b) { return life(a) > life(b); });
  std::stable_sort(orders[2].begin(), orders[2].end(), [&](size_t a, size_t b) {
    return intervals[a].begin != intervals[b].begin ? intervals[a].begin < intervals[b].begin
                                                    : intervals[a].bytes > intervals[b].bytes;
  });
  int64_t best = INT64_MAX;
  std::vector<int64_t> offsets(intervals.size());
  for (const std::vector<size_t> &order : orders) {
    int64_t arena = firstFit(intervals, order);
    if (arena < best) {
      best = arena;
      for (size_t i = 0; i < intervals.size(); ++i)
        offsets[i] = intervals[i].offset;
    }
  }
  for (size_t i = 0; i < intervals.size(); ++i)
    intervals[i].offset = offsets[i];
  return best;
}

} // namespace otc
