#include "ModelChecks.h"
#include "WeightFiles.h"

#include "otc/runtime/limits.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace otc {
namespace {

using onnx::TensorProto;

} // namespace

int64_t elementSize(int type) {
  switch (type) {
  case TensorProto::UINT8: case TensorProto::INT8: case TensorProto::BOOL:
    return 1;
  case TensorProto::UINT16: case TensorProto::INT16:
  case TensorProto::FLOAT16: case TensorProto::BFLOAT16:
    return 2;
  case TensorProto::FLOAT: case TensorProto::INT32: case TensorProto::UINT32:
    return 4;
  case TensorProto::INT64: case TensorProto::UINT64: case TensorProto::DOUBLE:
  case TensorProto::COMPLEX64:
    return 8;
  case TensorProto::COMPLEX128:
    return 16;
  default:
    return 0;
  }
}

namespace {

/// How many values of each typed field a tensor of `type` with `count`
/// elements holds (onnx.proto: which field carries which type).
struct TypedCounts {
  int64_t floats = 0, int32s = 0, int64s = 0, doubles = 0, uint64s = 0;
};

TypedCounts expectedCounts(int type, int64_t count) {
  TypedCounts c;
  switch (type) {
  case TensorProto::FLOAT: c.floats = count; break;
  case TensorProto::COMPLEX64: c.floats = 2 * count; break;
  case TensorProto::INT64: c.int64s = count; break;
  case TensorProto::DOUBLE: c.doubles = count; break;
  case TensorProto::COMPLEX128: c.doubles = 2 * count; break;
  case TensorProto::UINT32: case TensorProto::UINT64: c.uint64s = count; break;
  default: c.int32s = count; break; // the 8- and 16-bit types, bool, int32
  }
  return c;
}

/// A non-negative decimal integer, or -1.
int64_t parseCount(const std::string &s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::strtoll(s.c_str(), nullptr, 10);
}

class Checker {
public:
  Checker(const std::string &modelDir, const llvm::StringSet<> &leave, std::string &error,
          const std::string &ownName)
      : modelDir(modelDir), ownName(ownName), leave(leave), error(error) {}

  bool graph(onnx::GraphProto &g, int depth);
  bool node(onnx::NodeProto &n, int depth);

private:
  bool fail(const std::string &message) {
    error = message;
    return false;
  }
  bool name(const std::string &n, const std::string &what, bool value);
  bool tensor(TensorProto &t, const std::string &what);
  bool external(TensorProto &t, const std::string &what, int64_t bytes);
  bool valueInfo(const onnx::ValueInfoProto &v, const char *kind);
  /// Rank, sign and boundedVolume() of `dims`.
  bool shape(const int64_t *dims, size_t rank, const std::string &what);

