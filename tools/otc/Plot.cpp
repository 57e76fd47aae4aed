// otc plot: a training run's metrics (./train --log) as an SVG picture.
#include "Plot.h"

#include "../../runtime/SafeFile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace otc {
namespace {

/// One point of one series.
struct Point {
  double step, value;
};

/// The numbers (and null, true, false as NaN, 1, 0) of one flat JSON
/// object per line, by key. False for a line that is not one.
bool parseLine(const std::string &line, std::map<std::string, double> &out) {
  size_t i = line.find_first_not_of(" \t\r");
  if (i == std::string::npos)
    return true; // a blank line
  if (line[i] != '{')
    return false;
  ++i;
  while (true) {
    i = line.find_first_not_of(" \t", i);
    if (i == std::string::npos)
      return false;
    if (line[i] == '}')
      return true;
    if (line[i] != '"')
      return false;
    size_t end = line.find('"', i + 1);
    if (end == std::string::npos)
      return false;
    std::string key = line.substr(i + 1, end - i - 1);
    i = line.find_first_not_of(" \t", end + 1);
    if (i == std::string::npos || line[i] != ':')
      return false;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string::npos)
      return false;
    double v = NAN;
    if (line.compare(i, 4, "null") == 0) {
      i += 4;
    } else if (line.compare(i, 4, "true") == 0) {
      v = 1, i += 4;
    } else if (line.compare(i, 5, "false") == 0) {
      v = 0, i += 5;
    } else {
      char *stop = nullptr;
      v = std::strtod(line.c_str() + i, &stop);
      if (stop == line.c_str() + i)
        return false;
      i = size_t(stop - line.c_str());
    }
    out[key] = v;
    i = line.find_first_not_of(" \t", i);
    if (i != std::string::npos && line[i] == ',')
      ++i;
  }
}

/// Tick values 1, 2 or 5 times a power of ten apart, about `count` of them.
std::vector<double> ticks(double lo, double hi, int count) {
  double span = hi - lo;
  if (!(span > 0))
    return {lo};
  double raw = span / count, p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = raw / p < 1.5 ? p : raw / p < 3.5 ? 2 * p : raw / p < 7.5 ? 5 * p : 10 * p;
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return t;
}

std::string number(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", v);
  return s;
}

std::string escaped(const std::string &s) {
  std::string out;
  for (char c : s)
    out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

struct Series {
  std::string label, colour;
  std::vector<Point> points;
  bool dots = false; // sparse (evaluations): marked points
};

/// One panel: its series against step, with axes, ticks and a legend.
void panel(std::ostringstream &svg, double top, const std::string &title,
           const std::vector<Series> &series, double x0, double x1, bool logY) {
  const double left = 80, width = 760, height = 150;
  double lo = INFINITY, hi = -INFINITY;
  for (const Series &s : series)
    for (const Point &p : s.points)
      if (std::isfinite(p.value) && (!logY || p.value > 0)) {
        double v = logY ? std::log2(p.value) : p.value;
        lo = std::min(lo, v), hi = std::max(hi, v);
      }
  if (!std::isfinite(lo))
    lo = 0, hi = 1;
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi)))
    lo -= 0.5, hi += 0.5;
  else if (!logY) {
    double pad = 0.05 * (hi - lo);
    lo -= pad, hi += pad;
  }
  auto X = [&](double s) { return left + (x1 > x0 ? (s - x0) / (x1 - x0) : 0.5) * width; };
  auto Y = [&](double v) { return top + height - (v - lo) / (hi - lo) * height; };
  svg << "<text x=\"" << left << "\" y=\"" << top - 8 << "\" font-weight=\"bold\">" << title
      << "</text>\n";
  svg << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << width << "\" height=\""
      << height << "\" fill=\"none\" stroke=\"#888\"/>\n";
  for (double t : ticks(lo, hi, 4)) {
    svg << "<line x1=\"" << left << "\" x2=\"" << left + width << "\" y1=\"" << Y(t) << "\" y2=\""
        << Y(t) << "\" stroke=\"#eee\"/>\n<text x=\"" << left - 6 << "\" y=\"" << Y(t) + 4
        << "\" text-anchor=\"end\">" << (logY ? "2^" + number(t) : number(t)) << "</text>\n";
  }
  for (double t : ticks(x0, x1, 8))
    svg << "<text x=\"" << X(t) << "\" y=\"" << top + height + 14
        << "\" text-anchor=\"middle\">" << number(t) << "</text>\n";
  double legend = left + width;
  for (auto it = series.rbegin(); it != series.rend(); ++it) {
    const Series &s = *it;
    std::string path;
    bool pen = false;
    for (const Point &p : s.points) {
      bool ok = std::isfinite(p.value) && (!logY || p.value > 0);
      if (!ok) {
        pen = false; // a skipped step breaks the line
        continue;
      }
      double v = logY ? std::log2(p.value) : p.value;
      char seg[64];
      std::snprintf(seg, sizeof seg, "%s%.1f %.1f ", pen ? "L" : "M", X(p.step), Y(v));
      path += seg;
      pen = true;
      if (s.dots)
        svg << "<circle cx=\"" << X(p.step) << "\" cy=\"" << Y(v) << "\" r=\"3\" fill=\""
            << s.colour << "\"/>\n";
    }
    svg << "<path d=\"" << path << "\" fill=\"none\" stroke=\"" << s.colour
        << "\" stroke-width=\"1.5\"/>\n";
    legend -= 8 + 7 * double(s.label.size());
    svg << "<text x=\"" << legend << "\" y=\"" << top - 8 << "\" fill=\"" << s.colour << "\">"
        << s.label << "</text>\n";
  }
}

} // namespace

