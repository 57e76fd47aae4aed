// Convolutions through cuDNN (the cuDNN 9 graph API, through the pinned
// cudnn-frontend, as CudnnAttention.cpp): kernels/conv.h calls them for
// 16-bit otc.conv, otc.conv_data_grad and otc.conv_filter_grad. Per shape
// and direction one graph is built at the first call, among engines whose
// results do not depend on scheduling (resume and recompute are checked bit
// for bit) and that sum in float32 without transforms; where cuDNN declines it, or is missing, or OTC_CONV=kernel is
// set, the kernel library's direct kernels run.
#include "otc/runtime/cuda_check.h"
#include "otc/runtime/cudnn_conv.h"
#include "CudnnLibrary.h"

#include <cudnn.h>
#include <cudnn_frontend.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace fe = cudnn_frontend;

namespace {

enum Uid : int64_t { kX = 1, kW, kY };
enum Direction { kForward, kData, kFilter };

using Graph = std::shared_ptr<fe::graph::Graph>;
using Key = std::vector<long long>; // the shape's fields, the dtype, the direction

struct State {
  std::mutex mutex;
  cudnnHandle_t handle = nullptr;
  std::map<Key, Graph> graphs; // null: declined, the direct kernels run
  void *workspace = nullptr;
  int64_t workspaceBytes = 0;
  bool disabled = false, started = false, noted = false;
};

State &state() {
  static State s;
  return s;
}

Key keyOf(const otc_conv_shape &s, Direction d) {
  return {s.n,  s.c,  s.h,  s.w,  s.m,  s.g,  s.kh, s.kw, s.oh, s.ow,
          s.sh, s.sw, s.pt, s.pl, s.pb, s.pr, s.dh, s.dw, s.dtype, d};
}

std::shared_ptr<fe::graph::Tensor_attributes> tensor(fe::graph::Graph &g, const char *name,
                                                     int64_t uid, std::vector<int64_t> dims) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim(dims)
                      .set_stride({dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1}));
}

void output(const std::shared_ptr<fe::graph::Tensor_attributes> &t, int64_t uid,
            std::vector<int64_t> dims) {
  t->set_output(true).set_uid(uid).set_dim(dims).set_stride(
      {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1});
}

/// The graph of direction `d` for shape `s`, or null where cuDNN declines
/// it. x, w and y keep their roles in every direction (uids kX, kW, kY).
Graph build(const otc_conv_shape &s, Direction d, cudnnHandle_t handle, int64_t &workspace) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(s.dtype == OTC_CONV_BF16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  std::vector<int64_t> xd = {s.n, s.c, s.h, s.w}, wd = {s.m, s.c / s.g, s.kh, s.kw},
                       yd = {s.n, s.m, s.oh, s.ow};
  // The window's attributes, the same in each direction.
  auto window = [&](auto attributes, const char *name) {
    attributes.set_name(name)
        .set_pre_padding({s.pt, s.pl})
        .set_post_padding({s.pb, s.pr})
        .set_stride({s.sh, s.sw})
        .set_dilation({s.dh, s.dw});
    return attributes;
  };
  if (d == kForward)
    output(g->conv_fprop(tensor(*g, "x", kX, xd), tensor(*g, "w", kW, wd),
                         window(fe::graph::Conv_fprop_attributes(), "otc_conv")),
           kY, yd);
  else if (d == kData)
    output(g->conv_dgrad(tensor(*g, "dy", kY, yd), tensor(*g, "w", kW, wd),
                         window(fe::graph::Conv_dgrad_attributes(), "otc_conv_data_grad")),
           kX, xd);
  else
    output(g->conv_wgrad(tensor(*g, "dy", kY, yd), tensor(*g, "x", kX, xd),
                         window(fe::graph::Conv_wgrad_attributes(), "otc_conv_filter_grad")),
           kW, wd);
  if (g->validate().is_bad() || g->build_operation_graph(handle).is_bad() ||
      g->create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}).is_bad())
    return nullptr;
  // Sums in float32 over the taps, as the direct kernels and the bounds the
  // checks derive: no 16-bit reductions, no FFT or Winograd transforms.
  using Note = fe::NumericalNote_t;
  g->deselect_numeric_notes({Note::NONDETERMINISTIC, Note::REDUCED_PRECISION_REDUCTION, Note::FFT,
                             Note::WINOGRAD, Note::WINOGRAD_TILE_4x4, Note::WINOGRAD_TILE_6x6,
                             Note::WINOGRAD_TILE_13x13});
  g->deselect_workspace_greater_than(otc::workspaceLimit());
  int64_t bytes = 0;
  if (g->check_support(handle).is_bad() || g->build_plans(handle).is_bad() ||
      g->get_workspace_size(bytes).is_bad())
    return nullptr;
  workspace = bytes;
  return g;
}

