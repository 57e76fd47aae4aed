// Tensors between disk and device storage: the data file of an input, the
// npy types and conversions, writing .npy files, and the checks on data
// read from disk.
#ifndef OTC_RUNTIME_TENSORFILES_H
#define OTC_RUNTIME_TENSORFILES_H

#include "Npy.h"
#include "otc/runtime/abi.h"

#include <map>
#include <string>
#include <vector>

namespace otc {

/// The .npy file that holds the data of input `input`: the name with every
/// character outside [A-Za-z0-9._-] replaced by '_'.
std::string fileNameFor(const std::string &input);

/// The files of a set of tensors, by fileNameFor: `claim` returns a
/// tensor's file, and throws Fatal when another tensor already has it.
class TensorFileNames {
public:
  /// `role` names the set ("inputs"), `verb` what it does ("read").
  TensorFileNames(const char *role, const char *verb) : role(role), verb(verb) {}
  std::string claim(const char *tensor);

private:
  const char *role, *verb;
  std::map<std::string, const char *> owner;
};

std::string shapeText(const int64_t *dims, int rank);

/// The number of elements `d` describes.
int64_t elements(const otc_tensor_desc &d);

/// The numpy dtype that holds values of `dtype` on disk: float32 for every
/// float type (16-bit storage is rounded when loaded), int64 or bool.
const char *npyDtypeFor(int dtype);

/// Integer data of another width (int8 to int32, uint8 to uint64: token ids
/// saved as int32 or uint16, say) read for an int64 input: `a` is widened
/// in place to "<i8". Throws Fatal naming `path` for a uint64 value above
/// int64's range; any other dtype is left as it is.
void widenIntegers(NpyArray &a, const std::string &path);

/// Bytes per element of the npy integer dtype `dtype`, or 0 for another.
size_t integerBytes(const std::string &dtype);

/// `n` integers of the npy integer dtype `dtype` at `src` as int64 at `dst`;
/// throws Fatal naming `path` and element `first + k` for a uint64 value
/// above int64's range.
void widenInto(const std::string &dtype, const char *src, int64_t n, int64_t *dst,
               const std::string &path, int64_t first);

/// Bytes per element of `dtype` in device memory.
size_t storageBytes(int dtype);

/// `n` elements of npy data (float32 for float types) in `dtype`'s storage,
/// and back.
std::vector<char> toStorage(int dtype, const char *npyData, int64_t n);
std::vector<char> fromStorage(int dtype, const char *storage, int64_t n);

/// Writes `data` (npy bytes of `dtype`'s npy type, C order) as the .npy file
/// `path` through replaceFile; throws Fatal on failure.
void writeNpyFile(const std::string &path, int dtype, const std::vector<int64_t> &shape,
                  const std::vector<char> &data);

/// Throws Fatal naming `path` and the sample when `d` describes labels or
/// indices and `a` holds a value outside their range (a step reads memory
/// through them), or, with `requireFinite`, a non-finite float.
void checkValues(const otc_tensor_desc &d, const NpyArray &a, const std::string &path,
                 bool requireFinite);
/// The same over `bytes` bytes of `samples` samples of dtype `dtype` (a
/// mapped file, or part of one from sample `firstSample`).
void checkValues(const otc_tensor_desc &d, const std::string &dtype, const char *data,
                 size_t bytes, int64_t samples, const std::string &path, bool requireFinite,
                 int64_t firstSample = 0);

} // namespace otc

#endif
