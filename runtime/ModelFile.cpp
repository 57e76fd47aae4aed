#include "ModelFile.h"

#include "SafeFile.h"
#include "otc/runtime/abi.h"
#include "onnx/onnx_pb.h"

#include "otc/runtime/hash.h"

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace otc {
namespace {

bool loadEmbedded(onnx::ModelProto &model, std::string &error) {
  if (!model.ParseFromArray(otc_model_begin, int(otc_model_end - otc_model_begin))) {
    error = "the embedded ONNX model does not parse";
    return false;
  }
  return true;
}

std::string shapeText(const int64_t *dims, size_t n) {
  std::string t = "[";
  for (size_t i = 0; i < n; ++i)
    t += (i ? ", " : "") + std::to_string(dims[i]);
  return t + "]";
}

/// The bytes of an external-data tensor: a regular file inside `dir` (no
/// absolute path, no "..", no symbolic link at the end), exactly `bytes`.
bool readExternal(const onnx::TensorProto &t, const std::string &dir, size_t bytes, char *dst,
                  std::string &error) {
  std::string location;
  long long offset = 0, length = -1;
  for (const auto &kv : t.external_data()) {
    char *end = nullptr;
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset" || kv.key() == "length") {
      long long n = std::strtoll(kv.value().c_str(), &end, 10);
      if (kv.value().empty() || *end || n < 0) {
        error = "initializer '" + t.name() + "' has an external-data " + kv.key() + " of '" +
                kv.value().substr(0, 40) + "'";
        return false;
      }
      (kv.key() == "offset" ? offset : length) = n;
    }
  }
  std::string where = "the external data '" + location.substr(0, 200) + "' of initializer '" +
                      t.name() + "'";
  bool escapes = location.empty() || location[0] == '/' ||
                 location.find('\0') != std::string::npos;
  for (size_t b = 0; !escapes && b <= location.size();) {
    size_t e = location.find('/', b);
    e = e == std::string::npos ? location.size() : e;
    escapes = location.compare(b, e - b, "..") == 0;
    b = e + 1;
  }
  if (escapes) {
    error = where + " is not a path inside the model's folder";
    return false;
  }
  if (length >= 0 && size_t(length) != bytes) {
    error = where + " has length " + std::to_string(length) + ", but its shape needs " +
            std::to_string(bytes) + " bytes";
    return false;
  }
  int fd = open((dir + "/" + location).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0)
      close(fd);
    error = where + " is not a regular file that can be opened";
    return false;
  }
  bool ok = offset <= st.st_size && (long long)bytes <= st.st_size - offset &&
            readAllAt(fd, dst, bytes, offset);
  close(fd);
  if (!ok)
    error = where + " holds too few bytes for " + std::to_string(bytes) + " at offset " +
            std::to_string(offset);
  return ok;
}

/// The metadata entry `key` of `model`, or "".
std::string metadata(const onnx::ModelProto &model, const char *key) {
  for (const auto &p : model.metadata_props())
    if (p.key() == key)
      return p.value();
  return "";
}

/// Reads the initializers named in `shapes` from `model` (external data
/// from `dir`), where a name the model lacks may be held under its source's
/// (`aliases`); `what` names the model in errors.
bool readFromModel(const onnx::ModelProto &model, const std::string &dir, const std::string &what,
                   const std::map<std::string, std::vector<int64_t>> &shapes,
                   const std::map<std::string, std::string> &aliases,
                   std::map<std::string, std::vector<float>> &out, uint64_t &hash,
                   std::string &error) {
  std::map<std::string, const onnx::TensorProto *> byName;
  for (const auto &t : model.graph().initializer())
    byName.emplace(t.name(), &t);
  hash = 0xcbf29ce484222325ull;
  for (const auto &[wanted, shape] : shapes) {
    auto found = byName.find(wanted);
    if (auto alias = aliases.find(wanted); found == byName.end() && alias != aliases.end())
      found = byName.find(alias->second);
    if (found == byName.end()) {
      error = what + " has no initializer '" + wanted + "', a parameter of the compiled model";
      return false;
    }
    const onnx::TensorProto &t = *found->second;
    std::string name = what + ": initializer '" + t.name() + "'";
    if (t.data_type() != onnx::TensorProto::FLOAT) {
      error = name + " is not float32";
      return false;
    }
    if (std::vector<int64_t>(t.dims().begin(), t.dims().end()) != shape) {
      error = name + " has shape " + shapeText(t.dims().data(), size_t(t.dims_size())) +
              ", where the compiled model's is " + shapeText(shape.data(), shape.size());
      return false;
    }
    int64_t count = 1;
    for (int64_t d : shape)
      count *= d;
    std::vector<float> &v = out[wanted];
    size_t bytes = size_t(count) * sizeof(float);
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      v.resize(size_t(count));
      if (!readExternal(t, dir, bytes, reinterpret_cast<char *>(v.data()), error)) {
        error = what + ": " + error;
        return false;
      }
    } else if (t.has_raw_data() && t.raw_data().size() == bytes) {
      v.resize(size_t(count));
      std::memcpy(v.data(), t.raw_data().data(), bytes);
    } else if (!t.has_raw_data() && t.float_data_size() == count) {
      v.assign(t.float_data().begin(), t.float_data().end());
    } else {
      error = name + " does not hold the " + std::to_string(count) + " values its shape needs";
      return false;
    }
    hash = fingerprint(wanted.data(), wanted.size(), hash);
    hash = fingerprint(v.data(), v.size() * sizeof(float), hash);
  }
  return true;
}