/// The graph of (s, d), built on first use; null where the direct kernels
/// run. Leaves the handle on `stream`.
Graph graphFor(const otc_conv_shape &s, Direction d, cudaStream_t stream) {
  State &st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  if (!st.started && !st.disabled) {
    const char *env = std::getenv("OTC_CONV");
    st.disabled = (env && std::strcmp(env, "kernel") == 0) ||
                  !otc::startCudnn(st.handle, "convolutions run otc's direct kernels");
    st.started = !st.disabled;
  }
  if (st.disabled)
    return nullptr;
  auto it = st.graphs.find(keyOf(s, d));
  if (it == st.graphs.end()) {
    int64_t bytes = 0;
    Graph g;
    try {
      g = build(s, d, st.handle, bytes);
    } catch (const std::exception &e) { // a symbol missing from the cuDNN found
      std::fprintf(stderr, "train: note: cuDNN convolution: %s\n", e.what());
    }
    if (!g && !st.noted) {
      st.noted = true;
      std::fprintf(stderr,
                   "train: note: cuDNN declines the %s of a convolution of [%lld, %lld, %lld, "
                   "%lld] by [%lld, %lld, %lld, %lld]; it runs otc's direct kernels\n",
                   d == kForward ? "forward" : d == kData ? "input gradient" : "filter gradient",
                   s.n, s.c, s.h, s.w, s.m, s.c / s.g, s.kh, s.kw);
    }
    if (g && !otc::growWorkspace(st.workspace, st.workspaceBytes, bytes, "convolution"))
      g = nullptr;
    it = st.graphs.emplace(keyOf(s, d), g).first;
  }
  if (it->second && fe::detail::set_stream(st.handle, stream) != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "train: error: cudnnSetStream failed\n");
    std::exit(1);
  }
  return it->second;
}

int run(const otc_conv_shape &s, Direction d, const void *x, const void *w, const void *y,
        cudaStream_t stream) {
  // cuDNN's tensors are 16-byte aligned (an arena buffer is 64); a view
  // that is not runs the direct kernels rather than fail to execute.
  for (const void *p : {x, w, y})
    if (reinterpret_cast<uintptr_t>(p) % 16)
      return 0;
  Graph g = graphFor(s, d, stream);
  if (!g)
    return 0;
  std::unordered_map<int64_t, void *> pack = {{kX, const_cast<void *>(x)},
                                              {kW, const_cast<void *>(w)},
                                              {kY, const_cast<void *>(y)}};
  otc::executeOrExit(*g, state().handle, pack, state().workspace, "convolution", "OTC_CONV");
  return 1;
}

} // namespace

extern "C" int otc_cudnn_conv_forward(const otc_conv_shape *s, const void *x, const void *w,
                                      void *y, cudaStream_t stream) {
  return run(*s, kForward, x, w, y, stream);
}

extern "C" int otc_cudnn_conv_data_grad(const otc_conv_shape *s, const void *dy, const void *w,
                                        void *dx, cudaStream_t stream) {
  return run(*s, kData, dx, w, dy, stream);
}

extern "C" int otc_cudnn_conv_filter_grad(const otc_conv_shape *s, const void *dy, const void *x,
                                          void *dw, cudaStream_t stream) {
  return run(*s, kFilter, x, dw, dy, stream);
}
