// DFT (opset 17 and 20): one matrix product with a constant DFT matrix over
// the transformed axis, so autodiff, precision casting and the GEMM
// kernels treat it as any MatMul (FNet's token mixing is torch.fft.fftn).
// The product costs O(L²) per row where an FFT costs O(L log L); at the
// lengths models mix over (hundreds to a few thousand) the GEMM is the
// faster kernel, and the matrix is bounded by the fold limit.
#include "ImportHelpers.h"
#include "Importers.h"

#include "otc/Dialect/Helpers.h"
#include "otc/Dialect/OtcDialect.h"

#include <cmath>
#include <numeric>

using namespace mlir;

namespace otc {
namespace {

using Imp = GraphImporter;

/// The scalar integer input `i`, which must be a compile-time constant, or
/// `fallback` when it is absent.
FailureOr<int64_t> scalarInput(Imp &imp, size_t i, int64_t fallback, const char *what) {
  if (imp.numInputs() <= i || imp.node().input(i).empty())
    return fallback;
  const HostTensor *t = imp.constantInput(i);
  if (!t || t->numElements() != 1)
    return imp.fail(std::string(what) + " must be a compile-time scalar");
  return toInt64(t->values[0]);
}

/// The [L·C, 2K] matrix taking a row of L samples (C = 1: real; C = 2:
/// interleaved real and imaginary parts) to K interleaved complex
/// coefficients: X[k] = Σ_j x[j] e^{∓2πi jk/L}, scaled by 1/L when inverse.
HostTensor dftMatrix(int64_t L, int64_t C, int64_t K, bool inverse, int elemType) {
  HostTensor m;
  m.isFloat = true;
  m.elemType = elemType;
  m.shape = {L * C, 2 * K};
  m.values.assign(size_t(L * C * 2 * K), 0.0);
  double scale = inverse ? 1.0 / double(L) : 1.0, sign = inverse ? 1.0 : -1.0;
  for (int64_t j = 0; j < L; ++j)
    for (int64_t k = 0; k < K; ++k) {
      // j·k mod L keeps the angle exact for long transforms.
      double angle = 2.0 * M_PI * double((j * k) % L) / double(L);
      double c = std::cos(angle) * scale, s = sign * std::sin(angle) * scale;
      // (a + bi)(c + si) = (ac - bs) + (as + bc)i
      double *re = &m.values[size_t(j * C * 2 * K + 2 * k)];
      re[0] = c; // real part to real part
      re[1] = s; // real part to imaginary part
      if (C == 2) {
        double *im = re + 2 * K;
        im[0] = -s;
        im[1] = c;
      }
    }
  roundToType(m);
  return m;
}

} // namespace

/// DFT: input [..., n, ..., C] (C = 1 real, 2 complex) transformed along
/// `axis` (an attribute at opset 17, default 1; an input at 20, default -2)
/// over dft_length L samples (the input cut or zero-padded), to [..., K, ..., 2]
/// with K = L, or L/2 + 1 when onesided.
LogicalResult importDft(Imp &imp) {
  auto x = floatInput(imp, 0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t r = type.getRank();
  if (r < 2 || (type.getDimSize(r - 1) != 1 && type.getDimSize(r - 1) != 2))
    return imp.fail("the input's last dim must be 1 (real) or 2 (complex)");
  int64_t C = type.getDimSize(r - 1);
  FailureOr<int64_t> axis = imp.form() >= 20 ? scalarInput(imp, 2, -2, "the axis")
                                             : FailureOr<int64_t>(imp.intAttr("axis", 1));
  if (failed(axis))
    return failure();
  int64_t a = *axis < 0 ? *axis + r : *axis;
  if (a < 0 || a > r - 2)
    return imp.fail("axis " + std::to_string(*axis) + " is out of range for rank " +
                    std::to_string(r) + " (the last dim holds the complex parts)");
  int64_t n = type.getDimSize(a);
  auto length = scalarInput(imp, 1, n, "dft_length");
  if (failed(length))
    return failure();
  int64_t L = *length;
  bool inverse = imp.intAttr("inverse", 0) != 0, onesided = imp.intAttr("onesided", 0) != 0;
  if (L < 1)
    return imp.fail("dft_length must be positive, not " + std::to_string(L));
  if (onesided && (C == 2 || inverse))
    return imp.fail("onesided applies to a forward transform of a real input");
  int64_t K = onesided ? L / 2 + 1 : L;
  if (failed(checkFoldSize(imp, product({L, C, 2, K}))))
    return failure();

  OpBuilder &b = imp.builder();
  // The transformed axis next to the complex parts: [rest..., n, C].
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < r - 1; ++d)
    if (d != a)
      perm.push_back(d);
  perm.push_back(a);
  perm.push_back(r - 1);
  bool moved = a != r - 2;
  Value v = *x;
  if (moved) {
    auto t = imp.create<TransposeOp>(v, b.getDenseI64ArrayAttr(perm));
    if (failed(t))
      return failure();
    v = *t;
  }
  SmallVector<int64_t> shape(cast<RankedTensorType>(v.getType()).getShape());
  if (L < n) {
    SmallVector<int64_t> cut = shape;
    cut[r - 2] = L;
    v = SliceOp::create(b, imp.loc(), withShape(v, cut), v,
                        b.getDenseI64ArrayAttr(SmallVector<int64_t>(r, 0)),
                        b.getDenseI64ArrayAttr(SmallVector<int64_t>(r, 1)));
  } else if (L > n) {
    auto padded = zeroPadded(imp, v, r - 2, 0, L - n);
    if (failed(padded))
      return failure();
    v = *padded;
  }
  int64_t rows = product(ArrayRef<int64_t>(shape).take_front(r - 2));
  if (rows < 0 || product({rows, 2 * K}) < 0)
    return imp.fail("the output exceeds the tensor size limit");
  Type elem = type.getElementType();
  Value matrix = ConstantOp::create(
      b, imp.loc(), toAttr(b, dftMatrix(L, C, K, inverse, onnxTypeFor(elem))));
  auto out = imp.create<MatMulOp>(reshaped(imp, v, {rows, L * C}), matrix);
  if (failed(out))
    return failure();
  SmallVector<int64_t> outShape(ArrayRef<int64_t>(shape).take_front(r - 2));
  outShape.append({K, 2});
  v = reshaped(imp, *out, outShape);
  if (moved) {
    SmallVector<int64_t> back(r);
    for (int64_t d = 0; d < r; ++d)
      back[perm[d]] = d;
    auto t = imp.create<TransposeOp>(v, b.getDenseI64ArrayAttr(back));
    if (failed(t))
      return failure();
    v = *t;
  }
  imp.define(0, v);
  return success();
}

} // namespace otc
