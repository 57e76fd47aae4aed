// Fused attention through cuDNN's flash attention (the cuDNN 9 graph API,
// through cudnn-frontend, pinned by scripts/install-deps.sh). Compiled once
// into the CUDA runtime, so a model's own compile does not parse
// cudnn-frontend. kernels/attention.h calls it for 16-bit attention without
// a mask (causal or not); a shape cuDNN does not support, a machine without
// libcudnn.so.9 (it is opened at the first call, so an executable does not
// need it to start), or OTC_ATTENTION=kernel in the environment runs the
// kernel library's own.
//
// Per shape the forward and backward graphs are built once, together: a
// shape runs both on cuDNN or both on the library's kernels, so the row
// statistics always have one layout (cuDNN's log-sum-exp, packed, in the
// first half of the [B, H, T, 2] buffer). The decision is the dense
// shape's: tensors with row pitches (slices of a packed projection) get
// graphs of their own given strides, and where cuDNN declines those, the
// dense graphs run on copies.
#include "otc/runtime/cuda_check.h"
#include "otc/runtime/cudnn_attention.h"
#include "CudnnLibrary.h"

#include <cudnn.h>
#include <cudnn_frontend.h>

#include <array>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace fe = cudnn_frontend;

namespace {

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kdO, kdQ, kdK, kdV };

using Graph = std::shared_ptr<fe::graph::Graph>;
using Pitches = std::array<long long, 6>; // q, k, v, dq, dk, dv; 0: dense

/// A shape's dense graphs: both, or neither where cuDNN declines it; and
/// per set of pitches, graphs given strides (null: declined, run on copies).
struct Plan {
  Graph forward, backward;
  std::map<Pitches, Graph> pitchedForward, pitchedBackward;
  int64_t workspace = 0;
  bool supported() const { return forward && backward; }
};

using Key = std::tuple<long long, long long, long long, long long, long long, long long, int, int,
                       float, int>;

Key keyOf(const otc_attention_shape &a) {
  return {a.b, a.h, a.hk, a.t, a.s, a.d, a.causal, a.dtype, a.scale, a.layout};
}

struct State {
  std::mutex mutex;
  cudnnHandle_t handle = nullptr;
  std::map<Key, Plan> plans;
  void *workspace = nullptr;
  int64_t workspaceBytes = 0;
  // Dense copies of pitched tensors, for graphs cuDNN declines with strides.
  void *scratch = nullptr;
  int64_t scratchBytes = 0;
  bool disabled = false, noted = false, notedCopies = false;
};

State &state() {
  static State s;
  return s;
}

/// Row-major strides of a contiguous tensor of `dims` [b, h, t, d]; with
/// `seqMajor`, stored as [b, t, h, d] (the dims cuDNN is given stay
/// [b, h, t, d]).
std::vector<int64_t> packed(const std::vector<int64_t> &dims, bool seqMajor = false) {
  std::vector<int64_t> stored = dims;
  if (seqMajor)
    std::swap(stored[1], stored[2]);
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = int(dims.size()) - 2; i >= 0; --i)
    strides[size_t(i)] = strides[size_t(i) + 1] * stored[size_t(i) + 1];
  if (seqMajor)
    std::swap(strides[1], strides[2]);
  return strides;
}

/// The strides of `dims` [b, h, t, d] stored [b, t, h, d] with (b, t)
/// positions `pitch` elements apart; packed() where pitch is 0.
std::vector<int64_t> strided(const std::vector<int64_t> &dims, bool seqMajor, long long pitch) {
  if (!seqMajor || pitch == 0)
    return packed(dims, seqMajor);
  return {dims[2] * pitch, dims[3], pitch, 1};
}

std::shared_ptr<fe::graph::Tensor_attributes>
tensor(fe::graph::Graph &g, const char *name, int64_t uid, std::vector<int64_t> dims,
       bool seqMajor = false, long long pitch = 0) {
  return g.tensor(
      fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(
          strided(dims, seqMajor, pitch)));
}

/// Marks a graph's result as an output with its uid.
void output(const std::shared_ptr<fe::graph::Tensor_attributes> &t, int64_t uid,
            const std::vector<int64_t> &dims, bool seqMajor = false, long long pitch = 0) {
  t->set_output(true).set_uid(uid).set_dim(dims).set_stride(strided(dims, seqMajor, pitch));
}

