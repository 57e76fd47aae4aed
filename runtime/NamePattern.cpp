#include "NamePattern.h"

#include <cctype>

namespace otc {
namespace {

// regcomp copies a repeated subexpression once per repetition ("a+" is "aa*",
// "a{3}" is "aaa"), so nested quantifiers multiply the automaton: "a++++..."
// doubles it per '+'. Bound the pattern's length times every quantifier's
// factor, an over-estimate of the copies, so no pattern can exhaust memory
// or time: glibc's epsilon closure takes time quadratic in the copies
// ("6*" then ten '+', 28672 by this count: 0.37 s; 131072: 8.5 s; ten
// times that under the sanitizers, where fuzz-train-options timed out).
constexpr size_t kMaxPatternLength = 1024;
constexpr double kMaxNodes = 1e4;

bool boundedRepetition(const std::string &p) {
  double nodes = double(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    double factor = 1;
    if (p[i] == '\\') {
      ++i; // an escaped character is a literal
    } else if (p[i] == '+' || p[i] == '*' || p[i] == '?') {
      factor = 2;
    } else if (p[i] == '{') {
      double largest = 0, value = 0;
      for (size_t j = i + 1; j < p.size() && p[j] != '}' && largest < kMaxNodes; ++j) {
        value = std::isdigit(static_cast<unsigned char>(p[j])) ? value * 10 + (p[j] - '0') : 0;
        largest = value > largest ? value : largest;
      }
      factor = largest + 1;
    }
    nodes *= factor;
    if (nodes > kMaxNodes)
      return false;
  }
  return true;
}

} // namespace

bool NamePattern::compile(const std::string &pattern, std::string &error) {
  if (pattern.size() > kMaxPatternLength) {
    error = "longer than " + std::to_string(kMaxPatternLength) + " characters";
    return false;
  }
  if (!boundedRepetition(pattern)) {
    error = "too many nested repetitions";
    return false;
  }
  int rc = regcomp(&re_, pattern.c_str(), REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char why[256];
    regerror(rc, &re_, why, sizeof why);
    error = why;
    return false;
  }
  compiled_ = true;
  return true;
}

bool NamePattern::matches(const std::string &name) const {
  return compiled_ && regexec(&re_, name.c_str(), 0, nullptr, 0) == 0;
}

NamePattern::NamePattern(NamePattern &&other) noexcept : re_(other.re_), compiled_(other.compiled_) {
  other.compiled_ = false;
}

NamePattern::~NamePattern() {
  if (compiled_)
    regfree(&re_);
}

} // namespace otc