int plotCommand(int argc, char **argv) {
  std::string input, output, title = "training run";
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("usage: otc plot METRICS.jsonl -o RUN.svg [--title TEXT]\n\n"
                  "  METRICS.jsonl   a training executable's --log\n"
                  "  -o RUN.svg      the picture: loss and evaluation loss, learning rate,\n"
                  "                  gradient norm and loss scale against step (required)\n"
                  "  --title TEXT    its title (default: training run)\n");
      return 0;
    }
    if ((a == "-o" || a == "--title") && i + 1 < argc)
      (a == "-o" ? output : title) = argv[++i];
    else if (a.rfind("-", 0) != 0 && input.empty())
      input = a;
    else {
      std::fprintf(stderr, "otc: error: plot: unexpected argument '%s' (see otc plot --help)\n",
                   a.substr(0, 200).c_str());
      return 2;
    }
  }
  if (input.empty() || output.empty()) {
    std::fprintf(stderr, "otc: error: plot needs METRICS.jsonl and -o RUN.svg (see otc plot --help)\n");
    return 2;
  }
  std::ifstream in(input);
  if (!in) {
    std::fprintf(stderr, "otc: error: cannot read '%s'\n", input.c_str());
    return 1;
  }
  Series loss{"loss", "#1f77b4"}, eval{"eval loss", "#ff7f0e", {}, true}, lr{"lr", "#2ca02c"},
      norm{"grad norm", "#9467bd"}, scale{"loss scale", "#d62728"};
  std::vector<double> skipped;
  double x0 = INFINITY, x1 = -INFINITY;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::map<std::string, double> row;
    if (!parseLine(line, row) || (!row.empty() && !row.count("step"))) {
      std::fprintf(stderr, "otc: error: '%s' line %d is not a metrics line of ./train --log\n",
                   input.c_str(), n);
      return 1;
    }
    if (row.empty())
      continue;
    double s = row["step"];
    x0 = std::min(x0, s), x1 = std::max(x1, s);
    auto add = [&](Series &to, const char *key) {
      if (auto it = row.find(key); it != row.end())
        to.points.push_back({s, it->second});
    };
    add(loss, "loss"), add(eval, "eval_loss"), add(lr, "lr"), add(norm, "grad_norm");
    add(scale, "loss_scale");
    if (row.count("skipped") && row["skipped"] == 1)
      skipped.push_back(s);
  }
  if (loss.points.empty() && eval.points.empty()) {
    std::fprintf(stderr, "otc: error: '%s' holds no steps\n", input.c_str());
    return 1;
  }
  std::vector<std::pair<std::string, std::vector<Series>>> panels = {{"loss", {loss, eval}},
                                                                      {"learning rate", {lr}}};
  if (!norm.points.empty())
    panels.push_back({"gradient norm (before clipping)", {norm}});
  if (!scale.points.empty())
    panels.push_back({"loss scale", {scale}});
  const double panelHeight = 200, top = 60;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"880\" height=\""
      << top + panelHeight * double(panels.size()) + 10
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
         "fill=\"white\"/>\n<text x=\"80\" y=\"24\" font-size=\"16\" font-weight=\"bold\">"
      << escaped(title) << "</text>\n";
  std::string skips = skipped.empty() ? "" : ", " + std::to_string(skipped.size()) + " skipped";
  svg << "<text x=\"80\" y=\"42\" fill=\"#555\">steps " << number(x0) << " to " << number(x1)
      << skips << "</text>\n";
  for (size_t p = 0; p < panels.size(); ++p)
    panel(svg, top + 20 + panelHeight * double(p), panels[p].first, panels[p].second, x0, x1,
          panels[p].first == "loss scale");
  svg << "</svg>\n";
  std::string text = svg.str(), error;
  if (!replaceFile(output, 0666, [&](int fd) { return writeAll(fd, text.data(), text.size()); },
                   error)) {
    std::fprintf(stderr, "otc: error: -o: %s\n", error.c_str());
    return 1;
  }
  std::fprintf(stderr, "otc: wrote %s (%zu steps)\n", output.c_str(), loss.points.size());
  return 0;
}

} // namespace otc
