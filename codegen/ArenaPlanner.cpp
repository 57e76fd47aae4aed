// Arena placement: greedy first fit, largest buffers first.
#include "Lowering.h"

#include <algorithm>

namespace otc {

int64_t placeBuffers(std::vector<Interval> &intervals) {
  constexpr int64_t kAlign = 64; // a cache line; cuBLAS and 16-byte vector loads need 16
  std::vector<size_t> order(intervals.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return intervals[a].bytes > intervals[b].bytes;
  });
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

} // namespace otc
