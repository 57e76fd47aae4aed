// --trace FILE: spans of the run (micro-batch steps, gradient all-reduces,
// updates) in the Chrome trace event format, which chrome://tracing and
// Perfetto open. Rank 0 writes it at the end.
#ifndef OTC_RUNTIME_TRACE_H
#define OTC_RUNTIME_TRACE_H

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace otc {

class Trace {
public:
  /// Lanes of the picture.
  enum Lane { Compute = 0, Collectives = 1 };
  bool enabled() const { return on; }
  void enable() { on = true; }
  /// Microseconds since the trace began.
  double now() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
        .count();
  }
  /// A span from `begin` (now() then) to now. Past kMaxSpans, spans are dropped.
  void span(std::string name, Lane lane, double begin);
  /// Writes the JSON through replaceFile; false with `error`.
  bool write(const std::string &path, std::string &error) const;

private:
  struct Span {
    std::string name;
    Lane lane;
    double begin, end;
  };
  static constexpr size_t kMaxSpans = 1 << 20;
  bool on = false;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::vector<Span> spans;
};

} // namespace otc

#endif