std::shared_ptr<fe::graph::Graph> newGraph(const otc_attention_shape &a) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(a.dtype == OTC_ATTENTION_BF16 ? fe::DataType_t::BFLOAT16
                                                    : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

/// Validates a graph and builds its plan; false where cuDNN does not
/// support it.
bool finish(fe::graph::Graph &g, cudnnHandle_t handle, int64_t &workspace) {
  int64_t bytes = 0;
  if (g.validate().is_bad() || g.build_operation_graph(handle).is_bad() ||
      g.create_execution_plans({fe::HeurMode_t::A}).is_bad())
    return false;
  g.deselect_workspace_greater_than(otc::workspaceLimit());
  if (g.check_support(handle).is_bad() || g.build_plans(handle).is_bad() ||
      g.get_workspace_size(bytes).is_bad())
    return false;
  workspace = std::max(workspace, bytes);
  return true;
}

/// The forward graph of `a` with pitches `pt` (q, k, v), or null where
/// cuDNN declines it.
Graph forwardGraph(const otc_attention_shape &a, const Pitches &pt, cudnnHandle_t handle,
                   int64_t &workspace) {
  std::vector<int64_t> qd = {a.b, a.h, a.t, a.d}, kd = {a.b, a.hk, a.s, a.d};
  std::vector<int64_t> sd = {a.b, a.h, a.t, 1};
  bool sm = a.layout != 0; // q, k, v, o and their gradients [b, t, h, d]
  auto g = newGraph(a);
  auto q = tensor(*g, "Q", kQ, qd, sm, pt[0]), k = tensor(*g, "K", kK, kd, sm, pt[1]),
       v = tensor(*g, "V", kV, kd, sm, pt[2]);
  auto options = fe::graph::SDPA_attributes()
                     .set_name("otc_attention")
                     .set_generate_stats(true)
                     .set_attn_scale(a.scale)
                     .set_causal_mask(a.causal != 0);
  auto [o, stats] = g->sdpa(q, k, v, options);
  output(o, kO, qd, sm);
  output(stats, kStats, sd);
  stats->set_data_type(fe::DataType_t::FLOAT);
  return finish(*g, handle, workspace) ? g : nullptr;
}

/// The backward graph of `a` with pitches `pt`, or null.
Graph backwardGraph(const otc_attention_shape &a, const Pitches &pt, cudnnHandle_t handle,
                    int64_t &workspace) {
  std::vector<int64_t> qd = {a.b, a.h, a.t, a.d}, kd = {a.b, a.hk, a.s, a.d};
  std::vector<int64_t> sd = {a.b, a.h, a.t, 1};
  bool sm = a.layout != 0;
  auto g = newGraph(a);
  auto q = tensor(*g, "Q", kQ, qd, sm, pt[0]), k = tensor(*g, "K", kK, kd, sm, pt[1]),
       v = tensor(*g, "V", kV, kd, sm, pt[2]);
  auto o = tensor(*g, "O", kO, qd, sm), dO = tensor(*g, "dO", kdO, qd, sm);
  auto stats = tensor(*g, "Stats", kStats, sd);
  stats->set_data_type(fe::DataType_t::FLOAT);
  // Deterministic: a run's bits must not depend on scheduling (resume
  // and recompute are checked bit for bit).
  auto options = fe::graph::SDPA_backward_attributes()
                     .set_name("otc_attention_backward")
                     .set_attn_scale(a.scale)
                     .set_causal_mask(a.causal != 0)
                     .set_deterministic_algorithm(true);
  auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, dO, stats, options);
  output(dq, kdQ, qd, sm, pt[3]);
  output(dk, kdK, kd, sm, pt[4]);
  output(dv, kdV, kd, sm, pt[5]);
  return finish(*g, handle, workspace) ? g : nullptr;
}

Plan buildGraphs(const otc_attention_shape &a, cudnnHandle_t handle) {
  Plan p;
  Pitches dense{};
  if ((p.forward = forwardGraph(a, dense, handle, p.workspace)))
    p.backward = backwardGraph(a, dense, handle, p.workspace);
  return p;
}

