// Structure-aware mutation of ONNX models for the import fuzz target.
#ifndef OTC_FUZZ_ONNXMUTATOR_H
#define OTC_FUZZ_ONNXMUTATOR_H

#include "onnx/onnx_pb.h"

namespace otc {

/// Changes one or two fields of `m` that an exporter controls: dims, data
/// types, raw bytes, op types, wiring, attributes, input shapes, the opset.
void mutateModel(onnx::ModelProto &m, uint64_t seed);

} // namespace otc

#endif
