// Builds the training executable from generated source: writes the source
// and the embedded model to a scratch directory and runs the host compiler
// or nvcc.
#ifndef OTC_TOOLS_HOSTCOMPILER_H
#define OTC_TOOLS_HOSTCOMPILER_H

#include "otc/Codegen/Codegen.h"
#include <string>

namespace otc {

/// Which main the executable links: the training loop, the forward-only
/// evaluator (named inputs and outputs) or the function runner (otc kernel).
enum class ExecutableKind { Train, Forward, Function };

/// Compiles `source` with the runtime and `model` (the ONNX bytes to embed)
/// into the executable `output`, which is replaced only when all succeeded.
/// `dataParallel` links the collective backend (MPI), so that the
/// executable runs as ranks of a group under mpirun.
bool buildExecutable(const std::string &source, const std::string &evalSource,
                     const std::string &model,
                     Target target, ExecutableKind kind, bool dataParallel,
                     const std::string &output, std::string &error);

} // namespace otc

#endif