  static constexpr int64_t kMaxInlineBytes = INT32_MAX;
  std::string modelDir, ownName;
  const llvm::StringSet<> &leave; // main-graph initializers whose data stays put
  bool atTop = false;             // checking the main graph's initializers
  std::string &error;
  int64_t externalBytes = 0;
};

bool Checker::name(const std::string &n, const std::string &what, bool value) {
  if (n.size() > OTC_MAX_NAME_BYTES)
    return fail(what + " has a name of " + std::to_string(n.size()) +
                " bytes, more than the limit of " + std::to_string(OTC_MAX_NAME_BYTES));
  // Value names become file names, messages and string literals: no control
  // bytes (a NUL would also make two names one).
  if (value)
    for (unsigned char c : n)
      if (c < 0x20 || c == 0x7f)
        return fail(what + " has a control character in its name");
  return true;
}

bool Checker::shape(const int64_t *dims, size_t rank, const std::string &what) {
  if (rank > OTC_MAX_RANK)
    return fail(what + " has rank " + std::to_string(rank) + ", more than the limit of " +
                std::to_string(OTC_MAX_RANK));
  for (size_t i = 0; i < rank; ++i)
    if (dims[i] < 0)
      return fail(what + " has a negative dimension " + std::to_string(dims[i]) +
                  " at axis " + std::to_string(i));
  if (boundedVolume(dims, rank) < 0)
    return fail(what + " has more than " + std::to_string(OTC_MAX_ELEMENTS) +
                " elements, the limit of one tensor");
  return true;
}

bool Checker::tensor(TensorProto &t, const std::string &what) {
  if (!name(t.name(), what, true) || !shape(t.dims().data(), t.dims_size(), what))
    return false;
  int64_t count = 1;
  for (int64_t d : t.dims())
    count *= d; // no overflow: boundedVolume() bounds the nonzero dims

  int64_t size = elementSize(t.data_type());
  if (size == 0)
    return fail(what + " has data type " +
                (TensorProto::DataType_IsValid(t.data_type())
                     ? TensorProto::DataType_Name(TensorProto::DataType(t.data_type()))
                     : std::to_string(t.data_type())) +
                ", which otc does not support");
  int64_t bytes = count * size; // count <= 2^36 and size <= 16: no overflow
  if (t.has_segment())
    return fail(what + " is a segment of a tensor, which otc does not support");
  if (t.data_location() == TensorProto::EXTERNAL) {
    if (!external(t, what, bytes))
      return false;
  } else if (t.external_data_size() > 0) {
    return fail(what + " lists external data but does not say its data is external");
  }

  bool elsewhere = t.has_raw_data() || t.data_location() == TensorProto::EXTERNAL;
  TypedCounts want = elsewhere ? TypedCounts() : expectedCounts(t.data_type(), count);
  auto check = [&](int64_t have, int64_t expected, const char *field) {
    if (have == expected)
      return true;
    return fail(what + " holds " + std::to_string(have) + " values in " + field +
                (expected ? " for " + std::to_string(count) + " elements"
                          : ", which its data type does not use") +
                (t.has_raw_data() ? " besides raw_data" : ""));
  };
  if (!check(t.float_data_size(), want.floats, "float_data") ||
      !check(t.int32_data_size(), want.int32s, "int32_data") ||
      !check(t.int64_data_size(), want.int64s, "int64_data") ||
      !check(t.double_data_size(), want.doubles, "double_data") ||
      !check(t.uint64_data_size(), want.uint64s, "uint64_data") ||
      !check(t.string_data_size(), 0, "string_data"))
    return false;
  if (t.has_raw_data() && int64_t(t.raw_data().size()) != bytes)
    return fail(what + " holds " + std::to_string(t.raw_data().size()) +
                " bytes of raw_data, but its shape needs " + std::to_string(bytes));
  return true;
}

/// Reads the bytes an external-data tensor names, which must lie in a
/// regular file inside the model's folder, and makes them inline.
bool Checker::external(TensorProto &t, const std::string &what, int64_t bytes) {
  if (modelDir.empty())
    return fail(what + " uses external data, which needs the model's folder");
  std::string location;
  int64_t offset = 0, length = -1;
  bool lifted = false; // inline raw_data that import left in the model's file
  for (const auto &kv : t.external_data()) {
    lifted |= kv.key() == kLiftedKey;
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      int64_t v = parseCount(kv.value());
      if (v < 0)
        return fail(what + " has an external-data " + kv.key() + " of " +
                    quoted(kv.value()) + ", not a byte count");
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  std::string where = "external data " + quoted(location) + " of " + what;
  bool load = !(atTop && leave.contains(t.name()));
  if (location.empty() || location.size() > PATH_MAX)
    return fail(what + " uses external data without a valid location");
  if (location[0] == '/' || location.find('\0') != std::string::npos)
    return fail(where + " must be a path relative to the model's folder");
  for (size_t b = 0; b <= location.size();) {
    size_t e = location.find('/', b);
    if (e == std::string::npos)
      e = location.size();
    if (location.compare(b, e - b, "..") == 0)
      return fail(where + " leaves the model's folder");
    b = e + 1;
  }
  // Symbolic links may not lead out of the folder either, but for the
  // model's own file, which the user named (a model in Hugging Face's cache
  // is a link into its blobs), where import's parse left a large tensor.
  char *dir = realpath(modelDir.c_str(), nullptr);
  char *file = realpath((modelDir + "/" + location).c_str(), nullptr);
  std::string realDir = dir ? dir : "", realFile = file ? file : "";
  std::free(dir);
  std::free(file);
  if (realFile.empty())
    return fail(where + " cannot be opened");
  std::string prefix = realDir == "/" ? "/" : realDir + "/";
  bool own = lifted && !ownName.empty() && location == ownName;
  if (!own && (realDir.empty() || realFile.compare(0, prefix.size(), prefix) != 0))
    return fail(where + " leaves the model's folder");
  // Non-blocking, so a FIFO is refused below instead of waited on.
  int fd = open(realFile.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0)
      close(fd);
    return fail(where + " is not a regular file");
  }
  bool ok = true;
  if (length >= 0 && length != bytes)
    ok = lifted ? fail(what + " holds " + std::to_string(length) +
                       " bytes of raw_data, but its shape needs " + std::to_string(bytes))
                : fail(where + " has length " + std::to_string(length) +
                       ", but the tensor's shape needs " + std::to_string(bytes) + " bytes");
  else if (offset > st.st_size || bytes > st.st_size - offset)
    ok = fail(where + " holds " + std::to_string(st.st_size) + " bytes, too few for " +
              std::to_string(bytes) + " at offset " + std::to_string(offset));
  // The model with its data inline must fit one protobuf (2 GiB); checked
  // before allocating, so many tensors naming one large file cannot exhaust
  // memory.
  if (ok && load && bytes > kMaxInlineBytes - externalBytes)
    ok = fail(where + " brings the model past 2 GiB, the most one ONNX file carries");
  std::string data;
  if (ok && load) {
    externalBytes += bytes;
    data.resize(bytes);
    for (int64_t done = 0; ok && done < bytes;) {
      ssize_t n = pread(fd, &data[done], bytes - done, offset + done);
      if (n <= 0)
        ok = fail(where + " cannot be read");
      done += n > 0 ? n : 0;
    }
  }
  close(fd);
  if (!ok || !load)
    return ok;
  t.clear_external_data();
  t.set_data_location(TensorProto::DEFAULT);
  t.set_raw_data(std::move(data));
  return true;
}

bool Checker::valueInfo(const onnx::ValueInfoProto &v, const char *kind) {
  std::string what = std::string(kind) + " " + quoted(v.name());
  if (!name(v.name(), what, true))
    return false;
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape())
    return true;
  const auto &declared = v.type().tensor_type().shape();
  std::vector<int64_t> dims; // symbolic dims count as 1
  for (const auto &d : declared.dim())
    dims.push_back(d.has_dim_value() ? d.dim_value() : 1);
  return shape(dims.data(), dims.size(), what);
}

