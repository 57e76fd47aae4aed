// The weights where they lie: a model parsed without copying its large
// tensors, which then refer to their bytes in the model's own file as
// external data, and read-only mappings of the files that hold them. The
// compiler reads parameters' values only to tie copies and to embed them
// (--embed-weights), so its memory does not grow with the weights.
#ifndef OTC_FRONTEND_WEIGHTFILES_H
#define OTC_FRONTEND_WEIGHTFILES_H

#include "onnx/onnx_pb.h"

#include <map>
#include <string>
#include <string_view>

namespace otc {

/// The external-data key that marks a tensor whose raw_data import left in
/// the model's file (its errors speak of raw_data).
inline constexpr const char *kLiftedKey = "otc.left_in_file";

/// Parses the regular file `path` (links followed) into `model`, each
/// main-graph initializer's raw_data of 64 KiB or more left in the file:
/// the tensor names it as external data (location: the file's name, offset,
/// length). False when the file cannot be mapped or is not well-formed
/// protobuf; the caller then parses it whole, which reports the error.
bool parseLeavingWeights(const std::string &path, onnx::ModelProto &model);

/// The bytes of checked tensors: inline, or external data in files inside
/// the model's folder, mapped read-only on first use and unmapped with this.
class TensorBytes {
public:
  explicit TensorBytes(std::string modelDir) : dir(std::move(modelDir)) {}
  TensorBytes(const TensorBytes &) = delete;
  TensorBytes &operator=(const TensorBytes &) = delete;
  ~TensorBytes();

  /// The `size` bytes of `t`'s values (raw_data, or external data), or ""
  /// when it holds no such bytes or their file cannot be mapped; typed value
  /// fields are the caller's.
  std::string_view of(const onnx::TensorProto &t, size_t size);

private:
  std::string dir;
  std::map<std::string, std::string_view> mapped; // location: the whole file
};

} // namespace otc

#endif
