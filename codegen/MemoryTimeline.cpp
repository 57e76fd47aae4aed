// The memory plan over time: which arena buffers each step of the program
// touches gives each buffer a live range in steps; summed per step and by
// category, that is the timeline `otc compile --memory-report` draws, and
// its largest point is the peak it tabulates.
#include "Program.h"
#include "otc/Codegen/Codegen.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace otc {

namespace {

} // namespace

std::string humanBytes(double b) {
  const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4)
    b /= 1024, ++u;
  char text[32];
  std::snprintf(text, sizeof text, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
  return text;
}

MemoryTimeline memoryTimeline(const Program &program, otc_optimizer optimizer) {
  MemoryTimeline t;
  PersistentBytes p = persistentBytes(program, optimizer);
  t.persistent[MemoryTimeline::Parameters] = p.params;
  t.persistent[MemoryTimeline::LowCopies] = p.lowCopies;
  t.persistent[MemoryTimeline::Gradients] = p.grads;
  t.persistent[MemoryTimeline::OptimizerState] = p.optimizerState;
  t.persistent[MemoryTimeline::Inputs] = p.inputs + p.constants;
  t.persistent[MemoryTimeline::Workspace] = p.workspace;

  // Each arena buffer's first and last step.
  const int64_t steps = (int64_t)program.steps.size();
  std::vector<int64_t> first(program.buffers.size(), -1), last(program.buffers.size(), -1);
  t.backwardStep = steps;
  for (int64_t s = 0; s < steps; ++s) {
    const Step &step = program.steps[s];
    t.traffic += stepBytes(program, step);
    std::vector<int> ids = stepBuffers(step);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    for (int id : ids) {
      if (id < 0 || program.buffers[id].place != Buffer::Place::Arena)
        continue;
      if (first[id] < 0)
        first[id] = s;
      last[id] = s;
    }
    // The backward begins where the loss's seed is first read, or at a
    // recomputed value placed just before that read.
    for (const Node &n : step.nodes)
      if (n.op == Node::Seed)
        t.backwardStep = std::min(t.backwardStep, s);
    if (step.recomputed)
      t.backwardStep = std::min(t.backwardStep, s);
  }
  // Per step, by category: a buffer written before the backward and read
  // in it is a kept activation; every other arena buffer is a temporary.
  t.live.assign(steps, {});
  for (size_t id = 0; id < program.buffers.size(); ++id) {
    if (first[id] < 0)
      continue;
    const Buffer &b = program.buffers[id];
    int c = b.lowCopy ? MemoryTimeline::LowCopies
            : first[id] < t.backwardStep && last[id] >= t.backwardStep
                ? MemoryTimeline::KeptActivations
                : MemoryTimeline::Temporaries;
    for (int64_t s = first[id]; s <= last[id]; ++s)
      t.live[s][c] += b.bytes();
    if (c == MemoryTimeline::KeptActivations)
      t.keptBytes += b.bytes();
  }
  int64_t best = -1;
  for (int64_t s = 0; s < steps; ++s) {
    int64_t arena = 0;
    for (int64_t v : t.live[s])
      arena += v;
    if (arena > best)
      best = arena, t.peakStep = s;
  }
  t.arenaBytes = program.arenaBytes;
  return t;
}

const char *MemoryTimeline::name(int c) {
  static const char *names[] = {"parameters (float32)", "low-precision weight copies",
                                "gradient buffers (float32)", "optimizer state (float32)",
                                "data inputs and constants", "library workspace (cuBLAS)",
                                "kept activations",
                                "temporaries"};
  return names[c];
}

std::string MemoryTimeline::table(const Program &program) const {
  std::ostringstream os;
  os << "memory at the peak (bytes), step " << peakStep << " of " << live.size();
  if (peakStep >= 0 && peakStep < (int64_t)program.steps.size())
    os << " (" << program.steps[peakStep].origin << ")";
  os << ", backward from step " << backwardStep << ":\n";
  int64_t total = 0;
  for (int c = 0; c < Count; ++c) {
    int64_t v = persistent[c] + (peakStep >= 0 ? live[peakStep][c] : 0);
    os << "  " << name(c) << std::string(32 - std::string(name(c)).size(), ' ') << v << "\n";
    total += v;
  }
  os << "  total live at the peak" << std::string(9, ' ') << total << "\n";
  int64_t liveArena = 0;
  for (int c = 0; peakStep >= 0 && c < Count; ++c)
    liveArena += live[peakStep][c];
  os << "arena: " << arenaBytes << " bytes placed, " << liveArena
     << " live at the peak (the rest is placement gaps and alignment)\n";
  return os.str();
}

