// The compiled ONNX model: initial parameter values in, trained values out.
#ifndef OTC_RUNTIME_MODELFILE_H
#define OTC_RUNTIME_MODELFILE_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace otc {

/// The initial parameters named in `shapes`, each float32 of exactly its
/// shape: from the ONNX file `init` (--init) when given, else from the model
/// the executable was compiled from, whose path the embedded model records
/// (or from the embedded model itself, compiled with --embed-weights).
/// External data comes from files inside the file's folder. `hash` receives
/// the FNV-1a of the names and values. With `constants` (a run that saves),
/// also the constants the embedded model leaves out, from the compiled-from
/// file, each checked against its hash at compile time, for
/// writeTrainedModel.
bool readInitialParameters(const std::string &init,
                           const std::map<std::string, std::vector<int64_t>> &shapes,
                           std::map<std::string, std::vector<float>> &out, uint64_t &hash,
                           std::string &error, bool constants = false);

/// Whether --save can write the trained model, which adds
/// `parameterBytes` of values, and the left-out constants', to the embedded
/// model: one ONNX file holds at most 2 GiB.
bool checkSavable(int64_t parameterBytes, std::string &error);

/// The FNV-1a of the embedded model, less the path it was compiled from: an
/// executable compiled from the same model elsewhere resumes its runs.
uint64_t compiledModelFingerprint();

/// Writes the embedded model with the given initializers replaced, through
/// replaceFile: `path` holds either its old contents or the whole new model.
bool writeTrainedModel(const std::string &path,
                       const std::map<std::string, std::vector<float>> &values,
                       std::string &error);

} // namespace otc

#endif
