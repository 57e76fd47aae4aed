// Tensors known at compile time: constants and the shape computations that
// exporters emit around them, folded on the host.
#ifndef OTC_FRONTEND_HOSTTENSOR_H
#define OTC_FRONTEND_HOSTTENSOR_H

#include "onnx/onnx_pb.h"
#include "mlir/IR/Builders.h"
#include <cstdint>
#include <string>
#include <vector>

namespace otc {

struct HostTensor {
  bool isFloat = false;
  int elemType = onnx::TensorProto::INT64; // an onnx::TensorProto::DataType
  std::vector<int64_t> shape;
  std::vector<double> values; // ints are exact up to 2^53, plenty for shapes

  /// The product of the shape, or -1 when it overflows.
  int64_t numElements() const;
  /// The values as integers, saturated to the int64 range (NaN is 0).
  std::vector<int64_t> asInts() const;
};

/// `v` as an integer, saturated to the int64 range (NaN is 0).
int64_t toInt64(double v);

/// Decodes an ONNX tensor. Fails with a message for unsupported data types
/// and external data.
bool decodeTensor(const onnx::TensorProto &t, HostTensor &out,
                  std::string &error);

/// `v` rounded to the float ONNX type `onnxType` (FLOAT, FLOAT16, BFLOAT16)
/// to nearest even; other types unchanged.
double roundToType(double v, int onnxType);

/// Rounds a float tensor's values to its element type: what a node of that
/// type computes, where the fold computed in double.
void roundToType(HostTensor &t);

/// The MLIR element type for an ONNX data type, or null.
mlir::Type elementTypeFor(mlir::Builder &b, int onnxType);
/// Its inverse over the types otc imports (other integers read as INT64).
int onnxTypeFor(mlir::Type elementType);

/// A dense attribute holding `t`.
mlir::DenseElementsAttr toAttr(mlir::Builder &b, const HostTensor &t);

} // namespace otc

#endif
