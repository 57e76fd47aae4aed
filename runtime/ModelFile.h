// The embedded ONNX model: initial parameter values in, trained values out.
#ifndef OTC_RUNTIME_MODELFILE_H
#define OTC_RUNTIME_MODELFILE_H

#include <map>
#include <string>
#include <vector>

namespace otc {

/// Reads the float32 initializers named in `names` from the embedded model.
bool readInitializers(const std::vector<std::string> &names,
                      std::map<std::string, std::vector<float>> &out,
                      std::string &error);

/// Writes the embedded model with the given initializers replaced. The file
/// is written beside `path` and renamed over it, so it is never half-written.
bool writeTrainedModel(const std::string &path,
                       const std::map<std::string, std::vector<float>> &values,
                       std::string &error);

} // namespace otc

#endif