/// Parses the ONNX file at `path`; `what` names it in errors.
bool parseFile(const std::string &path, const std::string &what, const char *hint,
               onnx::ModelProto &model, std::string &error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = what + ": " + (fd < 0 ? std::strerror(errno) : "not a regular file") + hint;
    if (fd >= 0)
      close(fd);
    return false;
  }
  bool parsed = model.ParseFromFileDescriptor(fd);
  close(fd);
  if (!parsed)
    error = what + " is not an ONNX model (it does not parse)" + hint;
  return parsed;
}

std::string folderOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash ? slash : 1);
}

} // namespace

namespace {

/// The constants the embedded model leaves out (OTC_WEIGHTS_CONSTANTS_KEY),
/// once read: name -> bytes.
std::map<std::string, std::string> &leftOutConstants() {
  static std::map<std::string, std::string> values;
  return values;
}

struct LeftOut {
  std::string name;
  size_t bytes;
  std::string hash;
};

/// OTC_WEIGHTS_CONSTANTS_KEY's lines.
std::vector<LeftOut> leftOutList(const onnx::ModelProto &embedded) {
  std::vector<LeftOut> list;
  std::string lines = metadata(embedded, OTC_WEIGHTS_CONSTANTS_KEY);
  for (size_t b = 0, e; (e = lines.find('\n', b)) != std::string::npos; b = e + 1) {
    std::string line = lines.substr(b, e - b);
    size_t t1 = line.find('\t'), t2 = line.rfind('\t');
    if (t1 != std::string::npos && t2 > t1)
      list.push_back({line.substr(0, t1), size_t(std::strtoull(line.c_str() + t1 + 1, nullptr, 10)),
                      line.substr(t2 + 1)});
  }
  return list;
}

/// Reads the constants `list` names from `model` (the compiled-from file,
/// `what`, external data from `dir`), each checked against its hash; a
/// name the file lacks may be held under its source's (`aliases`: a copy
/// that import made of an Identity's input).
bool readLeftOut(const std::vector<LeftOut> &list, const onnx::ModelProto &model,
                 const std::string &dir, const std::string &what,
                 const std::map<std::string, std::string> &aliases, std::string &error) {
  std::map<std::string, const onnx::TensorProto *> byName;
  for (const auto &t : model.graph().initializer())
    byName.emplace(t.name(), &t);
  for (const auto &n : model.graph().node())
    if (n.op_type() == "Constant" && n.output_size() == 1)
      for (const auto &a : n.attribute())
        if (a.name() == "value" && a.has_t())
          byName.emplace(n.output(0), &a.t());
  for (const LeftOut &c : list) {
    auto found = byName.find(c.name);
    if (auto alias = aliases.find(c.name); found == byName.end() && alias != aliases.end())
      found = byName.find(alias->second);
    if (found == byName.end()) {
      error = what + " has no constant '" + c.name + "', which the compiled model has";
      return false;
    }
    const onnx::TensorProto &t = *found->second;
    std::string bytes;
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      bytes.resize(c.bytes);
      if (!readExternal(t, dir, c.bytes, bytes.data(), error)) {
        error = what + ": " + error;
        return false;
      }
    } else {
      bytes = t.raw_data();
    }
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx",
                  (unsigned long long)fingerprint(bytes.data(), bytes.size()));
    if (bytes.size() != c.bytes || c.hash != hash) {
      error = what + ": constant '" + c.name +
              "' is not the one the executable was compiled with (the file changed since; "
              "compile again to save the trained model)";
      return false;
    }
    leftOutConstants()[c.name] = std::move(bytes);
  }
  return true;
}

} // namespace

