// CPU emitters: contiguous inner loops marked `omp simd` for the host
// compiler to vectorise, OpenMP threads across rows or element blocks, BLAS
// for float32 products and the kernel library for the rest.
#include "EmitCommon.h"
#include "Targets.h"
#include "../Lowering.h"

#include <functional>

namespace otc {
namespace {

constexpr int64_t kParallelWork = 1 << 20; // below this, threads cost more
constexpr int64_t kTile = 64;              // outputs per column-reduce tile

std::string num(int64_t v) { return std::to_string(v); }

int64_t work(const Step &s) {
  int64_t n = 1;
  for (int64_t d : s.shape)
    n *= d;
  return n;
}

std::string parallelFor(const Step &s, const char *extra = "") {
  return work(s) >= kParallelWork ? std::string("#pragma omp parallel for") + extra + "\n" : "";
}

void elementwise(std::ostream &os, const Program &p, const Step &s) {
  NodePrinter np(p, s);
  std::vector<char> defined(s.nodes.size(), 0);
  std::vector<int> roots = LoopInfo(s).storeRoots(false);
  size_t r = s.shape.size();
  std::string pad = r == 0 ? "  " : r == 1 ? "    " : "      ";
  if (r == 1)
    os << parallelFor(s, " simd") << "  for (long long c0 = 0; c0 < " << s.shape[0] << "; ++c0) {\n";
  if (r >= 2) {
    std::vector<int> outer;
    int64_t count = 1;
    for (size_t d = 0; d + 1 < r; ++d) {
      outer.push_back((int)d);
      count *= s.shape[d];
    }
    os << parallelFor(s) << "  for (long long o = 0; o < " << count << "; ++o) {\n"
       << coords(s, outer, "o", "long long", "    ") << "#pragma omp simd\n"
       << "    for (long long c" << r - 1 << " = 0; c" << r - 1 << " < " << s.shape[r - 1]
       << "; ++c" << r - 1 << ") {\n";
  }
  np.emit(os, roots, defined, pad);
  for (const Store &st : s.stores)
    os << pad << np.store(st) << "\n";
  if (r >= 2)
    os << "    }\n";
  if (r >= 1)
    os << "  }\n";
}

constexpr int kLanes = 8; // a row reduction's partial sums

/// One pass over a row, its reductions summed in an order the program
/// fixes: element c into lane c mod 8 in order, then the lanes pairwise.
/// An `omp simd reduction` leaves the order to the host compiler, which
/// picks its vector partial sums by the loop's body: then a recomputed
/// LayerNorm that loads its input sums it otherwise than the original that
/// computed it (the residual add hosted in it), and recompute is not
/// bitwise neutral. The lanes are independent, so the loop still
/// vectorises.
void rowPass(std::ostream &os, const NodePrinter &np, const LoopInfo &info, int pass,
             std::vector<char> &defined) {
  const Step &s = info.step;
  np.emit(os, info.allRoots(), defined, "    ", info.outerAfter(pass));
  std::vector<size_t> ks;
  std::vector<int> bodies;
  for (size_t k = 0; k < s.reductions.size(); ++k)
    if (info.pass[k] == pass) {
      os << "    float a" << k << "l[" << kLanes << "];\n    for (int l = 0; l < " << kLanes
         << "; ++l) a" << k << "l[l] = " << reductionInit(s.reductions[k].kind) << ";\n";
      ks.push_back(k);
      bodies.push_back(s.reductions[k].node);
    }
  auto body = [&](const std::string &at, const std::string &indent) {
    os << indent << "const long long col = " << at << ";\n"
       << coords(s, info.reducedDims, "col", "long long", indent);
    std::vector<char> scope = defined;
    np.emit(os, bodies, scope, indent);
    for (size_t k : ks)
      os << indent
         << reductionUpdate(s.reductions[k].kind, "a" + num(k) + "l[l]", var(s.reductions[k].node))
         << "\n";
  };
  int64_t full = info.cols / kLanes * kLanes;
  if (full) {
    os << "    for (long long cb = 0; cb < " << full << "; cb += " << kLanes << ") {\n"
       << "#pragma omp simd\n      for (int l = 0; l < " << kLanes << "; ++l) {\n";
    body("cb + l", "        ");
    os << "      }\n    }\n";
  }
  if (info.cols > full) {
    os << "    for (int l = 0; l < " << info.cols - full << "; ++l) {\n";
    body(num(full) + " + l", "      ");
    os << "    }\n";
  }
  for (size_t k : ks) {
    bool sum = s.reductions[k].kind == Reduction::Sum;
    auto lane = [&](int l) { return "a" + num(k) + "l[" + num(l) + "]"; };
    std::function<std::string(int, int)> tree = [&](int lo, int n) -> std::string {
      if (n == 1)
        return lane(lo);
      std::string a = tree(lo, n / 2), b = tree(lo + n / 2, n / 2);
      return sum ? "(" + a + " + " + b + ")" : "fmaxf(" + a + ", " + b + ")";
    };
    os << "    float a" << k << " = " << tree(0, kLanes) << ";\n";
  }
}

// A row per kept index; the reduced dims are the row, walked once per pass.
void rows(std::ostream &os, const Program &p, const Step &s) {
  LoopInfo info(s);
  NodePrinter np(p, s);
  std::vector<char> defined(s.nodes.size(), 0);
  std::string colLoop = "    for (long long col = 0; col < " + num(info.cols) + "; ++col) {\n" +
                        coords(s, info.reducedDims, "col", "long long", "      ");
  os << parallelFor(s) << "  for (long long row = 0; row < " << info.rows << "; ++row) {\n"
     << coords(s, info.kept, "row", "long long", "    ");
  for (int pass = 0; pass < info.passes; ++pass)
    rowPass(os, np, info, pass, defined);
  np.emit(os, info.storeRoots(false), defined, "    ");
  for (size_t i = 0; i < s.stores.size(); ++i)
    if (!info.innerStore[i])
      os << "    " << np.store(s.stores[i]) << "\n";
  emitInnerStores(os, np, info, defined, "#pragma omp simd\n" + colLoop);
  os << "  }\n";
}

// Outputs side by side (the innermost dim is kept): tiles of kTile outputs
// keep their sums in a local array while the reduced dims stream past.
void columns(std::ostream &os, const Program &p, const Step &s) {
  LoopInfo info(s);
  NodePrinter np(p, s);
  int last = (int)s.shape.size() - 1;
  int64_t width = s.shape[last], tiles = (width + kTile - 1) / kTile;
  std::vector<int> outer(info.kept.begin(), info.kept.end() - 1);
  int64_t outerCount = info.rows / width;
  os << parallelFor(s) << "  for (long long ot = 0; ot < " << outerCount * tiles << "; ++ot) {\n"
     << "    const long long o = ot / " << tiles << ", t0 = (ot % " << tiles << ") * " << kTile << ";\n"
     << "    const long long w = " << width << " - t0 < " << kTile << " ? " << width << " - t0 : " << kTile << ";\n"
     << coords(s, outer, "o", "long long", "    ");
  std::vector<int> bodies;
  for (size_t k = 0; k < s.reductions.size(); ++k) {
    os << "    float a" << k << "[" << kTile << "];\n    for (long long ci = 0; ci < w; ++ci) a" << k
       << "[ci] = " << reductionInit(s.reductions[k].kind) << ";\n";
    bodies.push_back(s.reductions[k].node);
  }
  np.reducedName = [](int k) { return "a" + std::to_string(k) + "[ci]"; };
  os << "    for (long long col = 0; col < " << info.cols << "; ++col) {\n"
     << coords(s, info.reducedDims, "col", "long long", "      ") << "#pragma omp simd\n"
     << "      for (long long ci = 0; ci < w; ++ci) {\n        const long long c" << last << " = t0 + ci;\n";
  std::vector<char> scope(s.nodes.size(), 0);
  np.emit(os, bodies, scope, "        ");
  for (size_t k = 0; k < s.reductions.size(); ++k)
    os << "        " << reductionUpdate(s.reductions[k].kind, "a" + num(k) + "[ci]", var(s.reductions[k].node)) << "\n";
  os << "      }\n    }\n    for (long long ci = 0; ci < w; ++ci) {\n      const long long c" << last << " = t0 + ci;\n";
  std::vector<char> epilogue(s.nodes.size(), 0);
  np.emit(os, info.storeRoots(false), epilogue, "      ");
  for (const Store &st : s.stores)
    os << "      " << np.store(st) << "\n";
  os << "    }\n  }\n";
}

const char *cblasOp(bool t) { return t ? "CblasTrans" : "CblasNoTrans"; }

std::string betaText(const Gemm &g, const char *first) {
  switch (g.beta) {
  case Gemm::Beta::Zero: return "0.0f";
  case Gemm::Beta::One: return "1.0f";
  case Gemm::Beta::FirstZeroElseOne: return std::string("(") + first + " ? 0.0f : 1.0f)";
  }
  return "0.0f";
}

} // namespace

bool isColumnReduce(const Step &s) {
  return s.kind == Step::Reduce && !s.shape.empty() && !s.reduced.back();
}

void emitCpuKernel(std::ostream &os, const Program &p, const Step &s, const std::string &name) {
  LoopInfo info(s);
  KernelParamNames params(info.buffers);
  os << "static void " << name << "(" << kernelParams(p, info) << ") {\n";
  if (s.kind == Step::Elementwise)
    elementwise(os, p, s);
  else if (isColumnReduce(s))
    columns(os, p, s);
  else
    rows(os, p, s);
  os << "}\n\n";
}

void emitCpuLaunch(std::ostream &os, const Program &, const Step &s, const std::string &name) {
  os << "  " << name << "(" << kernelArgs(LoopInfo(s)) << ");\n";
}

void emitCpuGemm(std::ostream &os, const Program &p, const Gemm &g) {
  ElemType ta = p.buffers[g.a].type, tc = p.buffers[g.c].type;
  std::string A = bufferName(g.a), B = bufferName(g.b), C = bufferName(g.c);
  std::string pad = "  ";
  if (g.batch > 1) {
    os << "  for (long long bi = 0; bi < " << g.batch << "; ++bi) {\n";
    A += " + bi * " + num(g.strideA);
    B += " + bi * " + num(g.strideB);
    C += " + bi * " + num(g.strideC);
    pad = "    ";
  }
  std::string flags = std::string(g.transA ? "true" : "false") + ", " +
                      (g.transB ? "true" : "false") + ", " + num(g.m) + "LL, " + num(g.n) +
                      "LL, " + num(g.k) + "LL";
  // Typed nulls for an epilogue's absent vector or preactivation.
  std::string none = "static_cast<" + std::string(storageType(tc)) + " *>(nullptr)";
  std::string bias = g.bias >= 0 ? bufferName(g.bias) : none;
  std::string pre = g.gelu ? bufferName(g.aux) : none;
  if (ta == ElemType::F32 && tc == ElemType::F32) {
    // The product into the preactivation under GELU, then the epilogue: the
    // same sums as an add after the product.
    std::string P = g.gelu ? pre : C;
    os << pad << "cblas_sgemm(CblasRowMajor, " << cblasOp(g.transA) << ", " << cblasOp(g.transB)
       << ", " << g.m << ", " << g.n << ", " << g.k << ", " << floatLiteral(g.alpha) << ", "
       << A << ", " << leadingDim(g, 'a') << ", " << B << ", " << leadingDim(g, 'b') << ", "
       << betaText(g, "first") << ", " << P << ", " << leadingDim(g, 'c') << ");\n";
    if (g.bias >= 0 || g.gelu)
      os << pad << "otc_kernels::bias_gelu_rows<" << g.m << "LL, " << g.n << "LL, "
         << (g.gelu ? "true" : "false") << (g.ldc && !g.gelu ? ", " + num(g.ldc) + "LL" : "")
         << ">(" << P << ", " << bias << ", " << C << ");\n";
    if (g.dgelu)
      os << pad << "otc_kernels::dgelu_rows<" << g.m << "LL, " << g.n << "LL>(" << C << ", "
         << bufferName(g.aux) << ");\n";
  } else if (g.dgelu) { // the derivative's factor before the one rounding
    os << pad << "otc_kernels::gemm_f32acc_dgelu<" << flags << ">(" << floatLiteral(g.alpha)
       << ", " << A << ", " << B << ", " << bufferName(g.aux) << ", " << C << ");\n";
  } else if (g.bias >= 0 || g.gelu) { // the epilogue before the one rounding
    os << pad << "otc_kernels::gemm_f32acc_epilogue<" << flags << ", "
       << (g.gelu ? "true" : "false") << leadingDimArgs(g) << ">(" << floatLiteral(g.alpha) << ", " << A << ", " << B
       << ", " << bias << ", " << pre << ", " << C << ");\n";
  } else { // 16-bit storage: the library's float-accumulating product
    os << pad << "otc_kernels::gemm_f32acc<" << flags << leadingDimArgs(g) << ">(" << floatLiteral(g.alpha) << ", "
       << A << ", " << B << ", " << betaText(g, "first") << ", " << C << ");\n";
  }
  if (g.biasGrad >= 0) {
    // The summed operand as stored: its sums run over its rows when they are
    // the contraction index.
    bool ofA = g.biasGradOf == Gemm::BiasGradOf::A;
    bool overRows = ofA ? g.transA : !g.transB;
    int64_t len = ofA ? g.m : g.n;
    int64_t rows = overRows ? g.k : len, cols = overRows ? len : g.k;
    os << pad << "otc_kernels::contraction_sums<" << rows << "LL, " << cols << "LL, "
       << (overRows ? "false" : "true")
       << ((ofA ? g.lda : g.ldb) ? ", " + num(ofA ? g.lda : g.ldb) + "LL" : "") << ">("
       << (ofA ? A : B) << ", "
       << bufferName(g.biasGrad) << ");\n";
  }
  if (g.batch > 1)
    os << "  }\n";
}

} // namespace otc
