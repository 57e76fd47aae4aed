#include "Profile.h"
#include "SafeFile.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace otc {
namespace {

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

/// The timed ones: all but the first, unless there is only one.
template <typename T> std::vector<T> timed(const std::vector<T> &v) {
  return v.size() > 1 ? std::vector<T>(v.begin() + 1, v.end()) : v;
}

std::string quoted(const std::string &s) {
  std::string out = "\"";
  for (char c : s)
    if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else if ((unsigned char)c >= 0x20)
      out += c;
  return out + "\"";
}

} // namespace

void Profile::addMicroBatch(const std::vector<double> &marks) {
  std::vector<double> s(size_t(prog.num_steps));
  for (size_t k = 0; k < s.size(); ++k)
    s[k] = marks[k + 1] - marks[k];
  steps.push_back(std::move(s));
  totals.push_back(marks[size_t(prog.num_steps)] - marks[0]);
}

void Profile::addUpdate(double seconds, int64_t bytes) {
  updates.push_back(seconds);
  updateBytes = bytes;
}

std::vector<double> Profile::medians(double &microBatch) const {
  std::vector<std::vector<double>> kept = timed(steps);
  std::vector<double> out(size_t(prog.num_steps));
  for (size_t k = 0; k < out.size(); ++k) {
    std::vector<double> v;
    for (const std::vector<double> &m : kept)
      v.push_back(m[k]);
    out[k] = median(v);
  }
  microBatch = median(timed(totals));
  return out;
}

double Profile::medianUpdate() const { return median(timed(updates)); }

bool Profile::write(const std::string &path, const std::string &device, double copyBps,
                    std::string &error) const {
  double total = 0;
  std::vector<double> ms = medians(total);
  char line[512];
  std::string text = "{\"target\": " + quoted(prog.target) + ", \"device\": " + quoted(device);
  std::snprintf(line, sizeof line,
                ", \"copy_gb_per_s\": %.3f, \"micro_batches_timed\": %zu, \"micro_batch_ms\": "
                "%.6f, \"update_ms\": %.6f, \"update_bytes\": %lld,\n\"steps\": [\n",
                copyBps / 1e9, timed(steps).size(), total * 1e3, medianUpdate() * 1e3,
                (long long)updateBytes);
  text += line;
  for (size_t k = 0; k < ms.size(); ++k) {
    const otc_step_info &s = prog.steps[k];
    std::snprintf(line, sizeof line,
                  "{\"step\": %zu, \"op\": %s, \"kind\": \"%s\", \"recomputed\": %s, \"ms\": %.6f, "
                  "\"bytes\": %lld, \"flops\": %lld}%s\n",
                  k, quoted(s.op).c_str(), s.kind, s.recomputed ? "true" : "false", ms[k] * 1e3,
                  (long long)s.bytes, (long long)s.flops, k + 1 < ms.size() ? "," : "");
    text += line;
  }
  text += "]}\n";
  return replaceFile(path, 0666, [&](int fd) { return writeAll(fd, text.data(), text.size()); },
                     error);
}

void Profile::print(FILE *out, double copyBps) const {
  double total = 0;
  std::vector<double> ms = medians(total);
  struct Row {
    int count = 0;
    double seconds = 0;
    int64_t bytes = 0, flops = 0;
  };
  std::map<std::string, Row> byOp;
  for (size_t k = 0; k < ms.size(); ++k) {
    const otc_step_info &s = prog.steps[k];
    Row &r = byOp[std::string(s.op) + (s.recomputed ? " (recomputed)" : "")];
    r.count += 1, r.seconds += ms[k], r.bytes += s.bytes, r.flops += s.flops;
  }
  std::vector<std::pair<std::string, Row>> rows(byOp.begin(), byOp.end());
  double update = medianUpdate();
  if (!updates.empty())
    rows.push_back({"optimizer update", {1, update, updateBytes, 0}});
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto &a, const auto &b) { return a.second.seconds > b.second.seconds; });
  std::fprintf(out,
               "train: profile of %zu micro-batch(es) after the first: %.3f ms each (median), "
               "update %.3f ms; copy bandwidth %.0f GB/s; share: of a micro-batch (the update's "
               "too, which runs once a window)\n",
               timed(steps).size(), total * 1e3, update * 1e3, copyBps / 1e9);
  std::fprintf(out, "  %-44s %5s %10s %6s %9s %7s %9s\n", "op", "steps", "ms", "share", "GB/s",
               "of copy", "TFLOP/s");
  for (const auto &[name, r] : rows) {
    double gbs = r.seconds > 0 ? double(r.bytes) / r.seconds / 1e9 : 0;
    std::fprintf(out, "  %-44s %5d %10.4f %5.1f%% %9.1f %6.0f%% ", name.c_str(), r.count,
                 r.seconds * 1e3, total > 0 ? 100 * r.seconds / total : 0.0, gbs,
                 copyBps > 0 ? 100 * gbs * 1e9 / copyBps : 0.0);
    if (r.flops > 0 && r.seconds > 0)
      std::fprintf(out, "%9.2f\n", double(r.flops) / r.seconds / 1e12);
    else
      std::fprintf(out, "%9s\n", "-");
  }
}

} // namespace otc
