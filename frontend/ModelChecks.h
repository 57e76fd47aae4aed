// What otc checks in an ONNX model before any library reads it: the sizes of
// every tensor, the external data it names, and the shapes of its values.
// libonnx trusts these (its shape inference copies raw_data by byte count),
// so they are validated first, on the protobuf as parsed.
#ifndef OTC_FRONTEND_MODELCHECKS_H
#define OTC_FRONTEND_MODELCHECKS_H

#include "onnx/onnx_pb.h"
#include "llvm/ADT/StringSet.h"
#include <string>

namespace otc {

/// Checks every tensor (initializers and node attributes, in subgraphs too)
/// and every declared value shape against the input contract. Tensors with
/// external data are read from files inside `modelDir` and become inline,
/// but for the main graph's initializers named in `leave`, whose data is
/// checked where it lies. With an empty `modelDir`, external data is
/// rejected. External data at `ownName` (the model file's own name in
/// `modelDir`, which import's parse leaves large tensors in) may be a link
/// out of the folder. Returns false with one line in `error`.
bool checkModel(onnx::ModelProto &model, const std::string &modelDir,
                const llvm::StringSet<> &leave, std::string &error,
                const std::string &ownName = "");

/// Bytes per element of an ONNX data type, or 0 for types otc cannot size
/// (strings, unknown).
int64_t elementSize(int type);

/// The product of `dims` with zeros counted as ones, or -1 when a dim is
/// negative or it passes OTC_MAX_ELEMENTS: a zero-sized tensor may not hide
/// dims whose strides overflow.
int64_t boundedVolume(const int64_t *dims, size_t rank);

/// `s` quoted for an error message: non-printable bytes escaped, names longer
/// than `shown` bytes shortened, so one name never spreads over many lines.
std::string quoted(const std::string &s, size_t shown = 80);

/// A path quoted for an error message: escaped, never shortened.
inline std::string quotedPath(const std::string &s) { return quoted(s, 4096); }

/// A library's message on one line (control characters become spaces),
/// shortened to a few hundred bytes.
std::string oneLine(const std::string &s);

} // namespace otc

#endif
