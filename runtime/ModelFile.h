// The embedded ONNX model: initial parameter values in, trained values out.
#ifndef OTC_RUNTIME_MODELFILE_H
#define OTC_RUNTIME_MODELFILE_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace otc {

/// Reads the float32 initializers named in `counts` from the embedded model,
/// each of which must hold exactly its count of elements.
bool readInitializers(const std::map<std::string, int64_t> &counts,
                      std::map<std::string, std::vector<float>> &out,
                      std::string &error);

/// --init: reads the float32 initializers named in `shapes` from the ONNX
/// file `path` (external data from files inside its folder), each of
/// exactly its shape; `hash` receives the FNV-1a of their names and values.
bool readInitializersFrom(const std::string &path,
                          const std::map<std::string, std::vector<int64_t>> &shapes,
                          std::map<std::string, std::vector<float>> &out, uint64_t &hash,
                          std::string &error);

/// Writes the embedded model with the given initializers replaced, through
/// replaceFile: `path` holds either its old contents or the whole new model.
bool writeTrainedModel(const std::string &path,
                       const std::map<std::string, std::vector<float>> &values,
                       std::string &error);

} // namespace otc

#endif
