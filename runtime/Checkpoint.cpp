#include "Checkpoint.h"

#include "Backend.h"
#include "SafeFile.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace otc {
namespace {

const char kMagic[] = "otc-checkpoint 1\n";

[[noreturn]] void die(const std::string &m) { throw Fatal{m}; }

} // namespace

std::string checkpointFile(const std::string &dir) { return dir + "/checkpoint.otc"; }

// Layout: the magic line; "key value" lines of the config and the position,
// each value up to the end of its line; "tensor NAME COUNT" lines; "end";
// then the tensors' float32 bytes in the order listed.
void saveCheckpoint(const std::string &dir, const Checkpoint &c) {
  if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    die("cannot create the checkpoint folder '" + dir + "': " + std::strerror(errno));
  std::ostringstream head;
  head << kMagic;
  for (const auto &[k, v] : c.config)
    head << "config " << k << " " << v << "\n";
  char scale[32];
  std::snprintf(scale, sizeof scale, "%a", double(c.scale));
  char first[32];
  std::snprintf(first, sizeof first, "%a", c.firstLoss);
  head << "next_step " << c.nextStep << "\nupdates " << c.updates << "\nskipped " << c.skipped
       << "\nscale " << scale << "\ngood_steps " << c.goodSteps << "\nhysteresis_left "
       << c.hysteresisLeft << "\nfirst_loss " << first << "\n";
  for (const auto &[name, v] : c.tensors)
    head << "tensor " << name << " " << v.size() << "\n";
  head << "end\n";
  std::string text = head.str();
  std::string error;
  bool ok = replaceFile(checkpointFile(dir), 0666, [&](int fd) {
    if (!writeAll(fd, text.data(), text.size()))
      return false;
    for (const auto &[name, v] : c.tensors)
      if (!writeAll(fd, reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float)))
        return false;
    return true;
  }, error);
  if (!ok)
    die("cannot write the checkpoint: " + error);
}

Checkpoint loadCheckpoint(const std::string &dir) {
  std::string path = checkpointFile(dir);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    die("--resume: no checkpoint at '" + path + "'");
  auto bad = [&](const std::string &why) -> Checkpoint {
    die("--resume: '" + path + "' is not a usable otc checkpoint: " + why);
  };
  std::string line;
  if (!std::getline(in, line) || line + "\n" != kMagic)
    return bad("it does not start with '" + std::string(kMagic, sizeof kMagic - 2) + "'");
  Checkpoint c;
  std::vector<std::pair<std::string, size_t>> order;
  bool ended = false;
  while (!ended && std::getline(in, line)) {
    std::istringstream l(line);
    std::string key;
    l >> key;
    std::string rest;
    std::getline(l >> std::ws, rest);
    try {
      if (key == "end") ended = true;
      else if (key == "config") {
        size_t sp = rest.find(' ');
        c.config[rest.substr(0, sp)] = sp == std::string::npos ? "" : rest.substr(sp + 1);
      } else if (key == "next_step") c.nextStep = std::stoll(rest);
      else if (key == "updates") c.updates = std::stoll(rest);
      else if (key == "skipped") c.skipped = std::stoll(rest);
      else if (key == "scale") c.scale = float(std::strtod(rest.c_str(), nullptr));
      else if (key == "good_steps") c.goodSteps = std::stoll(rest);
      else if (key == "hysteresis_left") c.hysteresisLeft = std::stoll(rest);
      else if (key == "first_loss") c.firstLoss = std::strtod(rest.c_str(), nullptr);
      else if (key == "tensor") {
        size_t sp = rest.rfind(' ');
        if (sp == std::string::npos)
          return bad("a malformed tensor line");
        size_t n = std::stoull(rest.substr(sp + 1));
        if (n > (size_t(1) << 40))
          return bad("a tensor of " + std::to_string(n) + " elements");
        order.push_back({rest.substr(0, sp), n});
      } else
        return bad("an unknown line '" + line.substr(0, 60) + "'");
    } catch (const std::exception &) {
      return bad("a malformed line '" + line.substr(0, 60) + "'");
    }
  }
  if (!ended)
    return bad("it is truncated");
  // Sized from the file before anything is allocated for it.
  std::streamoff at = in.tellg();
  in.seekg(0, std::ios::end);
  uint64_t left = uint64_t(in.tellg() - at), want = 0;
  in.seekg(at);
  for (const auto &entry : order)
    want += uint64_t(entry.second) * sizeof(float);
  if (want != left)
    return bad("it holds " + std::to_string(left) + " bytes of tensors, but lists " +
               std::to_string(want));
  for (const auto &[name, n] : order) {
    std::vector<float> &v = c.tensors[name];
    v.resize(n);
    if (!in.read(reinterpret_cast<char *>(v.data()), std::streamsize(n * sizeof(float))))
      return bad("it is truncated in tensor '" + name + "'");
  }
  if (in.peek() != std::char_traits<char>::eof())
    return bad("it has bytes after its last tensor");
  return c;
}

} // namespace otc
