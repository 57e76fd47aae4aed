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
// first half of the [B, H, T, 2] buffer).
#include "otc/runtime/cuda_check.h"
#include "otc/runtime/cudnn_attention.h"

#include <cudnn.h>
#include <cudnn_frontend.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace fe = cudnn_frontend;

// cudnn-frontend calls cuDNN through this library handle
// (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING).
namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
}

namespace {

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kdO, kdQ, kdK, kdV };

/// A shape's graphs: both, or neither where cuDNN declines it.
struct Plan {
  std::shared_ptr<fe::graph::Graph> forward, backward;
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
  bool disabled = false, noted = false;
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

std::shared_ptr<fe::graph::Tensor_attributes>
tensor(fe::graph::Graph &g, const char *name, int64_t uid, std::vector<int64_t> dims,
       bool seqMajor = false) {
  return g.tensor(
      fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(
          packed(dims, seqMajor)));
}

/// Marks a graph's result as an output with its uid, contiguous.
void output(const std::shared_ptr<fe::graph::Tensor_attributes> &t, int64_t uid,
            const std::vector<int64_t> &dims, bool seqMajor = false) {
  t->set_output(true).set_uid(uid).set_dim(dims).set_stride(packed(dims, seqMajor));
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
      g.create_execution_plans({fe::HeurMode_t::A}).is_bad() ||
      g.check_support(handle).is_bad() || g.build_plans(handle).is_bad() ||
      g.get_workspace_size(bytes).is_bad())
    return false;
  workspace = std::max(workspace, bytes);
  return true;
}

Plan buildGraphs(const otc_attention_shape &a, cudnnHandle_t handle) {
  Plan p;
  std::vector<int64_t> qd = {a.b, a.h, a.t, a.d}, kd = {a.b, a.hk, a.s, a.d};
  std::vector<int64_t> sd = {a.b, a.h, a.t, 1};
  bool sm = a.layout != 0; // q, k, v, o and their gradients [b, t, h, d]
  {
    auto g = newGraph(a);
    auto q = tensor(*g, "Q", kQ, qd, sm), k = tensor(*g, "K", kK, kd, sm),
         v = tensor(*g, "V", kV, kd, sm);
    auto options = fe::graph::SDPA_attributes()
                       .set_name("otc_attention")
                       .set_generate_stats(true)
                       .set_attn_scale(a.scale)
                       .set_causal_mask(a.causal != 0);
    auto [o, stats] = g->sdpa(q, k, v, options);
    output(o, kO, qd, sm);
    output(stats, kStats, sd);
    stats->set_data_type(fe::DataType_t::FLOAT);
    if (!finish(*g, handle, p.workspace))
      return p;
    p.forward = g;
  }
  {
    auto g = newGraph(a);
    auto q = tensor(*g, "Q", kQ, qd, sm), k = tensor(*g, "K", kK, kd, sm),
         v = tensor(*g, "V", kV, kd, sm);
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
    output(dq, kdQ, qd, sm);
    output(dk, kdK, kd, sm);
    output(dv, kdV, kd, sm);
    if (finish(*g, handle, p.workspace))
      p.backward = g;
  }
  return p;
}

/// cudnn-frontend throws where a symbol is missing from the cuDNN found.
Plan build(const otc_attention_shape &a, cudnnHandle_t handle) {
  try {
    return buildGraphs(a, handle);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "train: note: cuDNN attention: %s\n", e.what());
    return Plan();
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
    if (!s.disabled) {
      fe::cudnn_dlhandle = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_GLOBAL);
      bool started = false;
      try {
        started = fe::cudnn_dlhandle && fe::detail::create_handle(&s.handle) == CUDNN_STATUS_SUCCESS;
      } catch (const std::exception &) {
      }
      if (!started) {
        std::fprintf(stderr, "train: note: cuDNN (libcudnn.so.9) did not start%s%s; attention "
                             "runs otc's kernels\n",
                     fe::cudnn_dlhandle ? "" : ": ", fe::cudnn_dlhandle ? "" : dlerror());
        s.disabled = true;
      }
    }
  }
  if (s.disabled)
    return nullptr;
  auto it = s.plans.find(keyOf(a));
  if (it == s.plans.end()) {
    it = s.plans.emplace(keyOf(a), build(a, s.handle)).first;
    if (!it->second.supported() && !s.noted) {
      s.noted = true;
      std::fprintf(stderr,
                   "train: note: cuDNN has no flash attention for [%lld, %lld, %lld, %lld] "
                   "(%lld key heads); it runs otc's kernels\n",
                   a.b, a.h, a.t, a.d, a.hk);
    }
    if (it->second.supported() && it->second.workspace > s.workspaceBytes) {
      // Once per shape, at the first step: the only synchronising call.
      OTC_CUDA_CHECK(cudaStreamSynchronize(stream));
      OTC_CUDA_CHECK(cudaFree(s.workspace));
      s.workspace = nullptr;
      OTC_CUDA_CHECK(cudaMalloc(&s.workspace, size_t(it->second.workspace)));
      s.workspaceBytes = it->second.workspace;
    }
  }
  if (!it->second.supported())
    return nullptr;
  if (fe::detail::set_stream(s.handle, stream) != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "train: error: cudnnSetStream failed\n");
    std::exit(1);
  }
  return &it->second;
}

void run(fe::graph::Graph &g, std::unordered_map<int64_t, void *> &pack) {
  State &s = state();
  std::string why;
  try {
    fe::error_t e = g.execute(s.handle, pack, s.workspace);
    if (e.is_good())
      return;
    why = e.get_message();
  } catch (const std::exception &e) {
    why = e.what();
  }
  std::fprintf(stderr, "train: error: cuDNN attention: %s (OTC_ATTENTION=kernel runs otc's own)\n",
               why.c_str());
  std::exit(1);
}

} // namespace

extern "C" int otc_cudnn_attention_forward(const otc_attention_shape *a, const void *q,
                                           const void *k, const void *v, void *out, float *stats,
                                           cudaStream_t stream) {
  Plan *p = planFor(*a, stream);
  if (!p)
    return 0;
  std::unordered_map<int64_t, void *> pack = {{kQ, const_cast<void *>(q)},
                                              {kK, const_cast<void *>(k)},
                                              {kV, const_cast<void *>(v)},
                                              {kO, out},
                                              {kStats, stats}};
  run(*p->forward, pack);
  return 1;
}

extern "C" int otc_cudnn_attention_backward(const otc_attention_shape *a, const void *dout,
                                            const void *q, const void *k, const void *v,
                                            const void *out, const float *stats, void *dq,
                                            void *dk, void *dv, cudaStream_t stream) {
  Plan *p = planFor(*a, stream);
  if (!p)
    return 0;
  std::unordered_map<int64_t, void *> pack = {
      {kQ, const_cast<void *>(q)},      {kK, const_cast<void *>(k)},
      {kV, const_cast<void *>(v)},      {kO, const_cast<void *>(out)},
      {kdO, const_cast<void *>(dout)},  {kStats, const_cast<float *>(stats)},
      {kdQ, dq},                        {kdK, dk},
      {kdV, dv}};
  run(*p->backward, pack);
  return 1;
}
