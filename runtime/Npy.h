// NumPy .npy files: the training data format. The parser never throws and
// checks every size against the file before it allocates.
#ifndef OTC_RUNTIME_NPY_H
#define OTC_RUNTIME_NPY_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace otc {

struct NpyArray {
  std::string dtype; // numpy descr, little-endian spelled "<", e.g. "<f4"
  std::vector<int64_t> shape;
  std::vector<char> data;
};

/// Parses the magic, version and header dict of a .npy file from its first
/// `size` bytes. On success fills `out`'s dtype and shape and sets
/// `dataOffset` and `dataBytes`; otherwise one line in `error`, which the
/// caller prefixes with the file's name.
bool parseNpyHeader(const char *bytes, size_t size, NpyArray &out,
                    size_t &dataOffset, int64_t &dataBytes, std::string &error);

/// A whole .npy file held in memory (what the fuzzer feeds).
bool parseNpy(const std::string &bytes, NpyArray &out, std::string &error);

/// Reads a C-ordered little-endian array. Returns false with a message.
bool readNpy(const std::string &path, NpyArray &out, std::string &error);

/// A file mapped read-only: pages come in as they are read and stay in the
/// page cache, not in the process's own memory. Move-only.
class MappedFile {
public:
  MappedFile() = default;
  MappedFile(MappedFile &&o) noexcept { *this = std::move(o); }
  MappedFile &operator=(MappedFile &&o) noexcept;
  ~MappedFile();
  /// Maps the regular file `path`; false with one line in `error`.
  bool map(const std::string &path, std::string &error);
  const char *data() const { return base; }
  size_t size() const { return length; }
  /// Lets the kernel drop the resident pages of [offset, offset + bytes)
  /// (after a scan: they are read again from the page cache if needed).
  void release(size_t offset, size_t bytes) const;

private:
  char *base = nullptr;
  size_t length = 0;
};

/// A .npy file mapped, its header parsed: `array` has dtype and shape (and
/// no data); its data are `bytes` bytes at `data`.
struct MappedNpy {
  MappedFile file;
  NpyArray array;
  const char *data = nullptr;
  size_t bytes = 0;
};
bool mapNpy(const std::string &path, MappedNpy &out, std::string &error);

} // namespace otc

#endif