bool Checker::graph(onnx::GraphProto &g, int depth) {
  if (depth > 16)
    return fail("subgraphs nest more than 16 deep");
  if (g.sparse_initializer_size() > 0)
    return fail("sparse initializer " + quoted(g.sparse_initializer(0).values().name()) +
                " is not supported");
  atTop = depth == 0;
  for (auto &t : *g.mutable_initializer())
    if (!tensor(t, "initializer " + quoted(t.name())))
      return false;
  atTop = false;
  for (const auto &v : g.input())
    if (!valueInfo(v, "input"))
      return false;
  for (const auto &v : g.output())
    if (!valueInfo(v, "output"))
      return false;
  for (const auto &v : g.value_info())
    if (!valueInfo(v, "value"))
      return false;
  for (auto &n : *g.mutable_node())
    if (!node(n, depth))
      return false;
  return true;
}

bool Checker::node(onnx::NodeProto &n, int depth) {
  std::string what = "node " + quoted(n.name().empty() && n.output_size() ? n.output(0) : n.name());
  if (!name(n.name(), what, false))
    return false;
  for (const auto &v : n.input())
    if (!name(v, what + " input " + quoted(v), true))
      return false;
  for (const auto &v : n.output())
    if (!name(v, what + " output " + quoted(v), true))
      return false;
  for (auto &a : *n.mutable_attribute()) {
    std::string attr = what + " attribute " + quoted(a.name());
    // ONNX's shape inference divides by every window op's strides.
    if (a.name() == "strides")
      for (int64_t v : a.ints())
        if (v < 1)
          return fail(attr + " holds " + std::to_string(v) + "; strides must be positive");
    if (a.has_sparse_tensor() || a.sparse_tensors_size() > 0)
      return fail(attr + " holds a sparse tensor, which otc does not support");
    if (a.has_t() && !tensor(*a.mutable_t(), attr))
      return false;
    for (auto &t : *a.mutable_tensors())
      if (!tensor(t, attr))
        return false;
    if (a.has_g() && !graph(*a.mutable_g(), depth + 1))
      return false;
    for (auto &sub : *a.mutable_graphs())
      if (!graph(sub, depth + 1))
        return false;
  }
  return true;
}

} // namespace

int64_t boundedVolume(const int64_t *dims, size_t rank) {
  int64_t v = 1;
  for (size_t i = 0; i < rank; ++i)
    if (dims[i] < 0 || !otc_mul_count(v, std::max<int64_t>(dims[i], 1), &v) ||
        v > OTC_MAX_ELEMENTS)
      return -1;
  return v;
}

bool checkModel(onnx::ModelProto &model, const std::string &modelDir,
                const llvm::StringSet<> &leave, std::string &error,
                const std::string &ownName) {
  Checker c(modelDir, leave, error, ownName);
  bool ok = c.graph(*model.mutable_graph(), 0);
  for (auto &f : *model.mutable_functions())
    for (auto &n : *f.mutable_node())
      ok = ok && c.node(n, 1);
  return ok;
}

std::string quoted(const std::string &s, size_t kShown) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kShown; ++i) {
    unsigned char c = s[i];
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += char(c);
    } else {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (s.size() > kShown)
    out += "...(" + std::to_string(s.size()) + " bytes)";
  return out + "'";
}

std::string oneLine(const std::string &s) {
  constexpr size_t kShown = 400;
  std::string line;
  for (char c : s) {
    if ((unsigned char)c < 0x20)
      c = ' ';
    if (c == ' ' && !line.empty() && line.back() == ' ')
      continue;
    if (line.size() == kShown) {
      line += "...";
      break;
    }
    line += c;
  }
  return line;
}

} // namespace otc
