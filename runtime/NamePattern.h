// A parameter-name pattern (--no-decay): POSIX extended regular expressions,
// the dialect otc compile's --lora-targets and --recompute-boundary use
// (llvm::Regex). Not std::regex: its compiler recurses per character and
// overflows on large repetition counts, both reachable from the command line.
#pragma once

#include <regex.h>

#include <string>

namespace otc {

class NamePattern {
public:
  /// Compiles `pattern`; on failure returns false with `error` saying why.
  bool compile(const std::string &pattern, std::string &error);
  bool matches(const std::string &name) const;

  NamePattern() = default;
  NamePattern(NamePattern &&other) noexcept;
  NamePattern(const NamePattern &) = delete;
  NamePattern &operator=(const NamePattern &) = delete;
  ~NamePattern();

private:
  regex_t re_{};
  bool compiled_ = false;
};

} // namespace otc
