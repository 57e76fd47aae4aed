// NumPy .npy files: the training data format.
#ifndef OTC_RUNTIME_NPY_H
#define OTC_RUNTIME_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace otc {

struct NpyArray {
  std::string dtype; // numpy descr, e.g. "<f4"
  std::vector<int64_t> shape;
  std::vector<char> data;
};

/// Reads a C-ordered little-endian array. Returns false with a message.
bool readNpy(const std::string &path, NpyArray &out, std::string &error);

} // namespace otc

#endif