/// cudnn-frontend throws where a symbol is missing from the cuDNN found:
/// `build` then gives what it gives for none.
template <class F>
auto guarded(F build) -> decltype(build()) {
  try {
    return build();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "train: note: cuDNN attention: %s\n", e.what());
    return decltype(build())();
  }
}

/// The shape's plan, built on first use; null where the library's kernels
/// run instead.
Plan *planFor(const otc_attention_shape &a, cudaStream_t stream) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.handle && !s.disabled) {
    const char *env = std::getenv("OTC_ATTENTION");
    s.disabled = env && std::strcmp(env, "kernel") == 0;
    if (!s.disabled && !otc::startCudnn(s.handle, "attention runs otc's kernels"))
      s.disabled = true;
  }
  if (s.disabled)
    return nullptr;
  auto it = s.plans.find(keyOf(a));
  if (it == s.plans.end()) {
    it = s.plans.emplace(keyOf(a), guarded([&] { return buildGraphs(a, s.handle); })).first;
    if (!it->second.supported() && !s.noted) {
      s.noted = true;
      std::fprintf(stderr,
                   "train: note: cuDNN has no flash attention for [%lld, %lld, %lld, %lld] "
                   "(%lld key heads); it runs otc's kernels\n",
                   a.b, a.h, a.t, a.d, a.hk);
    }
    // Both directions' graphs go together (the stats' layout is theirs).
    if (it->second.supported() &&
        !otc::growWorkspace(s.workspace, s.workspaceBytes, it->second.workspace, "attention"))
      it->second = Plan();
  }
  if (!it->second.supported())
    return nullptr;
  if (fe::detail::set_stream(s.handle, stream) != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "train: error: cudnnSetStream failed\n");
    std::exit(1);
  }
  return &it->second;
}

/// Whether every pointer is 16-byte aligned, as cuDNN's kernels load them
/// (a slice of a packed projection starts where the slice does).
bool aligned(std::initializer_list<const void *> ptrs) {
  for (const void *p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16)
      return false;
  return true;
}

/// Whether any of the first `n` tensors (q, k, v, dq, dk, dv) has a pitch.
bool pitched(const otc_attention_shape &a, int n) {
  for (int i = 0; i < n; ++i)
    if (a.pitch[i])
      return true;
  return false;
}

/// The graph of `p`'s shape given a's pitches (the forward's: q, k and v),
/// built on first use; null where cuDNN declines them, and the dense graph
/// then runs on copies.
Graph pitchedGraph(Plan &p, const otc_attention_shape &a, bool forward) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Pitches pt{};
  std::copy(a.pitch, a.pitch + (forward ? 3 : 6), pt.begin());
  auto &graphs = forward ? p.pitchedForward : p.pitchedBackward;
  auto it = graphs.find(pt);
  if (it == graphs.end()) {
    int64_t bytes = 0;
    Graph g = guarded([&] {
      return forward ? forwardGraph(a, pt, s.handle, bytes) : backwardGraph(a, pt, s.handle, bytes);
    });
    if (g && !otc::growWorkspace(s.workspace, s.workspaceBytes, bytes, "attention"))
      g = nullptr; // the dense graph on copies, whose workspace is there
    if (!g && !s.notedCopies) {
      s.notedCopies = true;
      std::fprintf(stderr, "train: note: cuDNN declines attention on slices of a packed "
                           "projection; it runs on dense copies of them\n");
    }
    it = graphs.emplace(pt, g).first;
  }
  return it->second;
}

/// Tensor i's rows (b t or b s), their width and the distance between them
/// (q, k, v, dq, dk, dv; layout 1, 16-bit elements).
struct Rows {
  long long count, width, pitch;
};
Rows rowsOf(const otc_attention_shape &a, int i) { // cuDNN's v has k's head size
  bool query = i % 3 == 0;
  long long width = (query ? a.h : a.hk) * a.d;
  return {a.b * (query ? a.t : a.s), width, a.pitch[i] ? a.pitch[i] : width};
}

