#include "HostTensor.h"
#include "ModelChecks.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "otc/runtime/limits.h"
#include <cmath>
#include <cstring>

namespace otc {

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    if (!otc_mul_count(n, d, &n))
      return -1;
  return n;
}

int64_t toInt64(double v) {
  // Saturates instead of the undefined behaviour of casting an out-of-range
  // double; the caller's range checks then reject the value.
  if (std::isnan(v))
    return 0;
  if (v >= 9.2e18)
    return INT64_MAX;
  if (v <= -9.2e18)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

std::vector<int64_t> HostTensor::asInts() const {
  std::vector<int64_t> out;
  out.reserve(values.size());
  for (double v : values)
    out.push_back(toInt64(v));
  return out;
}

template <typename T>
static void fromRaw(const std::string &raw, std::vector<double> &out) {
  size_t n = raw.size() / sizeof(T);
  out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

/// The values from raw_data (as `T`s) when the tensor has it, else from
/// its typed field.
template <typename T, typename Field>
static void readValues(const onnx::TensorProto &t, const Field &typed, std::vector<double> &out) {
  if (t.has_raw_data())
    fromRaw<T>(t.raw_data(), out);
  else
    out.assign(typed.begin(), typed.end());
}

bool decodeTensor(const onnx::TensorProto &t, HostTensor &out,
                  std::string &error) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    error = "tensor " + quoted(t.name()) + " uses external data, which is not supported";
    return false;
  }
  out.shape.assign(t.dims().begin(), t.dims().end());
  int64_t count = out.numElements();
  if (count < 0 || count > OTC_MAX_HOST_ELEMENTS) {
    error = "tensor " + quoted(t.name()) + " has more than " +
            std::to_string(OTC_MAX_HOST_ELEMENTS) +
            " elements, the limit of a constant otc folds at compile time";
    return false;
  }
  out.elemType = t.data_type();
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    out.isFloat = true;
    readValues<float>(t, t.float_data(), out.values);
    break;
  case onnx::TensorProto::DOUBLE:
    out.isFloat = true;
    readValues<double>(t, t.double_data(), out.values);
    break;
  case onnx::TensorProto::INT64:
    readValues<int64_t>(t, t.int64_data(), out.values);
    break;
  case onnx::TensorProto::BOOL: // one byte each in raw_data, else int32_data
    readValues<uint8_t>(t, t.int32_data(), out.values);
    for (double &v : out.values)
      v = double(v != 0);
    break;
  case onnx::TensorProto::INT32:
    out.elemType = onnx::TensorProto::INT64; // widened: only shapes use it
    readValues<int32_t>(t, t.int32_data(), out.values);
    break;
  default:
    error = "tensor " + quoted(t.name()) + " has unsupported data type " +
            onnx::TensorProto::DataType_Name(
                static_cast<onnx::TensorProto::DataType>(t.data_type()));
    return false;
  }
  if ((int64_t)out.values.size() != out.numElements()) {
    error = "tensor " + quoted(t.name()) + " holds " +
            std::to_string(out.values.size()) + " values for " +
            std::to_string(out.numElements()) + " elements";
    return false;
  }
  return true;
}

/// `v` in FLOAT16's or BFLOAT16's semantics, to nearest even.
static llvm::APFloat sixteenBit(double v, int onnxType) {
  llvm::APFloat f(v);
  bool lost;
  f.convert(onnxType == onnx::TensorProto::FLOAT16 ? llvm::APFloat::IEEEhalf()
                                                   : llvm::APFloat::BFloat(),
            llvm::APFloat::rmNearestTiesToEven, &lost);
  return f;
}

double roundToType(double v, int onnxType) {
  using P = onnx::TensorProto;
  if (onnxType == P::FLOAT)
    return double(float(v));
  if (onnxType != P::FLOAT16 && onnxType != P::BFLOAT16)
    return v;
  return sixteenBit(v, onnxType).convertToDouble();
}

void roundToType(HostTensor &t) {
  using P = onnx::TensorProto;
  if (t.isFloat && (t.elemType == P::FLOAT || t.elemType == P::FLOAT16 ||
                    t.elemType == P::BFLOAT16))
    for (double &v : t.values)
      v = roundToType(v, t.elemType);
}

mlir::Type elementTypeFor(mlir::Builder &b, int onnxType) {
  using P = onnx::TensorProto;
  switch (onnxType) {
  case P::FLOAT: return b.getF32Type();
  case P::DOUBLE: return b.getF64Type();
  case P::INT64: return b.getI64Type();
  case P::BOOL: return b.getI1Type();
  case P::FLOAT16: return b.getF16Type();
  case P::BFLOAT16: return b.getBF16Type();
  default: return nullptr;
  }
}

int onnxTypeFor(mlir::Type e) {
  using P = onnx::TensorProto;
  return e.isF32() ? P::FLOAT : e.isF64() ? P::DOUBLE : e.isF16() ? P::FLOAT16
       : e.isBF16() ? P::BFLOAT16 : e.isInteger(1) ? P::BOOL : P::INT64;
}

mlir::DenseElementsAttr toAttr(mlir::Builder &b, const HostTensor &t) {
  auto type = mlir::RankedTensorType::get(t.shape, elementTypeFor(b, t.elemType));
  if (t.elemType == onnx::TensorProto::FLOAT) {
    std::vector<float> v(t.values.begin(), t.values.end());
    return mlir::DenseElementsAttr::get(type, llvm::ArrayRef<float>(v));
  }
  if (t.elemType == onnx::TensorProto::DOUBLE)
    return mlir::DenseElementsAttr::get(type, llvm::ArrayRef<double>(t.values));
  if (t.elemType == onnx::TensorProto::FLOAT16 || t.elemType == onnx::TensorProto::BFLOAT16) {
    std::vector<llvm::APFloat> v;
    for (double x : t.values)
      v.push_back(sixteenBit(x, t.elemType));
    return mlir::DenseElementsAttr::get(type, llvm::ArrayRef<llvm::APFloat>(v));
  }
  if (t.elemType == onnx::TensorProto::BOOL) {
    llvm::SmallVector<bool> v;
    for (double x : t.values)
      v.push_back(x != 0);
    return mlir::DenseElementsAttr::get(type, llvm::ArrayRef<bool>(v));
  }
  std::vector<int64_t> v = t.asInts();
  return mlir::DenseElementsAttr::get(type, llvm::ArrayRef<int64_t>(v));
}

} // namespace otc
