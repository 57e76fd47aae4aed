// Weights that an exporter split in two: with constant folding on,
// torch.onnx.export stores a tied LM head (F.linear(h, wte.weight)) as a
// second initializer holding wte.weightᵀ. Trained apart, the two drift; otc
// joins them again before import.
#ifndef OTC_FRONTEND_TIEDWEIGHTS_H
#define OTC_FRONTEND_TIEDWEIGHTS_H

#include "onnx/onnx_pb.h"
#include <string>
#include <vector>

namespace otc {

/// Replaces each float32 matrix initializer B that is exactly the transpose
/// of another initializer A by a Transpose node A -> B at the head of the
/// graph, so that both uses train A. A matrix of one repeated value (a
/// fresh zero or one initialisation) is never tied: equal values there say
/// nothing about the model. Returns one "B is A transposed" line per tie.
std::vector<std::string> tieTransposedCopies(onnx::ModelProto &model);

} // namespace otc

#endif
