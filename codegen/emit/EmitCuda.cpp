// CUDA emitters. Elementwise steps are grid-stride loops; a row reduction
// gives each row a warp (or, for long rows and few rows, a block) that
// combines partial results with shuffles; a column reduction gives each
// output a thread, so neighbouring threads read neighbouring elements.
// Indices are 32-bit where every buffer the kernel touches allows it.
#include "EmitCommon.h"
#include "Targets.h"
#include "../Lowering.h"

#include <algorithm>

namespace otc {
namespace {

constexpr int kThreads = 256;

std::string num(int64_t v) { return std::to_string(v); }

const char *indexType(const Program &p, const LoopInfo &info) {
  int64_t most = info.rows * info.cols;
  for (int b : info.buffers)
    most = std::max(most, p.buffers[b].count());
  return most < (int64_t(1) << 31) - kThreads * 65536LL ? "int" : "long long";
}

/// A block of 256 per row where each thread gets at least a vector of W
/// elements (four elements at W 1), or where rows are too few to fill the
/// device a warp each; else a warp per row.
bool blockPerRow(const LoopInfo &info, int w) {
  return info.cols >= kThreads * (w > 1 ? w : 4) || info.rows < 64;
}

bool is16(ElemType t) { return t == ElemType::F16 || t == ElemType::BF16; }

/// How many elements a thread of an elementwise step moves per load and
/// store: 8 where a contiguous access is 16-bit (16-byte loads), else 4;
/// 0 where it cannot. It can with one (collapsed) dim that is a multiple of
/// the width, every store walking it contiguously, and no index
/// arithmetic; integer and boolean accesses (a dropout mask) stay scalar
/// inside the lanes' loop. Buffers start 64-byte aligned (the arena,
/// cudaMalloc's 256, the gradient block's 16 floats, 16-byte constants),
/// so an offset that is a multiple of the width keeps 16-byte (8-byte)
/// alignment.
int vectorWidth(const Program &p, const Step &s) {
  if (s.shape.size() != 1)
    return 0;
  bool any16 = false;
  std::vector<int64_t> offsets;
  for (const Node &n : s.nodes) {
    if (n.op == Node::Coord || n.op == Node::Gather)
      return 0;
    if (n.op != Node::Load || n.strides[0] != 1 || !isFloat(p.buffers[n.buffer].type))
      continue; // integer and boolean accesses stay scalar, in the lane loop
    any16 = any16 || is16(p.buffers[n.buffer].type);
    offsets.push_back(n.offset);
  }
  for (const Store &st : s.stores) {
    if (st.strides[0] != 1)
      return 0;
    if (!isFloat(p.buffers[st.buffer].type))
      continue;
    any16 = any16 || is16(p.buffers[st.buffer].type);
    offsets.push_back(st.offset);
  }
  if (offsets.empty())
    return 0; // nothing to move in vectors
  for (int w : {8, 4}) {
    if (w == 8 && !any16)
      continue;
    bool fits = s.shape[0] % w == 0;
    for (int64_t o : offsets)
      fits = fits && o % w == 0;
    if (fits)
      return w;
  }
  return 0;
}

std::string plus(int64_t offset) { return offset ? " + " + std::to_string(offset) : ""; }

// W elements per iteration: vector loads into arrays, the DAG once per lane
// in an unrolled loop, vector stores.
void vectorElementwise(std::ostream &os, const Program &p, const Step &s, const char *it, int w) {
  NodePrinter np(p, s);
  std::string W = std::to_string(w);
  os << "  for (" << it << " q = blockIdx.x * (" << it << ")blockDim.x + threadIdx.x; q < "
     << s.shape[0] / w << "; q += (" << it << ")gridDim.x * blockDim.x) {\n";
  auto vectored = [&](int buffer) { return isFloat(p.buffers[buffer].type); };
  std::vector<int> vecLoads;
  for (size_t i = 0; i < s.nodes.size(); ++i)
    if (s.nodes[i].op == Node::Load && s.nodes[i].strides[0] == 1 && vectored(s.nodes[i].buffer)) {
      os << "    float l" << i << "[" << W << "];\n    otc_vload<" << W << ">("
         << bufferName(s.nodes[i].buffer) << plus(s.nodes[i].offset) << ", q, l" << i << ");\n";
      vecLoads.push_back((int)i);
    }
  for (size_t k = 0; k < s.stores.size(); ++k)
    if (vectored(s.stores[k].buffer))
      os << "    float s" << k << "[" << W << "];\n";
  std::vector<int> roots;
  for (const Store &st : s.stores)
    roots.push_back(st.node);
  np.loadOverride = [&](int i) {
    return std::find(vecLoads.begin(), vecLoads.end(), i) != vecLoads.end()
               ? "l" + std::to_string(i) + "[lane]" : std::string();
  };
  os << "#pragma unroll\n    for (int lane = 0; lane < " << W << "; ++lane) {\n      [[maybe_unused]] const " << it
     << " c0 = q * " << W << " + lane;\n";
  std::vector<char> defined(s.nodes.size(), 0);
  np.emit(os, roots, defined, "      ");
  for (size_t k = 0; k < s.stores.size(); ++k)
    if (vectored(s.stores[k].buffer))
      os << "      s" << k << "[lane] = " << var(s.stores[k].node) << ";\n";
    else
      os << "      " << np.store(s.stores[k]) << "\n";
  os << "    }\n";
  for (size_t k = 0; k < s.stores.size(); ++k)
    if (vectored(s.stores[k].buffer))
      os << "    otc_vstore<" << W << ">(" << bufferName(s.stores[k].buffer)
         << plus(s.stores[k].offset) << ", q, s" << k << ");\n";
  os << "  }\n";
}

void elementwise(std::ostream &os, const Program &p, const Step &s, const char *it) {
  if (int w = vectorWidth(p, s))
    return vectorElementwise(os, p, s, it, w);
  LoopInfo info(s);
  NodePrinter np(p, s);
  std::vector<int> all;
  for (size_t d = 0; d < s.shape.size(); ++d)
    all.push_back((int)d);
  os << "  for (" << it << " i = blockIdx.x * (" << it << ")blockDim.x + threadIdx.x; i < "
     << info.rows << "; i += (" << it << ")gridDim.x * blockDim.x) {\n"
     << coords(s, all, "i", it, "    ");
  std::vector<char> defined(s.nodes.size(), 0);
  np.emit(os, info.storeRoots(false), defined, "    ");
  for (const Store &st : s.stores)
    os << "    " << np.store(st) << "\n";
  os << "  }\n";
}

/// A row step's vector width along its one reduced dim: 8 where an access
/// that walks the row is 16-bit, else 4; 0 where some access walks it
/// otherwise than contiguously from a start aligned to the width. A row
/// whose length the width does not divide (a padded [tokens, 50257] logits
/// row, Buffer::pitch) is read in vectors up to its last whole one, then
/// element by element.
int rowVectorWidth(const Program &p, const LoopInfo &info) {
  const Step &s = info.step;
  if (info.reducedDims.size() != 1)
    return 0;
  size_t r = size_t(info.reducedDims[0]);
  bool any16 = false;
  std::vector<std::pair<const std::vector<int64_t> *, int64_t>> walking; // strides, offset
  auto walks = [&](int buffer, const std::vector<int64_t> &strides, int64_t offset) {
    ElemType t = p.buffers[buffer].type;
    if (strides[r] != 1 || (t != ElemType::F32 && !is16(t)))
      return false;
    any16 = any16 || is16(t);
    walking.push_back({&strides, offset});
    return true;
  };
  for (const Node &n : s.nodes)
    if (n.op == Node::Load && n.strides[r] != 0 && !walks(n.buffer, n.strides, n.offset))
      return 0;
  for (size_t i = 0; i < s.stores.size(); ++i)
    if (info.innerStore[i] && !walks(s.stores[i].buffer, s.stores[i].strides, s.stores[i].offset))
      return 0;
  for (int w : {8, 4}) {
    if (w == 8 && !any16)
      continue;
    bool fits = info.cols >= w;
    for (auto [strides, offset] : walking) {
      fits = fits && offset % w == 0;
      for (size_t d = 0; d < strides->size(); ++d)
        fits = fits && (d == r || (*strides)[d] % w == 0);
    }
    if (fits)
      return w;
  }
  return 0;
}

/// The loads of a row step that walk its row, read W at a time.
std::vector<int> walkingLoads(const LoopInfo &info) {
  std::vector<int> loads;
  size_t r = size_t(info.reducedDims[0]);
  for (size_t i = 0; i < info.step.nodes.size(); ++i)
    if (info.step.nodes[i].op == Node::Load && info.step.nodes[i].strides[r] != 0)
      loads.push_back(int(i));
  return loads;
}

/// The loop over a row's elements, for emitRowPass: an element per lane and
/// stride, or (W > 1) a vector of W per lane and stride, whose walking
/// loads are read first (16-byte, or 8-byte, loads into l<i>[W]) and whose
/// elements then run in an unrolled loop. Unused loads are dead code to
/// nvcc.
struct ColumnLoop {
  std::string open, perElement, close = "    }\n";
  std::string first; // W > 1: the reduced coordinate at the vector's start
  /// W > 1 and the row not a whole number of vectors: the loop over the
  /// elements after the last whole vector, an element per lane.
  std::string tail;
};

ColumnLoop columnLoop(const LoopInfo &info, NodePrinter &np, const char *it, int w,
                      const std::string &group, std::vector<int> &loads) {
  const Step &s = info.step;
  ColumnLoop c;
  std::string I(it), W = num(w);
  if (w == 1) {
    c.open = "    for (" + I + " col = lane; col < " + num(info.cols) + "; col += " + group + ") {\n";
    c.perElement = coords(s, info.reducedDims, "col", it, "      ");
    return c;
  }
  loads = walkingLoads(info);
  np.loadOverride = [&loads](int i) {
    return std::find(loads.begin(), loads.end(), i) != loads.end()
               ? "l" + std::to_string(i) + "[e]" : std::string();
  };
  c.first = coords(s, info.reducedDims, "colv * " + W, it, "        ");
  std::string declare, loadAll = "      {\n" + c.first;
  for (int i : loads) {
    const Node &n = s.nodes[size_t(i)];
    declare += "      float l" + num(i) + "[" + W + "];\n";
    loadAll += "        otc_vload<" + W + ">(" + bufferName(n.buffer) + " + (" +
               np.index(n.strides, n.offset) + "), 0, l" + num(i) + ");\n";
  }
  c.open = "    for (" + I + " colv = lane; colv < " + num(info.cols / w) + "; colv += " + group +
           ") {\n" + declare + loadAll + "      }\n";
  c.perElement = "#pragma unroll\n      for (int e = 0; e < " + W + "; ++e) {\n      const " + I +
                 " col = colv * " + W + " + e;\n" +
                 coords(s, info.reducedDims, "col", it, "      ");
  c.close = "      }\n    }\n";
  if (int64_t whole = info.cols / w * w; whole < info.cols)
    c.tail = "    for (" + I + " col = " + num(whole) + " + lane; col < " + num(info.cols) +
             "; col += " + group + ") {\n" + coords(s, info.reducedDims, "col", it, "      ");
  return c;
}

// A row step: a warp or a block per row, each pass over the row followed by
// its reductions across the group, the per-row stores by lane 0, then the
// row-shaped stores in a last loop (W at a time where the row is read so).
void rows(std::ostream &os, const Program &p, const Step &s, const char *it) {
  LoopInfo info(s);
  NodePrinter np(p, s);
  int w = std::max(rowVectorWidth(p, info), 1);
  bool block = blockPerRow(info, w);
  std::string group = block ? "blockDim.x" : "32";
  if (block)
    os << "  __shared__ float red[32];\n  const int lane = threadIdx.x;\n"
       << "  for (" << it << " row = blockIdx.x; row < " << info.rows << "; row += gridDim.x) {\n";
  else
    os << "  const int lane = threadIdx.x & 31;\n  for (" << it << " row = blockIdx.x * "
       << kThreads / 32 << " + (threadIdx.x >> 5); row < " << info.rows << "; row += gridDim.x * "
       << kThreads / 32 << ") {\n";
  os << coords(s, info.kept, "row", it, "    ");
  std::vector<int> loads;
  ColumnLoop c = columnLoop(info, np, it, w, group, loads);
  NodePrinter scalar(p, s); // the tail's, which loads element by element
  RowTail tail{scalar, c.tail};
  std::vector<char> defined(s.nodes.size(), 0);
  for (int pass = 0; pass < info.passes; ++pass) {
    emitRowPass(os, np, info, pass, defined, c.open + c.perElement, c.close,
                c.tail.empty() ? nullptr : &tail);
    for (size_t k = 0; k < s.reductions.size(); ++k) {
      if (info.pass[k] != pass)
        continue;
      bool isMax = s.reductions[k].kind == Reduction::Max;
      std::string a = "a" + num(k);
      if (block)
        os << "    " << a << " = otc_block_reduce(" << a << ", " << (isMax ? "true" : "false") << ", red);\n";
      else
        os << "    " << a << " = " << (isMax ? "otc_warp_max(" : "otc_warp_sum(") << a << ");\n";
    }
  }
  np.emit(os, info.storeRoots(false), defined, "    ");
  bool anyOuter = false;
  for (size_t i = 0; i < s.stores.size(); ++i)
    anyOuter = anyOuter || !info.innerStore[i];
  if (anyOuter) {
    os << "    if (lane == 0) {\n";
    for (size_t i = 0; i < s.stores.size(); ++i)
      if (!info.innerStore[i])
        os << "      " << np.store(s.stores[i]) << "\n";
    os << "    }\n";
  }
  std::vector<int> innerRoots = info.storeRoots(true);
  if (w == 1) {
    emitInnerStores(os, np, info, defined, c.open + c.perElement);
  } else if (!innerRoots.empty()) {
    // Each row-shaped result into s<k>[W], then one vector store.
    np.emit(os, innerRoots, defined, "    ", info.outerAfter(info.passes));
    os << c.open;
    std::string W = num(w), storeAll = "      {\n" + c.first;
    for (size_t k = 0; k < s.stores.size(); ++k)
      if (info.innerStore[k]) {
        os << "      float s" << k << "[" << W << "];\n";
        storeAll += "        otc_vstore<" + W + ">(" + bufferName(s.stores[k].buffer) + " + (" +
                    np.index(s.stores[k].strides, s.stores[k].offset) + "), 0, s" +
                    num(int64_t(k)) + ");\n";
      }
    os << c.perElement;
    std::vector<char> scope = defined;
    np.emit(os, innerRoots, scope, "      ");
    for (size_t k = 0; k < s.stores.size(); ++k)
      if (info.innerStore[k])
        os << "      s" << k << "[e] = " << var(s.stores[k].node) << ";\n";
    os << "      }\n" << storeAll << "      }\n    }\n";
    if (!c.tail.empty())
      emitInnerStores(os, scalar, info, defined, c.tail);
  }
  os << "  }\n";
}

void columns(std::ostream &os, const Program &p, const Step &s, const char *it) {
  LoopInfo info(s);
  NodePrinter np(p, s);
  os << "  for (" << it << " o = blockIdx.x * (" << it << ")blockDim.x + threadIdx.x; o < "
     << info.rows << "; o += (" << it << ")gridDim.x * blockDim.x) {\n"
     << coords(s, info.kept, "o", it, "    ");
  std::vector<int> bodies;
  for (size_t k = 0; k < s.reductions.size(); ++k) {
    os << "    float a" << k << " = " << reductionInit(s.reductions[k].kind) << ";\n";
    bodies.push_back(s.reductions[k].node);
  }
  os << "    for (" << it << " col = 0; col < " << info.cols << "; ++col) {\n"
     << coords(s, info.reducedDims, "col", it, "      ");
  std::vector<char> scope(s.nodes.size(), 0);
  np.emit(os, bodies, scope, "      ");
  for (size_t k = 0; k < s.reductions.size(); ++k)
    os << "      " << reductionUpdate(s.reductions[k].kind, "a" + num(k), var(s.reductions[k].node)) << "\n";
  os << "    }\n";
  std::vector<char> epilogue(s.nodes.size(), 0);
  np.emit(os, info.storeRoots(false), epilogue, "    ");
  for (const Store &st : s.stores)
    os << "    " << np.store(st) << "\n";
  os << "  }\n";
}

int64_t gridOf(const Program &p, const Step &s) {
  LoopInfo info(s);
  int64_t blocks;
  if (int w = s.kind == Step::Elementwise ? vectorWidth(p, s) : 0)
    blocks = (info.rows / w + kThreads - 1) / kThreads;
  else if (s.kind == Step::Elementwise || isColumnReduce(s))
    blocks = (info.rows + kThreads - 1) / kThreads;
  else if (int w = rowVectorWidth(p, info); blockPerRow(info, w ? w : 1))
    blocks = info.rows;
  else
    blocks = (info.rows + kThreads / 32 - 1) / (kThreads / 32);
  return std::max<int64_t>(1, std::min<int64_t>(blocks, 65535));
}

const char *cudaOp(bool t) { return t ? "CUBLAS_OP_T" : "CUBLAS_OP_N"; }

const char *cudaType(ElemType t) {
  switch (t) {
  case ElemType::F16: return "CUDA_R_16F";
  case ElemType::BF16: return "CUDA_R_16BF";
  default: return "CUDA_R_32F";
  }
}

} // namespace

void emitCudaKernel(std::ostream &os, const Program &p, const Step &s, const std::string &name) {
  LoopInfo info(s);
  KernelParamNames params(info.buffers);
  const char *it = indexType(p, info);
  os << "__global__ void __launch_bounds__(" << kThreads << ") " << name << "("
     << kernelParams(p, info, true) << ") {\n";
  // The step's scalars from device memory (set before the body runs), so a
  // captured graph of the body replays with each micro-batch's.
  if (info.usesSeed)
    os << "  const float seed = otc_step_scalars.seed;\n";
  if (info.usesRng)
    os << "  const unsigned long long rng_seed = otc_step_scalars.rng_seed,\n"
          "                           rng_offset = otc_step_scalars.rng_offset;\n";
  if (s.kind == Step::Elementwise)
    elementwise(os, p, s, it);
  else if (isColumnReduce(s))
    columns(os, p, s, it);
  else
    rows(os, p, s, it);
  os << "}\n\n";
}

void emitCudaLaunch(std::ostream &os, const Program &p, const Step &s, const std::string &name) {
  os << "  " << name << "<<<" << gridOf(p, s) << ", " << kThreads << ", 0, stream>>>("
     << kernelArgs(LoopInfo(s), true) << ");\n  OTC_CUDA_CHECK(cudaGetLastError());\n";
}

// cuBLAS is column-major: row-major C = A B is column-major C^T = B^T A^T.
void emitCudaGemm(std::ostream &os, const Program &p, const Gemm &g) {
  int64_t lda = leadingDim(g, 'a'), ldb = leadingDim(g, 'b'), ldc = leadingDim(g, 'c');
  ElemType ta = p.buffers[g.a].type, tc = p.buffers[g.c].type;
  std::string beta = g.beta == Gemm::Beta::Zero ? "0.0f"
                     : g.beta == Gemm::Beta::One ? "1.0f" : "(first ? 0.0f : 1.0f)";
  os << "  {\n    const float alpha = " << floatLiteral(g.alpha) << ", beta = " << beta << ";\n";
  std::string A = bufferName(g.a), B = bufferName(g.b), C = bufferName(g.c);
  if (g.bias >= 0 || g.biasGrad >= 0 || g.gelu || g.dgelu) { // cuBLASLt, planned at first call
    const char *epi = g.dgelu ? "Dgelu"
                      : g.gelu ? (g.bias >= 0 ? "BiasGelu" : "Gelu")
                      : g.bias >= 0 ? "Bias"
                      : g.biasGradOf == Gemm::BiasGradOf::A ? "BiasGradA" : "BiasGradB";
    std::string none = "static_cast<" + std::string(storageType(tc)) + " *>(nullptr)";
    std::string vec = g.bias >= 0 ? bufferName(g.bias) : g.biasGrad >= 0 ? bufferName(g.biasGrad)
                                                                          : none;
    os << "    static otc_kernels::LtPlan plan;\n    otc_kernels::gemm_epilogue(plan, handle, "
          "stream, a->blas_workspace, OTC_CUDA_WORKSPACE_BYTES, "
       << (g.transA ? "true" : "false") << ", " << (g.transB ? "true" : "false") << ", " << g.m
       << ", " << g.n << ", " << g.k << ", alpha, " << A << ", " << B << ", beta, " << C
       << ", otc_kernels::GemmEpilogue::" << epi << ", " << vec << ", "
       << (g.gelu || g.dgelu ? bufferName(g.aux) : none) << leadingDimArgs(g) << ");\n  }\n";
    return;
  }
  if (ta == ElemType::F32 && tc == ElemType::F32)
    os << "    OTC_CUBLAS_CHECK(cublasSgemmStridedBatched(handle, " << cudaOp(g.transB) << ", "
       << cudaOp(g.transA) << ", " << g.n << ", " << g.m << ", " << g.k << ", &alpha, " << B
       << ", " << ldb << ", " << g.strideB << ", " << A << ", " << lda << ", " << g.strideA
       << ", &beta, " << C << ", " << ldc << ", " << g.strideC << ", " << g.batch << "));\n";
  else // 16-bit operands on tensor cores, summed in float
    os << "    OTC_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle, " << cudaOp(g.transB) << ", "
       << cudaOp(g.transA) << ", " << g.n << ", " << g.m << ", " << g.k << ", &alpha, " << B
       << ", " << cudaType(ta) << ", " << ldb << ", " << g.strideB << ", " << A << ", "
       << cudaType(ta) << ", " << lda << ", " << g.strideA << ", &beta, " << C << ", "
       << cudaType(tc) << ", " << ldc << ", " << g.strideC << ", " << g.batch
       << ", CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));\n";
  os << "  }\n";
}

} // namespace otc