/// Copies of the pitched tensors among q, k, v (`in`) and dq, dk, dv
/// (`grads`, null in the forward) in dense scratch memory: `in` is copied
/// there and repointed; `grads` are repointed, for copyBack.
void denseCopies(const otc_attention_shape &a, const void *in[3], void **grads,
                 cudaStream_t stream) {
  State &s = state();
  int64_t bytes = 0;
  for (int i = 0; i < (grads ? 6 : 3); ++i)
    if (a.pitch[i])
      bytes += 2 * rowsOf(a, i).count * rowsOf(a, i).width;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    // Kept when outgrown: a captured CUDA graph may still use it.
    if (bytes > s.scratchBytes) {
      OTC_CUDA_CHECK(cudaMalloc(&s.scratch, size_t(bytes)));
      s.scratchBytes = bytes;
    }
  }
  char *at = static_cast<char *>(s.scratch);
  for (int i = 0; i < (grads ? 6 : 3); ++i) {
    if (!a.pitch[i])
      continue;
    Rows r = rowsOf(a, i);
    if (i < 3) {
      OTC_CUDA_CHECK(cudaMemcpy2DAsync(at, size_t(2 * r.width), in[i], size_t(2 * r.pitch),
                                       size_t(2 * r.width), size_t(r.count),
                                       cudaMemcpyDeviceToDevice, stream));
      in[i] = at;
    } else {
      grads[i - 3] = at;
    }
    at += 2 * r.count * r.width;
  }
}

/// Copies the dense gradients `dense` out to their pitched places `to`.
void copyBack(const otc_attention_shape &a, void *const dense[3], void *const to[3],
              cudaStream_t stream) {
  for (int i = 3; i < 6; ++i) {
    if (!a.pitch[i])
      continue;
    Rows r = rowsOf(a, i);
    OTC_CUDA_CHECK(cudaMemcpy2DAsync(to[i - 3], size_t(2 * r.pitch), dense[i - 3],
                                     size_t(2 * r.width), size_t(2 * r.width), size_t(r.count),
                                     cudaMemcpyDeviceToDevice, stream));
  }
}

void run(fe::graph::Graph &g, std::unordered_map<int64_t, void *> &pack) {
  otc::executeOrExit(g, state().handle, pack, state().workspace, "attention", "OTC_ATTENTION");
}

} // namespace

extern "C" int otc_cudnn_attention_forward(const otc_attention_shape *a, const void *q,
                                           const void *k, const void *v, void *out, float *stats,
                                           cudaStream_t stream) {
  Plan *p = planFor(*a, stream);
  if (!p)
    return 0;
  const void *in[3] = {q, k, v};
  Graph g = p->forward;
  if (pitched(*a, 3)) {
    Graph strided = aligned({q, k, v}) ? pitchedGraph(*p, *a, true) : nullptr;
    if (strided)
      g = strided;
    else
      denseCopies(*a, in, nullptr, stream);
  }
  std::unordered_map<int64_t, void *> pack = {{kQ, const_cast<void *>(in[0])},
                                              {kK, const_cast<void *>(in[1])},
                                              {kV, const_cast<void *>(in[2])},
                                              {kO, out},
                                              {kStats, stats}};
  run(*g, pack);
  return 1;
}

extern "C" int otc_cudnn_attention_backward(const otc_attention_shape *a, const void *dout,
                                            const void *q, const void *k, const void *v,
                                            const void *out, const float *stats, void *dq,
                                            void *dk, void *dv, cudaStream_t stream) {
  Plan *p = planFor(*a, stream);
  if (!p)
    return 0;
  const void *in[3] = {q, k, v};
  void *const to[3] = {dq, dk, dv};
  void *grads[3] = {dq, dk, dv};
  Graph g = p->backward;
  bool copies = false;
  if (pitched(*a, 6)) {
    Graph strided =
        aligned({q, k, v, dq, dk, dv}) ? pitchedGraph(*p, *a, false) : nullptr;
    if (strided)
      g = strided;
    else
      denseCopies(*a, in, grads, stream), copies = true;
  }
  std::unordered_map<int64_t, void *> pack = {
      {kQ, const_cast<void *>(in[0])},  {kK, const_cast<void *>(in[1])},
      {kV, const_cast<void *>(in[2])},  {kO, const_cast<void *>(out)},
      {kdO, const_cast<void *>(dout)},  {kStats, const_cast<float *>(stats)},
      {kdQ, grads[0]},                  {kdK, grads[1]},
      {kdV, grads[2]}};
  run(*g, pack);
  if (copies)
    copyBack(*a, grads, to, stream);
  return 1;
}
