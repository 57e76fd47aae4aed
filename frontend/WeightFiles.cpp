// A model parsed around its large tensors, and mapped tensor bytes
// (WeightFiles.h).
#include "WeightFiles.h"

#include <cstdlib>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace otc {
namespace {

constexpr uint64_t kLeftInFile = 64 * 1024;

// Field numbers of onnx.proto, and protobuf's wire types.
enum : uint32_t { kModelGraph = 7, kGraphInitializer = 5 };
enum : uint32_t { kTensorRawData = 9, kTensorExternalData = 13, kTensorDataLocation = 14 };
enum : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

/// A read-only mapping of a whole regular file, or an empty view.
std::string_view mapFile(const std::string &path, bool followLinks) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followLinks ? 0 : O_NOFOLLOW));
  struct stat st;
  void *p = MAP_FAILED;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    p = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  if (fd >= 0)
    close(fd);
  return p == MAP_FAILED ? std::string_view()
                         : std::string_view(static_cast<const char *>(p), size_t(st.st_size));
}

bool varint(const char *&p, const char *end, uint64_t &v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    unsigned char b = static_cast<unsigned char>(*p++);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80))
      return true;
  }
  return false;
}

void putVarint(std::string &out, uint64_t v) {
  for (; v >= 0x80; v >>= 7)
    out += char(v | 0x80);
  out += char(v);
}

/// One field: its number, wire type and, for bytes, the payload.
struct Field {
  uint32_t number = 0, type = 0;
  const char *begin = nullptr, *end = nullptr; // the whole field, tag included
  std::string_view payload;
};

/// The next field at `p`; false at a malformed one (groups included).
bool nextField(const char *&p, const char *end, Field &f) {
  f.begin = p;
  uint64_t tag, n;
  if (!varint(p, end, tag) || tag >> 3 == 0 || tag >> 3 > UINT32_MAX)
    return false;
  f.number = uint32_t(tag >> 3);
  f.type = uint32_t(tag & 7);
  switch (f.type) {
  case kVarint:
    if (!varint(p, end, n))
      return false;
    break;
  case kFixed64:
  case kFixed32: {
    size_t width = f.type == kFixed64 ? 8 : 4;
    if (size_t(end - p) < width)
      return false;
    p += width;
    break;
  }
  case kBytes:
    if (!varint(p, end, n) || n > uint64_t(end - p))
      return false;
    f.payload = std::string_view(p, size_t(n));
    p += n;
    break;
  default:
    return false;
  }
  f.end = p;
  return true;
}

void putBytesField(std::string &out, uint32_t number, std::string_view payload) {
  putVarint(out, uint64_t(number) << 3 | kBytes);
  putVarint(out, payload.size());
  out.append(payload);
}

/// A TensorProto whose one large raw_data stays in the file: the other
/// fields, then external data naming the bytes. Tensors that already say
/// where their data is are copied as they are, for the checks to judge.
bool tensor(std::string_view in, const char *base, const std::string &location,
            std::string &out) {
  const char *p = in.data(), *end = p + in.size();
  Field f, raw;
  int raws = 0;
  bool placed = false;
  while (p < end) {
    if (!nextField(p, end, f))
      return false;
    if (f.number == kTensorRawData && f.type == kBytes)
      raw = f, ++raws;
    placed |= f.number == kTensorExternalData || f.number == kTensorDataLocation;
  }
  if (raws != 1 || placed || raw.payload.size() < kLeftInFile) {
    out.append(in);
    return true;
  }
  out.append(in.data(), raw.begin);
  out.append(raw.end, end);
  putVarint(out, uint64_t(kTensorDataLocation) << 3 | kVarint);
  putVarint(out, onnx::TensorProto::EXTERNAL);
  auto entry = [&](const char *key, const std::string &value) {
    std::string kv;
    putBytesField(kv, 1, key);
    putBytesField(kv, 2, value);
    putBytesField(out, kTensorExternalData, kv);
  };
  entry("location", location);
  entry("offset", std::to_string(raw.payload.data() - base));
  entry("length", std::to_string(raw.payload.size()));
  entry(kLiftedKey, "1");
  return true;
}

/// The message `in` with each field `number` (a message) rewritten by
/// `inner`.
template <class Inner>
bool rewrite(std::string_view in, uint32_t number, std::string &out, Inner inner) {
  const char *p = in.data(), *end = p + in.size();
  Field f;
  while (p < end) {
    if (!nextField(p, end, f))
      return false;
    if (f.number != number || f.type != kBytes) {
      out.append(f.begin, f.end);
      continue;
    }
    std::string body;
    if (!inner(f.payload, body))
      return false;
    putBytesField(out, number, body);
  }
  return true;
}

} // namespace

bool parseLeavingWeights(const std::string &path, onnx::ModelProto &model) {
  std::string_view file = mapFile(path, true);
  if (file.empty())
    return false;
  struct Unmap {
    std::string_view f;
    ~Unmap() { munmap(const_cast<char *>(f.data()), f.size()); }
  } unmap{file};
  size_t slash = path.rfind('/');
  std::string location = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string skeleton;
  bool ok = rewrite(file, kModelGraph, skeleton, [&](std::string_view graph, std::string &out) {
    return rewrite(graph, kGraphInitializer, out, [&](std::string_view t, std::string &o) {
      return tensor(t, file.data(), location, o);
    });
  });
  return ok && skeleton.size() <= size_t(INT32_MAX) && model.ParseFromString(skeleton);
}

TensorBytes::~TensorBytes() {
  for (auto &[location, bytes] : mapped)
    if (!bytes.empty())
      munmap(const_cast<char *>(bytes.data()), bytes.size());
}

std::string_view TensorBytes::of(const onnx::TensorProto &t, size_t size) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL)
    return t.has_raw_data() && t.raw_data().size() == size ? std::string_view(t.raw_data())
                                                           : std::string_view();
  // checkModel has validated the location (inside the folder), the offset
  // and the length; the file is mapped as it is now.
  std::string location;
  uint64_t offset = 0;
  for (const auto &kv : t.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = std::strtoull(kv.value().c_str(), nullptr, 10);
  }
  auto it = mapped.find(location);
  if (it == mapped.end())
    it = mapped.emplace(location, mapFile(dir + "/" + location, true)).first;
  std::string_view file = it->second;
  if (offset > file.size() || size > file.size() - offset)
    return {};
  return file.substr(size_t(offset), size);
}

} // namespace otc