bool readInitialParameters(const std::string &init,
                           const std::map<std::string, std::vector<int64_t>> &shapes,
                           std::map<std::string, std::vector<float>> &out, uint64_t &hash,
                           std::string &error, bool constants) {
  onnx::ModelProto embedded;
  if (!loadEmbedded(embedded, error))
    return false;
  std::vector<LeftOut> list = constants ? leftOutList(embedded) : std::vector<LeftOut>();
  std::string compiled = metadata(embedded, OTC_WEIGHTS_FILE_KEY);
  const char *saving = " (a run that saves the model reads the constants the executable "
                       "leaves out from the model it was compiled from)";
  std::map<std::string, std::string> aliases;
  std::string lines = metadata(embedded, OTC_WEIGHTS_ALIASES_KEY);
  for (size_t b = 0, e; (e = lines.find('\n', b)) != std::string::npos; b = e + 1)
    if (size_t tab = lines.find('\t', b); tab < e)
      aliases[lines.substr(b, tab - b)] = lines.substr(tab + 1, e - tab - 1);
  if (!list.empty() && !init.empty()) {
    onnx::ModelProto model;
    std::string what = "the compiled model '" + compiled.substr(0, 4096) + "'";
    if (!parseFile(compiled, what, saving, model, error) ||
        !readLeftOut(list, model, folderOf(compiled), what, aliases, error))
      return false;
    list.clear();
  }
  std::string file = init.empty() ? compiled : init;
  if (file.empty()) // compiled with --embed-weights
    return readFromModel(embedded, "", "the embedded model", shapes, {}, out, hash, error);
  std::string what = (init.empty() ? "the compiled model '" : "--init '") +
                     file.substr(0, 4096) + "'";
  const char *hint = init.empty() ? " (the executable reads its initial parameters from the "
                                    "model it was compiled from: give another with --init "
                                    "MODEL.onnx, or compile with --embed-weights)"
                                  : "";
  onnx::ModelProto model;
  if (!parseFile(file, what, list.empty() ? hint : saving, model, error))
    return false;
  embedded.Clear(); // its graph may be large: the file's is read next
  return readFromModel(model, folderOf(file), what, shapes, aliases, out, hash, error) &&
         readLeftOut(list, model, folderOf(file), what, aliases, error);
}

/// The model file the embedded model names, or "" where it carries the
/// weights: parsed once (with --embed-weights the embedded model is large).
static const std::string &compiledWeightsFile() {
  static const std::string file = [] {
    onnx::ModelProto model;
    std::string error;
    return loadEmbedded(model, error) ? metadata(model, OTC_WEIGHTS_FILE_KEY) : std::string();
  }();
  return file;
}

bool checkSavable(int64_t parameterBytes, std::string &error) {
  int64_t bytes = int64_t(otc_model_end - otc_model_begin) +
                  (compiledWeightsFile().empty() ? 0 : parameterBytes);
  // Only a model that leaves the parameters out leaves constants out: an
  // embedded model that carries everything is not parsed again.
  onnx::ModelProto embedded;
  if (!compiledWeightsFile().empty() && !loadEmbedded(embedded, error))
    return false;
  for (const LeftOut &c : leftOutList(embedded))
    bytes += int64_t(c.bytes);
  if (bytes <= INT32_MAX)
    return true;
  error = "the trained model would hold " + std::to_string(bytes >> 20) +
          " MiB, more than the 2 GiB one ONNX file carries (keep the run with --checkpoint)";
  return false;
}

uint64_t compiledModelFingerprint() {
  size_t size = size_t(otc_model_end - otc_model_begin);
  onnx::ModelProto model;
  std::string error;
  if (compiledWeightsFile().empty() || !loadEmbedded(model, error))
    return fingerprint(otc_model_begin, size);
  auto &props = *model.mutable_metadata_props();
  props.erase(std::remove_if(props.begin(), props.end(),
                             [](const auto &p) { return p.key() == OTC_WEIGHTS_FILE_KEY; }),
              props.end());
  std::string bytes = model.SerializeAsString();
  return fingerprint(bytes.data(), bytes.size());
}

bool writeTrainedModel(const std::string &path,
                       const std::map<std::string, std::vector<float>> &values,
                       std::string &error) {
  onnx::ModelProto model;
  if (!loadEmbedded(model, error))
    return false;
  auto &props = *model.mutable_metadata_props();
  props.erase(std::remove_if(props.begin(), props.end(),
                             [](const auto &p) { return p.key().rfind(OTC_WEIGHTS_KEY_PREFIX, 0) == 0; }),
              props.end());
  for (auto &n : *model.mutable_graph()->mutable_node())
    if (n.op_type() == "Constant" && n.output_size() == 1)
      if (auto c = leftOutConstants().find(n.output(0)); c != leftOutConstants().end())
        for (auto &a : *n.mutable_attribute())
          if (a.name() == "value" && a.has_t())
            a.mutable_t()->set_raw_data(c->second);
  for (auto &t : *model.mutable_graph()->mutable_initializer()) {
    if (auto c = leftOutConstants().find(t.name()); c != leftOutConstants().end()) {
      t.set_raw_data(c->second);
      continue;
    }
    auto it = values.find(t.name());
    bool empty = !t.has_raw_data() && t.float_data_size() == 0 &&
                 t.data_location() != onnx::TensorProto::EXTERNAL;
    if (it == values.end() && empty) {
      int64_t count = 1;
      for (int64_t d : t.dims())
        count *= d;
      if (count > 0) { // a parameter whose values the executable does not embed
        error = "no values to save for initializer '" + t.name() + "'";
        return false;
      }
    }
    if (it == values.end())
      continue;
    t.clear_float_data();
    t.set_raw_data(std::string(reinterpret_cast<const char *>(it->second.data()),
                               it->second.size() * sizeof(float)));
  }
  return replaceFile(path, 0666,
                     [&](int fd) { return model.SerializeToFileDescriptor(fd); },
                     error);
}

} // namespace otc