std::string MemoryTimeline::svg(const std::string &title) const {
  // A stacked area per category, persistent ones at the bottom.
  const double W = 900, H = 420, left = 90, right = 250, top = 40, bottom = 50;
  const double pw = W - left - right, ph = H - top - bottom;
  const int64_t n = std::max<int64_t>((int64_t)live.size(), 1);
  std::vector<std::array<int64_t, Count>> stack(n);
  double most = 1;
  for (int64_t s = 0; s < n; ++s) {
    int64_t sum = 0;
    for (int c = 0; c < Count; ++c) {
      sum += persistent[c] + (s < (int64_t)live.size() ? live[s][c] : 0);
      stack[s][c] = sum;
    }
    most = std::max(most, double(sum));
  }
  auto x = [&](double s) { return left + pw * s / double(n); };
  auto y = [&](double b) { return top + ph * (1 - b / most); };
  static const char *colour[] = {"#4e79a7", "#a0cbe8", "#f28e2b", "#ffbe7d",
                                 "#bab0ac", "#d4a6c8", "#e15759", "#59a14f"};
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
     << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
     << "<text x=\"" << left << "\" y=\"22\" font-size=\"15\">";
  for (char ch : title) // the title is a file name: escape XML's specials
    os << (ch == '<' ? std::string("&lt;") : ch == '>' ? std::string("&gt;")
           : ch == '&' ? std::string("&amp;") : std::string(1, ch));
  os << "</text>\n";
  for (int c = Count - 1; c >= 0; --c) { // upper edges first, painted over
    os << "<polygon fill=\"" << colour[c] << "\" points=\"" << x(0) << "," << y(0);
    for (int64_t s = 0; s < n; ++s)
      os << " " << x(s) << "," << y(stack[s][c]) << " " << x(s + 1) << "," << y(stack[s][c]);
    os << " " << x(n) << "," << y(0) << "\"/>\n";
  }
  // Axes, the backward's start and the peak.
  os << "<line x1=\"" << left << "\" y1=\"" << y(0) << "\" x2=\"" << left + pw << "\" y2=\""
     << y(0) << "\" stroke=\"black\"/>\n<line x1=\"" << left << "\" y1=\"" << top
     << "\" x2=\"" << left << "\" y2=\"" << y(0) << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    double b = most * i / 4;
    os << "<text x=\"" << left - 6 << "\" y=\"" << y(b) + 4 << "\" text-anchor=\"end\">"
       << humanBytes(b) << "</text>\n";
  }
  os << "<text x=\"" << left + pw / 2 << "\" y=\"" << H - 12
     << "\" text-anchor=\"middle\">step of the kernel program (" << live.size()
     << " steps)</text>\n";
  os << "<line x1=\"" << x(double(backwardStep)) << "\" y1=\"" << top << "\" x2=\""
     << x(double(backwardStep)) << "\" y2=\"" << y(0)
     << "\" stroke=\"black\" stroke-dasharray=\"4 3\"/>\n<text x=\"" << x(double(backwardStep)) + 4
     << "\" y=\"" << y(0) - 6 << "\">backward →</text>\n";
  if (peakStep >= 0) // a dot on the peak's bar, labelled with its step
    os << "<circle cx=\"" << x(peakStep + 0.5) << "\" cy=\"" << y(stack[peakStep][Count - 1])
       << "\" r=\"3\" fill=\"black\"/>\n<text x=\"" << x(peakStep + 0.5) << "\" y=\""
       << y(stack[peakStep][Count - 1]) - 6 << "\" text-anchor=\"middle\">peak "
       << humanBytes(double(stack[peakStep][Count - 1])) << " (step " << peakStep << ")</text>\n";
  for (int c = 0; c < Count; ++c) {
    double ly = top + 20 * (Count - 1 - c);
    os << "<rect x=\"" << left + pw + 20 << "\" y=\"" << ly << "\" width=\"14\" height=\"14\" fill=\""
       << colour[c] << "\"/>\n<text x=\"" << left + pw + 40 << "\" y=\"" << ly + 11 << "\">"
       << name(c) << "</text>\n";
  }
  os << "</svg>\n";
  return os.str();
}

} // namespace otc
