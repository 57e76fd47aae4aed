#include "ModelFile.h"

#include "SafeFile.h"
#include "otc/runtime/abi.h"
#include "onnx/onnx_pb.h"

#include "Hash.h"

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

} // namespace

bool readInitializers(const std::map<std::string, int64_t> &counts,
                      std::map<std::string, std::vector<float>> &out,
                      std::string &error) {
  onnx::ModelProto model;
  if (!loadEmbedded(model, error))
    return false;
  for (const auto &t : model.graph().initializer()) {
    auto want = counts.find(t.name());
    if (want == counts.end() || out.count(t.name()))
      continue;
    if (t.data_type() != onnx::TensorProto::FLOAT) {
      error = "initializer '" + t.name() + "' is not float32";
      return false;
    }
    // otc compile checked these sizes; a mismatch means the executable's
    // embedded model is not the one it was compiled from.
    int64_t have = t.has_raw_data() ? int64_t(t.raw_data().size() / sizeof(float))
                                    : int64_t(t.float_data_size());
    if (have != want->second ||
        (t.has_raw_data() && t.raw_data().size() % sizeof(float) != 0)) {
      error = "initializer '" + t.name() + "' holds " + std::to_string(have) +
              " values in the embedded model, not " + std::to_string(want->second);
      return false;
    }
    std::vector<float> &v = out[t.name()];
    if (t.has_raw_data()) {
      v.resize(have);
      std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
    } else {
      v.assign(t.float_data().begin(), t.float_data().end());
    }
  }
  for (const auto &n : counts)
    if (!out.count(n.first)) {
      error = "initializer '" + n.first + "' is missing from the embedded model";
      return false;
    }
  return true;
}

namespace {

std::string shapeText(const int64_t *dims, size_t n) {
  std::string t = "[";
  for (size_t i = 0; i < n; ++i)
    t += (i ? ", " : "") + std::to_string(dims[i]);
  return t + "]";
}

/// The bytes of an external-data tensor: a regular file inside `dir` (no
/// absolute path, no "..", no symbolic link at the end), exactly `bytes`.
bool readExternal(const onnx::TensorProto &t, const std::string &dir, size_t bytes,
                  std::vector<float> &v, std::string &error) {
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
  v.resize(bytes / sizeof(float));
  bool ok = offset <= st.st_size && (long long)bytes <= st.st_size - offset &&
            readAllAt(fd, reinterpret_cast<char *>(v.data()), bytes, offset);
  close(fd);
  if (!ok)
    error = where + " holds too few bytes for " + std::to_string(bytes) + " at offset " +
            std::to_string(offset);
  return ok;
}

} // namespace

bool readInitializersFrom(const std::string &path,
                          const std::map<std::string, std::vector<int64_t>> &shapes,
                          std::map<std::string, std::vector<float>> &out, uint64_t &hash,
                          std::string &error) {
  std::string what = "--init '" + path.substr(0, 200) + "'";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = what + ": " + (fd < 0 ? std::strerror(errno) : "not a regular file");
    if (fd >= 0)
      close(fd);
    return false;
  }
  onnx::ModelProto model;
  bool parsed = model.ParseFromFileDescriptor(fd);
  close(fd);
  if (!parsed) {
    error = what + " is not an ONNX model (it does not parse)";
    return false;
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash ? slash : 1);
  for (const auto &t : model.graph().initializer()) {
    auto want = shapes.find(t.name());
    if (want == shapes.end() || out.count(t.name()))
      continue;
    const std::vector<int64_t> &shape = want->second;
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
    std::vector<float> &v = out[t.name()];
    size_t bytes = size_t(count) * sizeof(float);
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      if (!readExternal(t, dir, bytes, v, error)) {
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
  }
  hash = 0xcbf29ce484222325ull;
  for (const auto &[name, shape] : shapes) {
    auto it = out.find(name);
    if (it == out.end()) {
      error = what + " has no initializer '" + name + "', a parameter of the compiled model";
      return false;
    }
    hash = fingerprint(name.data(), name.size(), hash);
    hash = fingerprint(it->second.data(), it->second.size() * sizeof(float), hash);
  }
  return true;
}

bool writeTrainedModel(const std::string &path,
                       const std::map<std::string, std::vector<float>> &values,
                       std::string &error) {
  onnx::ModelProto model;
  if (!loadEmbedded(model, error))
    return false;
  for (auto &t : *model.mutable_graph()->mutable_initializer()) {
    auto it = values.find(t.name());
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
