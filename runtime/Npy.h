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

} // namespace otc

#endif
