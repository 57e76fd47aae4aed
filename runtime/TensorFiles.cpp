// Tensors between disk and device storage (TensorFiles.h).
#include "TensorFiles.h"
#include "Backend.h"
#include "SafeFile.h"
#include "otc/runtime/kernel_support.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <new>
#include <cstring>
#include <unistd.h>

namespace otc {

std::string fileNameFor(const std::string &input) {
  std::string s = input;
  for (char &c : s)
    if (!std::isalnum((unsigned char)c) && c != '.' && c != '_' && c != '-')
      c = '_';
  return s + ".npy";
}

std::string TensorFileNames::claim(const char *tensor) {
  auto [seen, fresh] = owner.emplace(fileNameFor(tensor), tensor);
  if (!fresh)
    throw Fatal{std::string(role) + " '" + seen->second + "' and '" + tensor + "' would both " +
                verb + " '" + seen->first + "'; rename one in the model"};
  return seen->first;
}

std::string shapeText(const int64_t *dims, int rank) {
  std::string s = "[";
  for (int i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

int64_t elements(const otc_tensor_desc &d) {
  int64_t n = 1;
  for (int i = 0; i < d.rank; ++i)
    n *= d.shape[i];
  return n;
}

const char *npyDtypeFor(int dtype) {
  switch (dtype) {
  case OTC_I64: return "<i8";
  case OTC_BOOL: return "|b1";
  default: return "<f4";
  }
}

template <typename T>
static void widen(const char *src, int64_t n, int64_t *dst, const std::string &path,
                  int64_t first) {
  for (int64_t k = 0; k < n; ++k) {
    T x;
    std::memcpy(&x, src + k * sizeof(T), sizeof x);
    if constexpr (std::is_same_v<T, uint64_t>)
      if (x > uint64_t(INT64_MAX))
        throw Fatal{"'" + path + "' holds " + std::to_string(x) + " at element " +
                    std::to_string(first + k) + ", beyond the int64 range otc computes in"};
    dst[k] = int64_t(x);
  }
}

size_t integerBytes(const std::string &dtype) {
  if (dtype == "|i1" || dtype == "|u1")
    return 1;
  if (dtype == "<i2" || dtype == "<u2")
    return 2;
  if (dtype == "<i4" || dtype == "<u4")
    return 4;
  return dtype == "<i8" || dtype == "<u8" ? 8 : 0;
}

void widenInto(const std::string &dtype, const char *src, int64_t n, int64_t *dst,
               const std::string &path, int64_t first) {
  void (*w)(const char *, int64_t, int64_t *, const std::string &, int64_t) =
      dtype == "|i1" ? widen<int8_t>
      : dtype == "<i2" ? widen<int16_t>
      : dtype == "<i4" ? widen<int32_t>
      : dtype == "<i8" ? widen<int64_t>
      : dtype == "|u1" ? widen<uint8_t>
      : dtype == "<u2" ? widen<uint16_t>
      : dtype == "<u4" ? widen<uint32_t>
                       : widen<uint64_t>;
  w(src, n, dst, path, first);
}

void widenIntegers(NpyArray &a, const std::string &path) {
  size_t width = integerBytes(a.dtype);
  if (!width || a.dtype == "<i8")
    return;
  int64_t n = int64_t(a.data.size() / width);
  std::vector<char> out(n * sizeof(int64_t));
  widenInto(a.dtype, a.data.data(), n, reinterpret_cast<int64_t *>(out.data()), path, 0);
  a.data = std::move(out);
  a.dtype = "<i8";
}

size_t storageBytes(int dtype) {
  switch (dtype) {
  case OTC_F32: return 4;
  case OTC_F16:
  case OTC_BF16: return 2;
  case OTC_I64: return 8;
  default: return 1;
  }
}

static bool isFloatType(int dtype) {
  return dtype == OTC_F32 || dtype == OTC_F16 || dtype == OTC_BF16;
}

std::vector<char> toStorage(int dtype, const char *npyData, int64_t n) {
  if (!isFloatType(dtype))
    return std::vector<char>(npyData, npyData + n * storageBytes(dtype));
  std::vector<char> out(n * storageBytes(dtype));
  const float *f = reinterpret_cast<const float *>(npyData);
  for (int64_t k = 0; k < n; ++k) {
    float x;
    std::memcpy(&x, f + k, sizeof x);
    if (dtype == OTC_F32) reinterpret_cast<float *>(out.data())[k] = x;
    if (dtype == OTC_F16) otc_store(reinterpret_cast<otc_f16 *>(out.data()) + k, x);
    if (dtype == OTC_BF16) otc_store(reinterpret_cast<otc_bf16 *>(out.data()) + k, x);
  }
  return out;
}

std::vector<char> fromStorage(int dtype, const char *storage, int64_t n) {
  if (!isFloatType(dtype) || dtype == OTC_F32)
    return std::vector<char>(storage, storage + n * storageBytes(dtype));
  std::vector<char> out(n * 4);
  float *f = reinterpret_cast<float *>(out.data());
  for (int64_t k = 0; k < n; ++k)
    f[k] = dtype == OTC_F16 ? otc_ld(reinterpret_cast<const otc_f16 *>(storage)[k])
                            : otc_ld(reinterpret_cast<const otc_bf16 *>(storage)[k]);
  return out;
}

static std::string npyFileBytes(const char *descr, const std::vector<int64_t> &shape,
                                const std::vector<char> &data) {
  std::string dims = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    dims += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
  dims += ")";
  std::string header = "{'descr': '" + std::string(descr) +
                       "', 'fortran_order': False, 'shape': " + dims + ", }";
  while ((10 + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  return out + header + std::string(data.begin(), data.end());
}

void writeNpyFile(const std::string &path, int dtype, const std::vector<int64_t> &shape,
                  const std::vector<char> &data) {
  std::string bytes = npyFileBytes(npyDtypeFor(dtype), shape, data), error;
  if (!replaceFile(path, 0666, [&](int fd) { return writeAll(fd, bytes.data(), bytes.size()); },
                   error))
    throw Fatal{error};
}

void checkValues(const otc_tensor_desc &d, const NpyArray &a, const std::string &path,
                 bool requireFinite) {
  checkValues(d, a.dtype, a.data.data(), a.data.size(), a.shape.empty() ? 1 : a.shape[0], path,
              requireFinite);
}

void checkValues(const otc_tensor_desc &d, const std::string &dtype, const char *data,
                 size_t bytes, int64_t samples, const std::string &path, bool requireFinite,
                 int64_t firstSample) {
  if (requireFinite && dtype == "<f4") {
    size_t n = bytes / sizeof(float), perSample = samples ? n / samples : 1;
    for (size_t k = 0; k < n; ++k) {
      float x;
      std::memcpy(&x, data + k * sizeof x, sizeof x);
      if (!std::isfinite(x))
        throw Fatal{"'" + path + "' holds " + (std::isnan(x) ? "nan" : "inf") + " in sample " +
                    std::to_string(firstSample + int64_t(k / perSample)) +
                    "; training needs finite data"};
    }
  }
  size_t width = integerBytes(dtype);
  if (d.num_classes <= 0 || !width)
    return;
  // Every element: gather indices may be [N, T] (token sequences). Narrower
  // integers are widened a chunk at a time.
  int64_t n = int64_t(bytes / width);
  int64_t perSample = samples ? n / samples : 1;
  int64_t low = d.negative_indices ? -d.num_classes : 0;
  std::vector<int64_t> chunk(std::min<int64_t>(n, 1 << 16));
  for (int64_t at = 0; at < n; at += int64_t(chunk.size())) {
    int64_t m = std::min<int64_t>(n - at, int64_t(chunk.size()));
    widenInto(dtype, data + at * width, m, chunk.data(), path, at);
    for (int64_t k = 0; k < m; ++k) {
      int64_t y = chunk[k];
      if ((y < low || y >= d.num_classes) && !(d.has_ignore_index && y == d.ignore_index))
        throw Fatal{"'" + path + "' holds " + (d.negative_indices ? "index " : "label ") +
                    std::to_string(y) + " at sample " +
                    std::to_string(firstSample + (at + k) / perSample) + ", outside " +
                    (d.negative_indices ? "" : "the " + std::to_string(d.num_classes) + " classes ") +
                    "[" + std::to_string(low) + ", " + std::to_string(d.num_classes) + ")"};
    }
  }
}

} // namespace otc
