#include "Trace.h"
#include "SafeFile.h"

#include <cstdio>

namespace otc {

void Trace::span(std::string name, Lane lane, double begin) {
  if (on && spans.size() < kMaxSpans)
    spans.push_back({std::move(name), lane, begin, now()});
}

bool Trace::write(const std::string &path, std::string &error) const {
  std::vector<std::string> events;
  static const char *const lanes[] = {"compute", "all-reduce"};
  char line[192];
  for (int lane = 0; lane < 2; ++lane) {
    std::snprintf(line, sizeof line,
                  "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": %d, "
                  "\"args\": {\"name\": \"%s\"}}",
                  lane, lanes[lane]);
    events.push_back(line);
  }
  for (const Span &s : spans) {
    std::snprintf(line, sizeof line, "\", \"ph\": \"X\", \"pid\": 0, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f}",
                  int(s.lane), s.begin, s.end - s.begin);
    events.push_back("{\"name\": \"" + s.name + line); // the runtime's own names: no quoting
  }
  std::string text = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  for (size_t i = 0; i < events.size(); ++i)
    text += events[i] + (i + 1 < events.size() ? ",\n" : "\n");
  text += "]}\n";
  return replaceFile(path, 0666, [&](int fd) { return writeAll(fd, text.data(), text.size()); },
                     error);
}

} // namespace otc
